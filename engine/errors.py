"""Errors a user can cause, each explained in one line."""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    """One warning line on stderr, for what the engine repaired or worked around and went on (a damaged
    cache, a cut trace line); while the app runs, its print capture takes it."""
    print(f"mlir-rl-tui: warning: {' '.join(str(message).split())}", file=sys.stderr, flush=True)


class EngineError(Exception):
    """An input or request the engine cannot handle; str() is one line naming the cause."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class LoadError(EngineError):
    """The program text cannot be loaded (parse error, dynamic shapes, no linalg op, ...)."""


class ScheduleError(EngineError):
    """Malformed schedule text or an action that is not legal for the op (masked)."""


class EntryError(LoadError):
    """The module has several functions that could be the entry; `candidates` names them (in textual
    order), for `--entry NAME` or the app's picker."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = list(candidates)
