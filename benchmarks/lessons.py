"""Do the shipped lessons keep their promises on this machine? Every step with a `faster` promise, timed
against the step before it, side by side.

For each such step: the two schedules measured fresh, interleaved (engine.measure.remeasure: --rounds rounds, more
while split), each round's ratio of times (previous step / this step), their median and range, and
whether the median reaches the promise. The Pilot tests only ask a third of each promised gain (a shared
machine's spells would make the full promise flaky there); this is where the promises themselves are
checked. Run on an otherwise idle machine:

    .venv/bin/python benchmarks/lessons.py [--rounds 7] [--only 1-matmul,3-convolution] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from mlir_rl_tui import lessons
from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.measure.remeasure import remeasure


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", help="lessons to measure, comma-separated (default: all shipped)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else lessons.shipped()
    rows = []
    with Engine() as eng:
        for name in names:
            les = lessons.load(name)
            prog = load_file(les.program)
            for k, step in enumerate(les.steps):
                if not step.faster or k == 0:
                    continue
                before, after = les.steps[k - 1].schedule, step.schedule
                runs = remeasure(eng, prog, [parse(before), parse(after)], rounds=args.rounds)
                pairs = [(a, b) for a, b in zip(*runs.values()) if a.ok and b.ok and a.time_ms and b.time_ms]
                if not pairs:
                    bad = next(m for ms in runs.values() for m in ms if not m.ok)
                    print(f"{name} step {k + 1}: {bad.status}: {bad.error}", file=sys.stderr)
                    return 1
                ratios = [a.time_ms / b.time_ms for a, b in pairs]
                mid = statistics.median(ratios)
                rows.append({"lesson": name, "step": k + 1, "title": step.title, "promise": step.faster,
                             "median": mid, "min": min(ratios), "max": max(ratios), "rounds": len(ratios),
                             "kept": mid >= step.faster, "ratios": ratios})
                if not args.json:
                    print(f"{name:14s} step {k + 1} {step.title[:38]:38s} promise {step.faster:5.1f}x  "
                          f"measured {mid:6.2f}x (range {min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} "
                          f"rounds)  {'kept' if mid >= step.faster else 'SHORT'}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
