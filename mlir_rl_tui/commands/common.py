"""What the commands share: one-line errors, `--json` output, `--entry`, loading, the engine, the policy.

Nothing heavy at import time: the engine (MLIR), torch and Textual are imported inside the functions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable


class CliError(Exception):
    """An error the user can fix, printed as one line on stderr (exit status 2)."""


def fail(msg: str, code: int = 2) -> int:
    print(f"mlir-rl-tui: error: {' '.join(str(msg).split())}", file=sys.stderr)
    return code


def note(msg: str) -> None:
    print(f"mlir-rl-tui: note: {msg}", file=sys.stderr, flush=True)


def emit(obj: dict) -> None:
    """The `--json` answer: one JSON object on stdout."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def add_json(p: argparse.ArgumentParser, text: str = "print one JSON object") -> None:
    p.add_argument("--json", action="store_true", help=text)


def program_arg(arg: str) -> str:
    """A FILE argument (argparse `type`): the file, or the shipped sample of that name when no such file
    exists here (mlir_rl_tui.engine.samples.program); a bare name that is neither is a one-line error."""
    from mlir_rl_tui.engine import samples

    path = samples.program(arg)
    if path == arg and not os.path.exists(arg) and samples.looks_like_name(arg):
        try:
            known = ", ".join(samples.names())
        except samples.NoSample as e:
            known = str(e)
        raise CliError(f"{arg}: no such file, nor a shipped sample ({known})")
    return path


def add_program(p: argparse.ArgumentParser) -> None:
    """The program argument FILE of a command (and of the app)."""
    p.add_argument("file", metavar="FILE", type=program_arg,
                   help="a .mlir file, or the name of a shipped sample (`mlir-rl-tui samples` lists them)")


def add_entry(p: argparse.ArgumentParser) -> None:
    p.add_argument("--entry", metavar="NAME",
                   help="the function to schedule and time (needed when the file has several)")


def load_program(args: argparse.Namespace):
    """Load args.file with args.entry, guarded (engine.loader): every failure is one line."""
    from mlir_rl_tui.engine.loader import load_file
    from mlir_rl_tui.progress import ProgressLine

    with ProgressLine() as line:
        return load_file(args.file, getattr(args, "entry", None),
                         on_wait=lambda s: line.update(f"loading {args.file}: parsing"))


def check_measurable(prog, name: str, max_seconds: float | None = None) -> None:
    """Before measuring: refuse a program whose untransformed run is too long to measure (one-line
    error), and say on stderr how long measuring will take when that is more than a few seconds (and
    what `--max-seconds` does to it, for a command that has it)."""
    from mlir_rl_tui.engine.program import measurement_note

    text = measurement_note(prog, name)
    if text:
        note(text + (f"; --max-seconds {max_seconds:g} stops it sooner" if max_seconds
                     else "; --max-seconds S sets a limit" if max_seconds is not None else ""))


def positive(unit: str) -> Callable[[str], float]:
    """An argparse `type` for a positive number of `unit` (seconds, minutes)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not a positive number of {unit}")
        return value

    return parse


def add_max_seconds(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-seconds", type=positive("seconds"), default=0.0, metavar="S",
                   help="answer within S seconds: the timing stops early (fewer rounds, a wider interval, not "
                        "cached), and a program still compiling or running then is stopped with a one-line error")


class Deadline:
    """`--max-seconds`: `at`, the time.time() the timing ends by (a margin before the limit, for the answer
    to come back), and `cancel`, set when the limit passes (the engine then stops its worker)."""

    def __init__(self, seconds: float) -> None:
        import threading
        import time

        self.seconds = seconds
        self.cancel = threading.Event()
        self.at = time.time() + seconds - min(2.0, max(0.3, 0.05 * seconds)) if seconds else None
        self._timer = threading.Timer(seconds, self.cancel.set) if seconds else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def __enter__(self) -> Deadline:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def stopped(self, doing: str) -> int:
        """The one-line error of a step stopped at the limit; `doing` is what the progress line last said."""
        what = doing.split(": ", 1)[-1] if doing else "working"
        return fail(f"stopped at --max-seconds {self.seconds:g} while {what}", 1)


def make_engine(args: argparse.Namespace):
    """The engine with the command's `--runs` and `--no-cache`, when it has them."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.config import MeasureConfig

    cfg = MeasureConfig(runs=getattr(args, "runs", None) or MeasureConfig.runs)
    return Engine(config=cfg, reuse=not getattr(args, "no_cache", False))


def load_policy(path: str | None):
    """The policy at `path`, or the shipped one; imports torch."""
    from mlir_rl_tui.agent.suggest import load_policy as load

    pol = load(path)
    if pol is None:
        raise CliError("no shipped policy (agent/checkpoints/default.pt); train one with `mlir-rl-tui train` "
                       "and pass --policy")
    return pol


def write_text(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror}") from None


def fmt_speedup(s) -> str:
    return f"{s:.2f}x" if isinstance(s, int | float) else "-"
