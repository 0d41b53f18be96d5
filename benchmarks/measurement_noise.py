"""Does a measurement reproduce? The same schedule measured N times in one run, through the engine.

For serial and parallel schedules of matmul, conv2d and add: every repeat is a fresh measurement (no
cache; the worker processes are the engine's own, so repeats land in different workers). Reports, per
schedule, the spread of the repeats (max/min of the times; goal < 1.10 serial, < 1.15 parallel), how many
the engine flagged as taken in a bad state and the spread of the others, the reported 95% intervals (mean
relative half-width) and how often one repeat's interval holds another repeat's figure ("coverage", over
every ordered pair; goal >= 90%), for times and for speedups. Run on an otherwise idle machine:

    .venv/bin/python benchmarks/measurement_noise.py [--repeats 10] [--json]

With `--processes`, every repeat is a command of its own, as a user types it one after the other
(`mlir-rl-tui apply SAMPLE --schedule S --no-cache --json`, each a fresh engine with fresh workers, the
user's cache for the machine's roofline and repeat floor), over the cases above and the parallel schedules
whose fresh repeats spread without a flag before (PROCESS_CASES).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.config import DEFAULT_LIMITS, MeasureConfig
from mlir_rl_tui.engine.store.cache import Cache

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
CASES = [
    ("matmul", "serial", "op0: T(8,32,1) V"),
    ("matmul", "parallel", "op0: TP(32,32,0) T(8,32,1) V; op1: NT"),
    ("conv2d", "serial", "op0: T(1,1,8,32,1,0,1) V"),
    ("conv2d", "parallel", "op0: TP(1,28,0,0,0,0,0) T(1,1,8,32,1,0,1) V; op1: NT"),
    ("add", "serial", "op0: T(1,256) V"),
    ("add", "parallel", "op0: TP(256,0) T(1,256) V"),
]


#: parallel schedules measured as separate `apply --no-cache` commands: max/min 1.69 and 1.18, none flagged,
#: on an Intel Xeon VM before the engine flagged a slow state per process (engine.measure.timing's state probe)
PROCESS_CASES = [
    ("matmul", "parallel", "op0: TP(32,32,0) T(8,32,1) V"),
    ("add", "parallel", "op0: TP(16,64) T(4,32) V"),
]


class _Applied:
    """One `apply --json` answer with the attributes `summarize` reads."""

    def __init__(self, d: dict) -> None:
        self.__dict__.update(d)
        self.ok = d.get("status") == "ok"
        self.flagged = bool(d.get("unsteady") or d.get("far") or d.get("contended"))  # Measurement.flagged
        self.rel_error = d.get("rel_error") or 0.0
        ci, sp = d.get("speedup_ci"), d.get("speedup")
        self.speedup_rel_error = (math.log(ci[1]) - math.log(ci[0])) / 2 if ci and sp else 0.0


def apply_fresh(name: str, text: str) -> _Applied:
    """One fresh measurement by a command of its own."""
    exe = os.path.join(os.path.dirname(sys.executable), "mlir-rl-tui")
    out = subprocess.run([exe, "apply", name, "--schedule", text, "--no-cache", "--json"], capture_output=True,
                         text=True, check=False)
    try:
        return _Applied(json.loads(out.stdout))
    except json.JSONDecodeError:
        return _Applied({"status": "error", "error": (out.stderr.strip().splitlines() or ["no output"])[-1]})


def coverage(values: list[float], intervals: list[list[float]], targets: list[bool] | None = None) -> float:
    """How often one measurement's interval holds another's figure: over every ordered pair of repeats (whose
    second figure is among `targets`, when given)."""
    n = len(values)
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j and (targets is None or targets[j])]
    return sum(1 for i, j in pairs if intervals[i][0] <= values[j] <= intervals[i][1]) / len(pairs) if pairs else 1.0


def summarize(name: str, kind: str, text: str, ms: list) -> dict:
    """One case's row: spreads, stated intervals and their coverage, for times and speedups; `flagged`
    counts the repeats the engine marked as taken in a bad state (unsteady, far or contended), and the
    `steady_` spread is the others'."""
    times = [m.time_ms for m in ms]
    speed = [m.speedup for m in ms]
    flagged = [m.flagged for m in ms]
    steady = [t for t, f in zip(times, flagged) if not f] or times
    return {
        "program": name, "kind": kind, "schedule": text, "median_ms": statistics.median(times),
        "max_over_min": max(times) / min(times), "steady_max_over_min": max(steady) / min(steady),
        "flagged": sum(flagged), "rel_error": statistics.mean(m.rel_error for m in ms),
        "coverage": coverage(times, [m.time_ci_ms for m in ms]),
        # of the figures the engine stands behind: a flagged one is declared taken in a bad state
        "coverage_unflagged": coverage(times, [m.time_ci_ms for m in ms], [not f for f in flagged]),
        "speedup_coverage_unflagged": coverage(speed, [m.speedup_ci for m in ms], [not f for f in flagged]),
        "speedup_max_over_min": max(speed) / min(speed),
        "speedup_rel_error": statistics.mean(m.speedup_rel_error for m in ms),
        "speedup_coverage": coverage(speed, [m.speedup_ci for m in ms]),
        "peak_fraction": statistics.median(m.peak_fraction or 0 for m in ms),
        "times_ms": times, "speedups": speed, "flags": flagged,
        "why": [",".join(k for k in ("unsteady", "far", "contended") if getattr(m, k)) for m in ms],
        "time_ci_ms": [m.time_ci_ms for m in ms], "speedup_ci": [m.speedup_ci for m in ms],
        "probe_ms": [m.probe_ms for m in ms], "handoff_us": [m.handoff_us for m in ms],
        "states": [m.state for m in ms]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", help="programs to measure, comma-separated (default: all)")
    ap.add_argument("--shared", action="store_true", help="let serial kernels be timed while the other worker "
                                                          "compiles (MeasureConfig.exclusive=False)")
    ap.add_argument("--processes", action="store_true",
                    help="every repeat a command of its own (`apply --no-cache`), as a user repeats one")
    args = ap.parse_args()
    if args.processes:
        return _cases(CASES + PROCESS_CASES, args, apply_fresh)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(os.path.join(tmp, "measurements.sqlite"))
        main_cache = Cache()  # the machine's roofline comes from the user's cache (measured once)
        peaks = main_cache.get_machine(Engine(cache=main_cache, workers=1).machine)
        if peaks:
            cache.put_machine(Engine(cache=cache, workers=1).machine, peaks)
        cfg = MeasureConfig(exclusive=not args.shared)
        load = functools.cache(lambda name: load_file(os.path.join(SAMPLES, f"{name}.mlir")))
        with Engine(DEFAULT_LIMITS, cfg, cache=cache, reuse=False) as eng:
            return _cases(CASES, args, lambda name, text: eng.measure(load(name), parse(text)))


def _cases(cases: list[tuple[str, str, str]], args: argparse.Namespace, measure) -> int:
    """Each case measured `args.repeats` times by `measure(sample, schedule text)`, summarized and reported."""
    rows = []
    for name, kind, text in cases:
        if args.only and name not in args.only.split(","):
            continue
        ms = [measure(name, text) for _ in range(args.repeats)]
        bad = [m for m in ms if not m.ok]
        if bad:
            print(f"{name} {kind}: {bad[0].status}: {bad[0].error}", file=sys.stderr)
            return 1
        rows.append(summarize(name, kind, text, ms))
        _line(rows[-1], args.json)
    return _report(rows, args.json)


def _line(r: dict, as_json: bool) -> None:
    if not as_json:
        print(f"{r['program']:7s} {r['kind']:8s} {r['schedule']:38s} median {r['median_ms']:8.4f} ms  "
              f"max/min {r['max_over_min']:.3f} (steady {r['steady_max_over_min']:.3f}, {r['flagged']} flagged)  "
              f"+-{100 * r['rel_error']:.1f}%  coverage {r['coverage']:.0%} "
              f"({r['coverage_unflagged']:.0%} of unflagged)  speedup max/min "
              f"{r['speedup_max_over_min']:.3f} coverage {r['speedup_coverage']:.0%} "
              f"({r['speedup_coverage_unflagged']:.0%})  "
              f"peak {r['peak_fraction']:.0%}", flush=True)


def _report(rows: list[dict], as_json: bool) -> int:
    if as_json:
        print(json.dumps(rows))
    worst = {k: max((r["steady_max_over_min"] for r in rows if r["kind"] == k), default=1.0) for k in ("serial", "parallel")}
    flagged = sum(r["flagged"] for r in rows)
    low = [f"{r['program']} {r['kind']}" for r in rows if min(r["coverage"], r["speedup_coverage"]) < 0.9]
    print(f"unflagged max/min: serial {worst['serial']:.3f} (goal < 1.10), parallel {worst['parallel']:.3f} (goal < "
          f"1.15); {flagged} of {sum(len(r['times_ms']) for r in rows)} figures flagged; coverage under 90%: "
          f"{', '.join(low) or 'none'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
