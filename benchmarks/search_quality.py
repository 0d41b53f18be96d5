"""Search quality on the samples: best speedup per method for a fixed budget, and the measurements each
method needed to get within 5% of its own best. Prints one markdown table (and --json rows).

    .venv/bin/python benchmarks/search_quality.py --budget 30 [--methods hill,random] [--samples matmul,add]

Uses a fresh cache folder by default (--cache DIR to reuse one), so every method pays for its own
measurements and the figures do not depend on what ran before. Timing-dependent: run on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def within(history: list[tuple[int, float]], best: float, frac: float = 0.05) -> int:
    """Measurements spent when the best-so-far first reached (1 - frac) of the final best."""
    for spent, b in history:
        if b >= (1 - frac) * best:
            return spent
    return history[-1][0] if history else 0


def main() -> int:
    from mlir_rl_tui.engine.search import METHODS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--samples", default="", help="comma-separated sample names (default: all)")
    p.add_argument("--cache", help="cache folder (default: a fresh temporary one)")
    p.add_argument("--json", help="also write the rows to this JSON file")
    args = p.parse_args()
    os.environ["MLIR_RL_TUI_CACHE"] = args.cache or tempfile.mkdtemp(prefix="search-quality-")
    from mlir_rl_tui.engine import Engine, load_file
    from mlir_rl_tui.engine.config import MeasureConfig
    from mlir_rl_tui.engine.search import search

    files = sorted((ROOT / "samples").glob("*.mlir"))
    if args.samples:
        files = [f for f in files if f.stem in args.samples.split(",")]
    methods = args.methods.split(",")
    ranker = None
    if "guided" in methods:  # the guided search needs the cost model (the shipped one)
        from mlir_rl_tui.agent.costmodel import load_cost_model

        ranker = load_cost_model()
        if ranker is None:
            sys.exit("--methods guided needs the shipped cost model (agent/checkpoints/costmodel.pt)")
    rows = []
    with Engine(config=MeasureConfig(runs=args.runs)) as eng:
        for f in files:
            prog = load_file(str(f))
            for meth in methods:
                t = time.monotonic()
                r = search(eng, prog, meth, args.budget, seed=args.seed, ranker=ranker if meth == "guided" else None)
                row = {"sample": f.stem, "method": meth, "speedup": r.speedup, "evaluated": r.evaluated,
                       "to_5pct": within(r.history, r.speedup), "stopped": r.stopped, "schedule": str(r.schedule),
                       "validated": r.best.validated, "seconds": time.monotonic() - t}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    print(f"Budget {args.budget} measurements per search, seed {args.seed}, median of {args.runs} runs; "
          "each cell: best speedup over the baseline / measurements needed to get within 5% of it.\n")
    print("| sample | " + " | ".join(methods) + " |")
    print("|---|" + "---|" * len(methods))
    for f in files:
        cells = []
        for meth in methods:
            r = next(r for r in rows if r["sample"] == f.stem and r["method"] == meth)
            cells.append(f"{r['speedup']:.1f}x / {r['to_5pct']}" if r["validated"] else "failed")
        print(f"| {f.stem} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
