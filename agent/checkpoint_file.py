"""Whether a file can be a checkpoint torch reads, judged from its zip directory alone (torch not imported).

`torch.save` writes a zip whose entries share one top folder, holding `data.pkl` and a `version` record
(`.data/version` in newer files). The command line checks `--policy` and `--model` with `problem` while it
parses its arguments (the app does before it starts), and agent.checkpoint reads no file before it.
"""

from __future__ import annotations

import os
import zipfile


def problem(path: str) -> str | None:
    """Why `path` is not a checkpoint file, as the text to follow "PATH: " (the directory, a file that is not
    a zip, a zip without the records torch writes, a file that cannot be read); None when it may be one."""
    if os.path.isdir(path):
        return "a directory, not a checkpoint file"
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except zipfile.BadZipFile:
        return "not a mlir-rl-tui checkpoint (not a torch zip file)"
    except OSError as e:
        return f"cannot read the checkpoint ({e.strerror or e})"
    top = names[0].split("/", 1)[0] if names else ""
    if f"{top}/data.pkl" not in names or not {f"{top}/version", f"{top}/.data/version"} & set(names):
        return "not a PyTorch checkpoint (a zip without the records torch writes: data.pkl, version)"
    return None
