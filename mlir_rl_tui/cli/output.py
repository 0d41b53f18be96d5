"""A command's output: one-line errors (`CliError`, `fail`), notes on stderr, the `--json` answer, speedups."""

from __future__ import annotations

import json
import sys


class CliError(Exception):
    """An error the user can fix, printed as one line on stderr (exit status 2)."""


def user_error(e: BaseException) -> bool:
    """Whether `e` is an error the user can fix (CliError, the engine's EngineError): one line, status 2."""
    errors = sys.modules.get("mlir_rl_tui.engine.errors")  # not imported: the error cannot be one of the engine's
    return isinstance(e, CliError) or (errors is not None and isinstance(e, errors.EngineError))


def fail(msg: str, code: int = 2) -> int:
    print(f"mlir-rl-tui: error: {' '.join(str(msg).split())}", file=sys.stderr)
    return code


def note(msg: str) -> None:
    print(f"mlir-rl-tui: note: {msg}", file=sys.stderr, flush=True)


def emit(obj: dict) -> None:
    """The `--json` answer: one JSON object on stdout."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fmt_speedup(s) -> str:
    return f"{s:.2f}x" if isinstance(s, int | float) else "-"
