"""Append-only JSON lines: the one writer and reader of every file that grows a record at a time (traces,
`evaluate --rows` files, a training run's targets and runs), and the one list of the project's file formats.

A record is one line, written in one `write` and fsynced. A writer killed mid-write leaves at most its last
line cut: the next writer cuts it off before it appends (`cut_tail`), and every reader drops it (`read`), so a
file holds whole records only, whatever was killed when."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field

from mlir_rl_tui.engine.store import bounded

#: The "format" of each self-describing file the project writes: the first field of its header (a JSON file's
#: or a JSON-lines file's first record). A reader refuses a file whose header names another format.
CHECKPOINT = "mlir-rl-tui checkpoint"
MEASUREMENTS = "mlir-rl-tui measurements 1"
TUNING_RECORDS = "mlir-rl-tui tuning records 1"
EVALUATE_ROWS = "mlir-rl-tui evaluate rows 1"

#: A line longer than this many characters is not a record (read as a bad line, never held whole).
MAX_LINE_CHARS = 1 << 22


def cut_tail(fd: int) -> int:
    """Cut the file open as `fd` after its last newline when it does not end with one (a writer was killed
    mid-line); the bytes dropped."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return 0
    end, keep = size, 0
    while end > 0:
        start = max(0, end - (1 << 16))
        i = os.pread(fd, end - start, start).rfind(b"\n")
        if i >= 0:
            keep = start + i + 1
            break
        end = start
    os.ftruncate(fd, keep)
    return size - keep


def write_records(fd: int, records: list[dict]) -> int:
    """Append the records to `fd` (opened with O_APPEND) in one write and fsync; the bytes written."""
    data = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    try:
        os.fsync(fd)
    except OSError:  # a device or a pipe (a trace to /dev/null) cannot be synced; a file always can
        if stat.S_ISREG(os.fstat(fd).st_mode):
            raise
    return len(data)


def append(path: str, *records: dict) -> int:
    """Append whole records to the file at `path` (made when missing), a cut last line cut off first; the
    bytes of a cut line dropped. Callers that share a file across processes hold a lock around it."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        dropped = cut_tail(fd)
        write_records(fd, list(records))
    finally:
        os.close(fd)
    return dropped


def rewrite(path: str, records: list[dict]) -> None:
    """Replace the file's contents with these records (a header and rows), fsynced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_records(fd, records)
    finally:
        os.close(fd)


@dataclass
class Lines:
    """A JSON-lines file as read: `records` holds each whole line's value in order (None where a line is not
    JSON or too long), `numbers` their line numbers (from 1); `cut` says the last line was cut off mid-write
    (dropped)."""

    records: list = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    cut: bool = False

    @property
    def bad(self) -> int:
        return sum(r is None for r in self.records)


def read(path: str, limit: int = MAX_LINE_CHARS) -> Lines:
    """The records of a JSON-lines file, streamed (a line is held only up to `limit` characters); empty when
    the file does not exist. Blank lines are skipped; OSError and UnicodeDecodeError pass to the caller."""
    out = Lines()
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for number, ln in enumerate(bounded.lines(f, limit), start=1):
            if ln is not None and not ln.endswith("\n"):  # the last line, cut off mid-write
                out.cut = bool(ln.strip())
                break
            if ln is not None and not ln.strip():
                continue
            try:
                value = None if ln is None else json.loads(ln)
            except ValueError:
                value = None
            out.records.append(value)
            out.numbers.append(number)
    return out


def header(fmt: str, **fields) -> dict:
    """The first record of a file of format `fmt`."""
    return {"format": fmt, **fields}


def is_header(obj: object, fmt: str) -> bool:
    """Whether `obj` is the header of a file of format `fmt`."""
    return isinstance(obj, dict) and obj.get("format") == fmt
