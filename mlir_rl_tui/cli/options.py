"""Argument types and the options commands share: FILE (a file or a shipped sample), `--entry`, `--json`,
`--runs`, `--max-seconds` (and its runtime, `Deadline`), positive numbers and counts, checkpoints, input shapes,
lists of programs."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

from mlir_rl_tui.cli.output import CliError, fail


def add_json(p: argparse.ArgumentParser, text: str = "print one JSON object") -> None:
    p.add_argument("--json", action="store_true", help=text)


def program_arg(arg: str) -> str:
    """A FILE argument (argparse `type`): the file, or the shipped sample of that name when no such file
    exists here (mlir_rl_tui.engine.corpus.samples.program); a bare name that is neither is a one-line error."""
    from mlir_rl_tui.engine.corpus import samples

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


def positive(unit: str) -> Callable[[str], float]:
    """An argparse `type` for a positive, finite number of `unit` (seconds, minutes): not inf, nan or 1e400."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {unit}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number of {unit}")
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not a positive number of {unit}")
        return value

    return parse


def positive_int(text: str) -> int:
    """An argparse `type` for a count (runs, rounds, a budget, members, epochs, ...): a whole number, 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def checkpoint(what: str) -> Callable[[str], str]:
    """An argparse `type` for a checkpoint file to read (`what`: "policy checkpoint", "cost model file"): a CliError
    (one line) when it does not exist, is a directory, or is no torch checkpoint by its zip directory
    (agent.checkpoint_file.problem; torch is not imported). Returns the path."""

    def parse(text: str) -> str:
        from mlir_rl_tui.agent.checkpoint_file import problem

        if not os.path.lexists(text):
            raise CliError(f"{text}: no such {what}")
        why = problem(text)
        if why:
            raise CliError(f"{text}: {why}")
        return text

    return parse


def input_shape(text: str) -> str:
    """An argparse `type` for `--input SHAPE[:DTYPE]` of a PyTorch module (agent.torch_import.parse_input:
    its form, its element type, no dimension under 1); a CliError (one line) otherwise. Returns the text."""
    from mlir_rl_tui.agent.torch_import import parse_input
    from mlir_rl_tui.engine.errors import EngineError

    try:
        parse_input(text)
    except EngineError as e:
        raise CliError(str(e)) from None
    return text


#: What a list of program arguments may name (engine.corpus.programs, the one rule): its metavar and help.
PROGRAMS_METAVAR = "PROGRAM"
PROGRAMS_HELP = ("shipped samples by name (`samples`: all of them), data set folders `dataset generate` wrote (their "
                 "programs, or one --split), folders of .mlir files and .mlir files")


def add_runs(p: argparse.ArgumentParser, default: int | None = None, why: str = "") -> None:
    """`--runs`, the one definition: the least number of timing rounds of a measurement (MeasureConfig.runs; a
    round is runs adding up to a few ms, the figure the median over the rounds of each round's fastest run).
    `default`: this command's (None: MeasureConfig's); `why`, why it differs."""
    from mlir_rl_tui.engine.config import MeasureConfig

    n = MeasureConfig.runs if default is None else default
    p.add_argument("--runs", type=positive_int, default=n, metavar="N",
                   help=f"at least N timing rounds per measurement (default {n}{': ' + why if why else ''}); the "
                        "time is the median over the rounds of each round's fastest run, with its 95%% interval")


def add_ray(p: argparse.ArgumentParser) -> None:
    """`--ray-address`, the one definition: measure on a Ray cluster's nodes (engine.cluster)."""
    p.add_argument("--ray-address", metavar="ADDR",
                   help="measure on the nodes of this Ray cluster (host:port of its head, or \"local\": a "
                        "one-node cluster here), one candidate per node at a time; nodes of another machine kind "
                        "are refused; the database stays this machine's (pip install 'mlir-rl-tui[ray]')")


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
        # the timer waits at most 1e9 s (31 years): a longer wait overflows the platform's time_t in its thread
        self._timer = threading.Timer(min(seconds, 1e9), self.cancel.set) if seconds else None
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
