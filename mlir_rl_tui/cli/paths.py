"""The files and folders a command writes: checked before any work (`output_file`, `library_file`, `trace_file`,
`folder`, `dataset_folder`), and written in one step (`replacing`, `write_text`: a failed write leaves the file as it
was)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator

from mlir_rl_tui.cli.output import CliError, user_error


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` in one step (`replacing`): a failed write leaves the file as it was."""
    with replacing(path) as tmp, open(tmp, "w") as f:
        f.write(text)


def same_file(a: str, b: str) -> bool:
    """Whether the paths name one file: the same inode when both exist, else the same resolved path."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def library_file(path: str, inputs: Iterable[str] = ()) -> str:
    """`output_file` for a library `build`/`tune` writes: PATH and PATH.json, both regular files (a device
    such as /dev/null is never replaced)."""
    for p in (path, path + ".json"):
        output_file(p, inputs, regular=True)
    return path


def folder(option: str, path: str, must_exist: bool = False, why: str = "") -> str:
    """Check a folder the user named with `option` (`--out DIR`, `--cache DIR`): a CliError (one line) when
    `path` is a file, or with `must_exist` when there is nothing there; `why` says what the folder is for.
    Returns `path`."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CliError(f"{option} {path}: is a file, not a folder" + (f" ({why})" if why else ""))
    if must_exist and not os.path.exists(path):
        raise CliError(f"{option} {path}: no such folder" + (f" ({why})" if why else ""))
    return path


def output_file(path: str, inputs: Iterable[str] = (), regular: bool = False) -> str:
    """Check a file the user named for a command to write, before the command does any work: a CliError
    (one line) when `path` is a folder, when its folder does not exist (or is a file), or when it is the
    same file as one of `inputs` (by any name: links, `./`, `..`). Returns `path`."""
    if os.path.isdir(path):
        raise CliError(f"{path}: is a folder; give the name of a file to write")
    if regular and os.path.exists(path) and not os.path.isfile(path):
        raise CliError(f"{path}: not a regular file (a device or a pipe); this command writes a file it reads back")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        what = "is a file, not a folder" if os.path.exists(folder) else "no such folder"
        raise CliError(f"{path}: {folder}: {what} (make the folder first, or give another path)")
    for other in inputs:
        if other and same_file(path, other):
            raise CliError(f"{path}: the same file as {other}, which this command reads; give another path to write")
    from mlir_rl_tui.engine.store.cache import writable

    if os.path.isfile(path) and not writable(path):  # renaming over it would succeed: its mode says no
        raise CliError(f"{path}: read-only; make it writable, or give another path")
    return path


def trace_file(path: str, inputs: Iterable[str] = ()) -> str:
    """`output_file` for a trace a command appends to (`--trace`, `--record`): also a CliError when the file
    exists and is not a trace (engine.rl.trace.check_appendable), so nothing is appended to another file."""
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.rl.trace import check_appendable

    output_file(path, inputs)
    try:
        check_appendable(path)
    except EngineError as e:
        raise CliError(str(e)) from None
    return path


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """engine.store.atomic.replacing for a command: a temporary file beside `path` that takes its place (synced, in
    one step) when the block ends without an exception, else is removed, leaving `path` as it was. An OSError
    inside becomes a one-line CliError, and a user error (CliError, EngineError) whose message names the
    temporary file names `path` instead."""
    from mlir_rl_tui.engine.store import atomic

    tmp = path
    try:
        with atomic.replacing(path) as tmp:
            yield tmp
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None
    except Exception as e:
        if user_error(e) and tmp != path and tmp in str(e):
            raise CliError(str(e).replace(tmp, path)) from None
        raise


def dataset_folder(out: str, force: bool) -> None:
    """`generate --out`: a CliError (one line) for a file, and, unless `force`, for a folder that already
    holds a data set or .mlir programs (a manifest.json and same-named programs would be overwritten)."""
    folder("--out", out)
    manifest = os.path.join(out, "manifest.json")
    if force or not os.path.isdir(out):
        return
    if os.path.exists(manifest):
        raise CliError(f"--out {out}: holds a data set already ({manifest}); give another --out, or --force "
                       "overwrites it")
    if any(f.endswith(".mlir") for f in os.listdir(out)):
        raise CliError(f"--out {out}: holds .mlir programs, which same-named generated ones would overwrite; "
                       "give another --out, or --force writes into it")
