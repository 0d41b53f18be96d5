"""`mlir-rl-tui` command line: one entry point, `--json` prints one object, errors are one line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable


class CliError(Exception):
    """An error to print as one line on stderr."""


def fail(msg: str, code: int = 2) -> int:
    print(f"mlir-rl-tui: error: {' '.join(str(msg).split())}", file=sys.stderr)
    return code


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def add_entry(p: argparse.ArgumentParser) -> None:
    p.add_argument("--entry", metavar="NAME",
                   help="the function to schedule and time (needed when the file has several)")


def load_program(args: argparse.Namespace):
    """Load args.file with args.entry, guarded (engine.loader): every failure is one line."""
    from engine.loader import load_file
    from mlir_rl_tui.progress import ProgressLine

    line = ProgressLine()
    try:
        return load_file(args.file, getattr(args, "entry", None),
                         on_wait=lambda s: line.update(f"loading {args.file}: parsing"))
    finally:
        line.clear()


def check_measurable(prog, name: str) -> None:
    """Before measuring: refuse a program whose untransformed run is too long to measure (one-line
    error), and say on stderr how long measuring will take when that is more than a few seconds."""
    from engine.program import measurement_note

    note = measurement_note(prog, name)
    if note:
        print(f"mlir-rl-tui: note: {note}", file=sys.stderr, flush=True)


def make_engine(args: argparse.Namespace):
    from engine import Engine
    from engine.config import MeasureConfig

    cfg = MeasureConfig(runs=getattr(args, "runs", None) or MeasureConfig.runs)
    return Engine(config=cfg, reuse=not getattr(args, "no_cache", False))


# ------------------------------------------------------------------------------------------------
def _add_inspect(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("file")
    add_entry(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")

    def run(args: argparse.Namespace) -> int:
        from engine import Session
        from engine.state import action_mask

        prog = load_program(args)
        sess = Session(prog)
        if args.json:
            from engine.features import features

            ops = []
            for o in prog.ops:
                st = sess.states[o.id]
                ops.append({
                    "id": o.id, "name": o.name, "type": o.op_type, "location": o.location,
                    "loops": [{"bound": lp.bound, "iterator": lp.iterator} for lp in o.loops],
                    "producers": o.producers, "consumers": o.consumers, "fusion_producer": o.fusion_producer,
                    "features": [float(x) for x in features(st)],
                    "mask": action_mask(st, prog, sess.limits, sess.openmp).to_json(),
                })
            emit({"program": args.file, "sha256": prog.sha256, "function": prog.func_name, "ops": ops})
            return 0
        print(f"{args.file}: @{prog.func_name}, {len(prog.ops)} linalg ops (traversal order: last consumer first)")
        for o in prog.ops:
            st = sess.states[o.id]
            loops = " ".join(f"{lp.bound}{'r' if lp.iterator == 'reduction' else 'p'}" for lp in o.loops)
            links = []
            if o.producers:
                links.append("producers " + ",".join(o.producers))
            if o.consumers:
                links.append("consumers " + ",".join(o.consumers))
            print(f"  {o.id:>5}  {o.name} {o.shape_text}  loops [{loops}]  line {o.location}  {'; '.join(links)}")
            mask = action_mask(st, prog, sess.limits, sess.openmp)
            for k, c in mask.transformation.items():
                if not c.allowed:
                    print(f"         {k:>2} masked: {c.reason}")
        return 0

    return run


def _add_apply(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("file")
    add_entry(p)
    p.add_argument("--schedule", default="", help="e.g. 'op0: TP(64,64,0) T(8,32,1) V' ('' = baseline)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", help="write the transformed module (before lowering) here")
    p.add_argument("--emit-transform", help="write payload + transform script that mlir-opt --transform-interpreter replays")
    p.add_argument("--runs", type=int, default=None,
                   help="at least this many timing rounds (default 10); the time is the median of the round "
                        "medians, with its 95%% interval")
    p.add_argument("--no-cache", action="store_true", help="measure even if the cache has an answer")
    p.add_argument("--per-op", action="store_true", help="also each op's share of the time (profiled with markers "
                                                          "between the ops; fused producers count in their consumer)")

    def run(args: argparse.Namespace) -> int:
        from engine import parse
        from engine.state import replay
        from mlir_rl_tui.progress import ProgressLine

        prog = load_program(args)
        sched = parse(args.schedule)
        replay(prog, sched)  # one-line ScheduleError before any work
        check_measurable(prog, args.file)
        if args.emit_transform:
            from engine.export import replayable

            _write(args.emit_transform, replayable(prog, sched))
        line = ProgressLine()
        try:
            with make_engine(args) as eng:
                if args.output:
                    status, text = eng.transformed_ir(prog, sched)
                    if status != "ok":
                        return fail(f"{status}: {text}", 1)
                    _write(args.output, text)
                m = eng.measure(prog, sched, on_progress=line.phase("apply"))
                groups = eng.per_op(prog, sched) if args.per_op and m.ok else None
        finally:
            line.clear()
        if args.json:
            emit({**m.to_json(), **({"per_op": groups} if groups is not None else {})})
        else:
            if m.ok:
                print(describe(m) + f", validated{' (cached)' if m.cached else ''}")
                if m.stages_ms and not m.cached:
                    print("stages: " + ", ".join(f"{k} {v:.1f} ms" for k, v in m.stages_ms.items()))
                if groups:
                    names = {o.id: o.name.removeprefix("linalg.") for o in prog.ops}
                    print("per op (share of the time, one run profiled with markers between the ops):")
                    for g in sorted(groups, key=lambda g: -g["share"]):
                        ops = " + ".join(f"{i} {names.get(i, '?')}" for i in g["ops"])
                        fused = f"  (fused into {g['fused_into']}: timed there)" if g.get("fused_into") else ""
                        print(f"  {100 * g['share']:5.1f}%  {g['ms']:8.4f} ms  {ops}{fused}")
            else:
                print(f"{m.status}: {m.error}")
        return 0 if m.ok else 1

    return run


def describe(m) -> str:
    """One line for an ok Measurement: time with its spread, speedup with its interval, roofline."""
    err = f" +-{100 * m.rel_error:.1f}%" if m.rel_error is not None else ""
    sp = f"{m.speedup:.2f}x"
    if m.speedup_ci:
        sp += f" ({m.speedup_ci[0]:.2f}-{m.speedup_ci[1]:.2f})"
    text = f"{m.status}: {m.time_ms:.3f} ms{err} (baseline {m.baseline_ms:.3f} ms), speedup {sp}"
    if m.gflops is not None:
        text += f", {m.gflops:.1f} GFLOP/s"
    if m.peak_fraction is not None:
        what = "FMA peak" if m.bound == "compute" else "bandwidth"
        text += f", {100 * m.peak_fraction:.0f}% of {what} ({m.runtime})"
    return text


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror}") from None


BUILTIN = {
    "inspect": ("ops, loops, features and action mask of a program", _add_inspect),
    "apply": ("apply a schedule, measure it, report the speedup", _add_apply),
}


#: Sub-commands defined in other modules, imported only when used (the agent's imports torch).
EXTENSIONS = {
    "search": ("mlir_rl_tui.cli_search", "search for a fast schedule with a budget of measurements"),
    "replay": ("mlir_rl_tui.cli_search", "re-apply and re-measure the schedules of a trace"),
    "dataset": ("mlir_rl_tui.cli_search", "generate a training data set of programs"),
    "optimize": ("mlir_rl_tui.cli_agent", "the policy's schedule in one pass, measured"),
    "train": ("mlir_rl_tui.cli_agent", "train the policy (behaviour cloning, then PPO)"),
    "evaluate": ("mlir_rl_tui.cli_agent", "policy vs hill climbing vs PyTorch eager on a set of programs"),
    "build": ("mlir_rl_tui.cli_build", "a scheduled program as a shared library (C interface, callable from Python)"),
    "import": ("mlir_rl_tui.cli_import", "a PyTorch module (FILE.py:NAME) as a linalg program, via torch-mlir"),
    "lesson": ("mlir_rl_tui.cli_lesson", "guided lessons: loop transformations step by step, measured live"),
    "convert-checkpoint": ("mlir_rl_tui.cli_agent", "convert an older checkpoint (unpickles it: only files you trust)"),
}


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, Callable]]:
    """The parser; extension commands get their real arguments only when `only` names them."""
    parser = argparse.ArgumentParser(
        prog="mlir-rl-tui",
        description="Schedule explorer for MLIR linalg code. `mlir-rl-tui FILE` opens the app.",
        epilog="environment: MLIR_RL_TUI_CACHE=DIR, the folder of the measurement cache (default: the user "
               "cache folder, ~/.cache/mlir-rl-tui)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    handlers: dict[str, Callable] = {}
    for name, (help_text, add) in BUILTIN.items():
        handlers[name] = add(sub.add_parser(name, help=help_text, description=help_text))
    for name, (module, help_text) in EXTENSIONS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == only:
            mod = __import__(module, fromlist=["COMMANDS"])
            handlers[name] = mod.COMMANDS[name][1](p)
    return parser, handlers


def _open_app(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="mlir-rl-tui", description="Open the schedule explorer on FILE.")
    p.add_argument("file")
    add_entry(p)
    p.add_argument("--policy", help="policy checkpoint for suggestions (default: the shipped one)")
    p.add_argument("--record", help="append a trace of every step to this JSONL file")
    args = p.parse_args(argv)
    from engine.errors import EntryError
    from engine.loader import PendingLoad, load_file
    from engine.program import measurement_note
    from mlir_rl_tui.progress import ProgressLine

    # the loader parses while this process imports Textual; a bad file fails before the screen is taken
    pending = PendingLoad(args.file, args.entry)
    try:
        from mlir_rl_tui.app import EntryChoice, run_app
    except ImportError as e:
        raise CliError(f"the app is not available: {e}") from None
    line = ProgressLine()
    try:
        prog = pending.result(on_wait=lambda s: line.update(f"loading {args.file}: parsing"))
    except EntryError as e:  # several candidates and no --entry: the app asks
        if args.entry is not None:
            raise
        prog = EntryChoice(args.file, e.candidates, str(e), lambda name: load_file(args.file, name),
                           lambda chosen: measurement_note(chosen, args.file))
    finally:
        line.clear()
    if isinstance(prog, EntryChoice):
        return run_app(prog, policy=args.policy, record=args.record)
    note = measurement_note(prog, args.file)  # refuses a program too slow to measure
    return run_app(prog, policy=args.policy, record=args.record, note=note)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if argv and not argv[0].startswith("-") and argv[0] not in BUILTIN and argv[0] not in EXTENSIONS:
        from mlir_rl_tui.idle_gc import pause_for_startup

        pause_for_startup()  # opening the app: no garbage collection until its first paint
    from engine.errors import EngineError

    try:
        first = argv[0] if argv else None
        parser, handlers = build_parser(first)
        if first and first not in handlers and first not in EXTENSIONS and not first.startswith("-"):
            return _open_app(argv)
        args = parser.parse_args(argv)
        if not args.command:
            parser.print_help()
            return 2
        return handlers[args.command](args)
    except (EngineError, CliError) as e:
        return fail(str(e))
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("MLIR_RL_TUI_DEBUG"):
            raise
        return fail(f"internal error ({type(e).__name__}): {str(e).splitlines()[0] if str(e) else ''}", 1)


if __name__ == "__main__":
    sys.exit(main())
