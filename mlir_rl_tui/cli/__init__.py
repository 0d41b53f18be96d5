"""The command line's helpers that are not commands (`mlir_rl_tui.commands` loads commands by name; nothing
here is one): one-line errors and `--json` output (`output`), argument types and the options commands share
(`options`), checks of the files and folders a command writes (`paths`), the engine and the tuning database
of a command's options (`engine`), the parser and its help formatter (`parser`), and the text of an
evaluation's and a tuning's results (`evaluate_report`, `tune_report`).

Nothing heavy at import time: the engine (MLIR), torch and Textual are imported inside the functions.
"""
