"""One writer for every output file: written beside its name, synced, renamed over it (and the sha256 that
ties a written library to its description).

A reader (or the user, after a kill or a full disk) sees the old file or the new one, never a cut one.
`mlir-rl-tui`'s commands (`mlir_rl_tui.cli.paths.replacing`), the app's export, `import` and the library build
all write through here."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator


@contextlib.contextmanager
def replacing(path: str) -> Iterator[str]:
    """A temporary file name beside `path` for the block to write. When the block ends without an exception
    the file is synced and takes `path`'s place in one step (os.replace, with `path`'s permissions; a link is
    followed: its target is replaced); otherwise it is removed and `path` is left as it was. A `path` that
    exists and is not a regular file (a device such as /dev/null, a pipe) is written directly."""
    direct = os.path.exists(path) and not os.path.isfile(path)
    final = os.path.realpath(path) if os.path.islink(path) else path
    folder, base = os.path.split(final)
    tmp = path if direct else os.path.join(folder, f".{base}.{os.getpid()}.tmp")
    try:
        yield tmp
        if not direct:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            if os.path.exists(final):  # the file keeps its permissions
                shutil.copymode(final, tmp)
            os.replace(tmp, final)
    finally:
        if not direct:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def write_text(path: str, text: str) -> None:
    """`text` into `path` in one step (`replacing`)."""
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)


def file_sha256(path: str) -> str:
    """The sha256 of the file at `path`, read in pieces (a library's: its description states it, and
    runtime.load checks it)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
