"""What the commands share: one-line errors, `--json` output, `--entry`, loading, the engine, the policy.

Nothing heavy at import time: the engine (MLIR), torch and Textual are imported inside the functions.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator


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


def load_program(args: argparse.Namespace):
    """Load args.file with args.entry, guarded (engine.ir.loader): every failure is one line."""
    from mlir_rl_tui.engine.ir.loader import load_file
    from mlir_rl_tui.progress import ProgressLine

    with ProgressLine() as line:
        return load_file(args.file, getattr(args, "entry", None),
                         on_wait=lambda s: line.update(f"loading {args.file}: parsing"))


def check_measurable(prog, name: str, max_seconds: float | None = None) -> None:
    """Before measuring: refuse a program whose untransformed run is too long to measure (one-line
    error), and say on stderr how long measuring will take when that is more than a few seconds (and
    what `--max-seconds` does to it, for a command that has it)."""
    from mlir_rl_tui.engine.ir.program import measurement_note

    text = measurement_note(prog, name)
    if text:
        note(text + (f"; --max-seconds {max_seconds:g} stops it sooner" if max_seconds
                     else "; --max-seconds S sets a limit" if max_seconds is not None else ""))


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


def make_engine(args: argparse.Namespace):
    """The engine with the command's `--runs` and `--no-cache`, when it has them."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.config import MeasureConfig

    cfg = MeasureConfig(runs=getattr(args, "runs", None) or MeasureConfig.runs)
    return Engine(config=cfg, reuse=not getattr(args, "no_cache", False))


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


def open_tuning_db(path: str | None, readonly: bool = False):
    """The tuning database of `--db`. The default one (None) opens as the product's own: a damaged file is
    moved aside and a fresh one started. A file the user named is never moved aside (engine.store.cache.Store's
    `named`, `readonly`): a folder, a file of another kind, a read-only or locked one, or (`readonly`) a
    missing one is a one-line EngineError."""
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    if path is None:
        return TuningDB(None)
    return TuningDB(path, readonly=readonly, named=True)


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


def fmt_speedup(s) -> str:
    return f"{s:.2f}x" if isinstance(s, int | float) else "-"


def build_checked(eng, prog, schedule, out: str, program_path: str, extra: dict | None = None) -> tuple[dict, str]:
    """Build `schedule` of `prog` into the library `out` (engine.run.native.build_library), run it before it takes
    `out`'s place in a separate process (a crash cannot take this one down) and compare its result with
    PyTorch's saved at import (PROGRAM.torch.npz) or, without one, the untransformed program's, run by the
    engine on the same seeded inputs. A library that disagrees is not written (one-line EngineError naming
    the reference) and `out` is left as it was. Returns the description and what it was checked against
    ("PyTorch" or "engine")."""
    import subprocess
    import sys
    import tempfile

    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.run.native import build_library

    torch_ref = program_path + ".torch.npz"
    checked = "PyTorch" if os.path.exists(torch_ref) else "engine"
    against = "PyTorch's result" if checked == "PyTorch" else "the untransformed program's result"
    with tempfile.TemporaryDirectory(prefix="mlir-rl-check-") as tmp:
        ref = torch_ref
        if checked == "engine":
            ref = os.path.join(tmp, "reference.npz")
            try:
                eng.reference(prog, ref)
            except EngineError as e:
                raise EngineError(f"cannot check the library: {e}") from None

        def check(lib: str) -> str | None:
            try:
                p = subprocess.run([sys.executable, "-m", "mlir_rl_tui.runtime", "verify", lib, ref, against],
                                   capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:
                return "the library did not finish a run in 10 minutes"
            if p.returncode != 0:
                last = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [f"exit {p.returncode}"])[-1]
                return f"the library failed its check: {last}"
            return None

        desc = build_library(eng, prog, schedule, out, extra=extra, check=check)
    return desc, checked
