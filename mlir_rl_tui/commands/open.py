"""`mlir-rl-tui FILE`: open the app (mlir_rl_tui.app.run_app) on a program loaded here first."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.options import add_entry, add_program, checkpoint
from mlir_rl_tui.cli.output import CliError
from mlir_rl_tui.cli.paths import trace_file

DESCRIPTION = """The file is parsed in the loader process while this one imports Textual: a bad file fails
with one line before the screen is taken. With several candidate functions and no --entry, a picker asks."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_program(p)
    add_entry(p)
    p.add_argument("--policy", metavar="P", type=checkpoint("policy checkpoint"),
                   help="policy checkpoint for suggestions (default: the shipped one)")
    p.add_argument("--record", metavar="TRACE", type=trace_file,
                   help="append a trace of every step to this JSONL file (its folder must exist)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine.errors import EntryError
    from mlir_rl_tui.engine.ir.loader import PendingLoad, load_file
    from mlir_rl_tui.engine.ir.program import measurement_note
    from mlir_rl_tui.progress import ProgressLine

    # the loader parses while this process imports Textual; a bad file fails before the screen is taken
    pending = PendingLoad(args.file, args.entry)
    try:
        from mlir_rl_tui.app import EntryChoice, run_app
    except ImportError as e:
        raise CliError(f"the app is not available: {e}") from None
    choice = None
    with ProgressLine() as line:
        try:
            prog = pending.result(on_wait=lambda s: line.update(f"loading {args.file}: parsing"))
        except EntryError as e:  # several candidates and no --entry: the app asks
            if args.entry is not None:
                raise
            choice = EntryChoice(args.file, e.candidates, str(e), lambda name: load_file(args.file, name),
                                 lambda chosen: measurement_note(chosen, args.file))
    if choice is not None:
        return run_app(choice, policy=args.policy, record=args.record)
    note = measurement_note(prog, args.file)  # refuses a program too slow to measure
    return run_app(prog, policy=args.policy, record=args.record, note=note)
