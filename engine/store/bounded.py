"""Reading files of unknown origin within a memory bound: lines are read up to a length, never whole.

Every line-oriented reader of a file a user may be handed (measurement files, tuning database exports,
traces) takes its lines from `lines`, so a 4 GiB line (or a gzip file that inflates to one) costs at most
`limit` characters of memory before it is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

_SKIP = 1 << 20  # the rest of an over-long line is read and dropped in pieces of this many characters


def lines(f: IO, limit: int) -> Iterator[str | None]:
    """The lines of `f` (with their newline), each read with at most `limit` characters held; a longer line
    is read to its end in pieces, dropped, and given as None (the caller refuses or counts it)."""
    while True:
        line = f.readline(limit + 1)
        if not line:
            return
        newline = "\n" if isinstance(line, str) else b"\n"
        if len(line) > limit and not line.endswith(newline):
            while True:
                rest = f.readline(_SKIP)
                if not rest or rest.endswith(newline):
                    break
            yield None
            continue
        yield line
