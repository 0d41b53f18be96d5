"""`mlir-rl-tui search FILE --method M --budget N`: a search baseline (engine.search) on one program."""

from __future__ import annotations

import argparse
import time

from mlir_rl_tui.cli.engine import check_measurable, load_program, make_engine
from mlir_rl_tui.cli.options import add_entry, add_json, add_program, add_ray, add_runs, checkpoint, positive_int
from mlir_rl_tui.cli.output import CliError, emit, fmt_speedup
from mlir_rl_tui.cli.paths import trace_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    from mlir_rl_tui.engine.search import METHODS  # the engine's list, so a new method is a choice here at once

    add_program(p)
    add_entry(p)
    p.add_argument("--method", choices=list(METHODS), default="hill")
    p.add_argument("--budget", type=positive_int, default=30, help="measurements the search may make (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", metavar="SCHEDULE", help="(hill) climb from this schedule, e.g. the app's or a "
                                                      "policy's ('op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V'), "
                                                      "instead of hill climbing's own starting points")
    add_json(p)
    p.add_argument("--trace", help="append the best schedule as a trace episode to this JSONL file (new, or a "
                                   "trace: another existing file is refused before the search)")
    add_runs(p, 5, "many candidates")
    add_ray(p)
    p.add_argument("--model", metavar="FILE", type=checkpoint("cost model file"),
                   help="the cost model of --method guided (default: the shipped one; `mlir-rl-tui costmodel "
                        "train` makes one)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine.search import NEEDS_RANKER, search
    from mlir_rl_tui.progress import ProgressLine

    if args.trace:
        trace_file(args.trace, [args.file])
    prog = load_program(args)
    check_measurable(prog, args.file)
    begin = None
    if args.start is not None:
        from mlir_rl_tui.engine import parse
        from mlir_rl_tui.engine.schedule.state import check_schedule

        if args.method != "hill":
            raise CliError(f"--start is for --method hill, not {args.method}")
        begin = parse(args.start)
        check_schedule(prog, begin)  # one-line ScheduleError before any measurement
    ranker = load_ranker(args.model) if args.method in NEEDS_RANKER else None
    start = time.monotonic()
    with ProgressLine() as line, make_engine(args) as eng:

        def progress(r) -> None:
            nodes = getattr(eng, "status", None)  # on a Ray cluster: each node's work
            line.update(f"{args.method}: {r.evaluated} measured, {r.cache_hits} cache hits, budget {args.budget}, "
                        f"best {fmt_speedup(r.best.speedup)}" + (f" [{nodes()}]" if nodes is not None else ""))

        line.update(f"{args.method}: measuring the baseline")
        r = search(eng, prog, args.method, args.budget, seed=args.seed, trace=args.trace, on_progress=progress,
                   ranker=ranker, start=begin)
    predicted = None  # the cost model's calibrated interval for the schedule found (guided)
    if ranker is not None and r.schedule.ops and hasattr(ranker, "predict_interval"):
        predicted = ranker.predict_interval(prog, [r.schedule])[0]
    if args.json:
        emit({**r.to_json(), **({"predicted": list(predicted)} if predicted else {})})
        return 0 if r.best.ok else 1
    m = r.best
    if not r.schedule.ops:
        print(f"{args.method}: nothing beat the baseline ({m.time_ms:.3f} ms)")
    else:
        print(f"{args.method}: {fmt_speedup(m.speedup)} ({m.time_ms:.3f} ms, baseline {m.baseline_ms:.3f} ms), "
              f"{'validated' if m.validated else m.status}")
        print(f"schedule: {m.schedule}")
        if predicted is not None:
            lv = 100 * ranker.calibration["level"]
            print(f"the cost model predicted {predicted[0]:.2f}x ({lv:.0f}% interval {predicted[1]:.2f}-"
                  f"{predicted[2]:.2f}x)")
    print(f"{r.evaluated} measured, {r.cache_hits} cache hits, {r.candidates} candidates, "
          f"stopped: {r.stopped}, {time.monotonic() - start:.1f} s"
          + (f"; trace appended to {args.trace}" if args.trace else ""))
    return 0 if m.ok else 1


def load_ranker(path: str | None):
    """The cost model of a guided search: `path`, or the shipped one (imports torch)."""
    try:
        from mlir_rl_tui.agent.costmodel import load_cost_model
    except ImportError as e:
        raise CliError(f"the guided search needs the agent extra (torch: {e.name} is missing); "
                       "pip install 'mlir-rl-tui[agent]'") from None
    model = load_cost_model(path)
    if model is None:
        raise CliError("no shipped cost model (agent/checkpoints/costmodel.pt); train one with "
                       "`mlir-rl-tui costmodel train` and pass --model")
    return model
