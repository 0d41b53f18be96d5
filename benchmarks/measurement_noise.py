"""Does a measurement reproduce? The same schedule measured N times in one run, through the engine.

For serial and parallel schedules of matmul, conv2d and add: every repeat is a fresh measurement (no
cache; the worker processes are the engine's own, so repeats land in different workers). Reports, per
schedule, the spread of the repeats (max/min of the times; goal < 1.10), the reported 95% intervals
(mean relative half-width) and how often a repeat's interval holds the median of all repeats
("coverage"; the reported spread should cover the repeats). Run on an otherwise idle machine:

    .venv/bin/python benchmarks/measurement_noise.py [--repeats 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.cache import Cache
from mlir_rl_tui.engine.config import DEFAULT_LIMITS, MeasureConfig

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")
CASES = [
    ("matmul", "serial", "op0: T(8,32,1) V"),
    ("matmul", "parallel", "op0: TP(32,32,0) T(8,32,1) V; op1: NT"),
    ("conv2d", "serial", "op0: T(1,1,8,32,1,0,1) V"),
    ("conv2d", "parallel", "op0: TP(1,28,0,0,0,0,0) T(1,1,8,32,1,0,1) V; op1: NT"),
    ("add", "serial", "op0: T(1,256) V"),
    ("add", "parallel", "op0: TP(256,0) T(1,256) V"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", help="programs to measure, comma-separated (default: all)")
    ap.add_argument("--shared", action="store_true", help="let serial kernels be timed while the other worker "
                                                          "compiles (MeasureConfig.exclusive=False)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(os.path.join(tmp, "measurements.sqlite"))
        main_cache = Cache()  # the machine's roofline comes from the user's cache (measured once)
        peaks = main_cache.get_machine(Engine(cache=main_cache, workers=1).machine)
        if peaks:
            cache.put_machine(Engine(cache=cache, workers=1).machine, peaks)
        cfg = MeasureConfig(exclusive=not args.shared)
        with Engine(DEFAULT_LIMITS, cfg, cache=cache, reuse=False) as eng:
            for name, kind, text in CASES:
                if args.only and name not in args.only.split(","):
                    continue
                prog = load_file(os.path.join(SAMPLES, f"{name}.mlir"))
                sched = parse(text)
                ms = [eng.measure(prog, sched) for _ in range(args.repeats)]
                bad = [m for m in ms if not m.ok]
                if bad:
                    print(f"{name} {kind}: {bad[0].status}: {bad[0].error}", file=sys.stderr)
                    return 1
                times = [m.time_ms for m in ms]
                mid = statistics.median(times)
                cover = sum(1 for m in ms if m.time_ci_ms[0] <= mid <= m.time_ci_ms[1]) / len(ms)
                speed = [m.speedup for m in ms]
                scover = sum(1 for m in ms if m.speedup_ci[0] <= statistics.median(speed) <= m.speedup_ci[1]) / len(ms)
                rows.append({
                    "program": name, "kind": kind, "schedule": text, "median_ms": mid,
                    "max_over_min": max(times) / min(times), "rel_error": statistics.mean(m.rel_error for m in ms),
                    "coverage": cover, "speedup_max_over_min": max(speed) / min(speed), "speedup_coverage": scover,
                    "peak_fraction": statistics.median(m.peak_fraction or 0 for m in ms),
                    "times_ms": times})
                r = rows[-1]
                if not args.json:
                    print(f"{name:7s} {kind:8s} median {mid:8.4f} ms  max/min {r['max_over_min']:.3f}  "
                          f"+-{100 * r['rel_error']:.1f}%  coverage {cover:.0%}  speedup max/min "
                          f"{r['speedup_max_over_min']:.3f} coverage {scover:.0%}  peak {r['peak_fraction']:.0%}",
                          flush=True)
    if args.json:
        print(json.dumps(rows))
    worst = max(r["max_over_min"] for r in rows)
    print(f"worst max/min {worst:.3f} (goal < 1.10)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
