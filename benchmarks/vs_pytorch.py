"""The product's best schedule against PyTorch eager, on the same CPU, interleaved in one run.

For each single-op sample (and, with --dataset, each one-op program of a data set's eval split):
1. the product's best schedule: hill climbing with --budget measurements, and the shipped policy's one
   pass (`optimize`); the faster of the two (measured once more each) is "the product's best";
2. then --rounds interleaved rounds A B A B: the product's schedule measured fresh by the engine (its
   timing protocol, pinned OpenMP threads), and PyTorch eager in a fresh process with the same thread
   count and the same timing protocol (agent.torch_reference: channels_last for NHWC ops);
3. per program: the ratio PyTorch time / product time (median over rounds, with min..max), GFLOP/s and
   % of the machine's roofline (FMA peak or bandwidth, engine.roofline). Geomean over the programs.

    .venv/bin/python benchmarks/vs_pytorch.py [--budget 100] [--rounds 5] [--threads 2] [--dataset DIR]

Run it on an otherwise idle machine (it takes ~15 minutes with the default budget).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from agent.evaluate import gmean  # noqa: E402
from agent.torch_reference import run_in_subprocess  # noqa: E402
from engine import Engine, Schedule, Session, load_file  # noqa: E402
from engine.config import MeasureConfig  # noqa: E402
from engine.search import search  # noqa: E402

SAMPLES = ["matmul", "conv2d", "maxpool", "add", "relu"]
GOALS = {"matmul": 1.0, "conv2d": 1.0, "maxpool": 2.0, "add": 1.0, "relu": 1.0}
PAPER = {"matmul": "2.16x slower", "conv2d": "6.71x slower", "maxpool": "3.3x faster"}


def best_schedule(eng: Engine, prog, budget: int, seed: int, log) -> tuple[Schedule, dict]:
    """Hill climbing @budget and the policy's one pass; the faster (each measured once more, fresh)."""
    found = {}
    r = search(eng, prog, "hill", budget, seed=seed)
    found["hill"] = r.schedule
    try:
        from agent.suggest import load_policy, to_measure

        pol = load_policy(None)
        if pol is not None:
            found["policy"] = to_measure(pol.schedule(Session(prog, openmp=eng.openmp)).schedule)
    except ImportError:
        pass
    again = {k: eng.measure(prog, s, use_cache=False) for k, s in found.items()}
    for k, m in again.items():
        log(f"  {k}: {m.schedule or '(untransformed)'}  {m.status} {m.time_ms or 0:.4f} ms")
    ok = {k: m for k, m in again.items() if m.ok}
    who = min(ok, key=lambda k: ok[k].time_ms)
    return found[who], {"source": who, "schedules": {k: str(s) for k, s in found.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=100, help="hill-climbing measurements per program")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved product/PyTorch rounds")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", help="sample names, comma-separated")
    ap.add_argument("--dataset", help="also the one-op programs of this data set's eval split")
    ap.add_argument("--schedule", action="append", default=[], metavar="NAME=SCHEDULE",
                    help="skip the search for this sample and use this schedule")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    paths = [os.path.join(ROOT, "samples", f"{n}.mlir") for n in (args.only.split(",") if args.only else SAMPLES)]
    if args.dataset:
        from agent.data import program_paths

        paths += [p for p in program_paths([args.dataset], "eval")
                  if sum(1 for o in load_file(p).ops if o.name != "linalg.fill") == 1]
    given = dict(s.split("=", 1) for s in args.schedule)
    rows = []
    with Engine(config=MeasureConfig()) as eng:
        peaks = eng.peaks()
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            prog = load_file(path)
            log(f"{name}: searching (hill @{args.budget}) ...")
            if name in given:
                from engine import parse

                sched, info = parse(given[name]), {"source": "given"}
            else:
                sched, info = best_schedule(eng, prog, args.budget, args.seed, log)
            ratios, ours, theirs = [], [], []
            for i in range(args.rounds):
                m = eng.measure(prog, sched, use_cache=False)
                t = run_in_subprocess(path, args.threads)
                if not m.ok or t is None:
                    log(f"  round {i}: product {m.status} {m.error}; torch {t}")
                    break
                ours.append(m)
                theirs.append(t["time_ms"])
                ratios.append(t["time_ms"] / m.time_ms)
                log(f"  round {i}: product {m.time_ms:.4f} ms ({100 * (m.peak_fraction or 0):.0f}% of {m.bound} "
                    f"peak), torch {t['time_ms']:.4f} ms, ratio {ratios[-1]:.2f}")
            if not ratios:
                continue
            rows.append({
                "program": name, "schedule": str(sched), **info, "product_ms": statistics.median(m.time_ms for m in ours),
                "torch_ms": statistics.median(theirs), "ratio": statistics.median(ratios),
                "ratio_min": min(ratios), "ratio_max": max(ratios),
                "gflops": statistics.median(m.gflops or 0 for m in ours),
                "peak_fraction": statistics.median(m.peak_fraction or 0 for m in ours), "bound": ours[0].bound,
                "runtime": ours[0].runtime, "goal": GOALS.get(name)})
    if not rows:
        log("nothing measured")
        return 1
    g5 = gmean([r["ratio"] for r in rows if r["program"] in GOALS]) or float("nan")
    out = {"threads": args.threads, "budget": args.budget, "rounds": args.rounds,
           "peaks": peaks.to_json() if peaks else None, "rows": rows, "geomean_samples": g5,
           "geomean_all": gmean([r["ratio"] for r in rows])}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"\nPyTorch eager vs the product's best ({args.threads} threads, hill @{args.budget} or the policy; "
          f"{args.rounds} interleaved rounds; ratio = PyTorch time / product time, >1: the product is faster)\n")
    print("| program | product's schedule | product ms | PyTorch ms | ratio (min..max) | GFLOP/s | % of roofline "
          "| goal | paper (Fig. 5) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        goal = f">= {r['goal']:.1f}x" if r["goal"] else ""
        print(f"| {r['program']} | `{r['schedule']}` | {r['product_ms']:.3f} | {r['torch_ms']:.3f} | "
              f"{r['ratio']:.2f}x ({r['ratio_min']:.2f}..{r['ratio_max']:.2f}) | {r['gflops']:.1f} | "
              f"{100 * r['peak_fraction']:.0f}% {r['bound']} | {goal} | "
              f"{PAPER.get(r['program'], '')} |")
    print(f"\ngeomean over the samples: {g5:.2f}x (goal >= 1.2x)")
    if peaks:
        print(f"machine: FMA peak {peaks.fma_gflops_1:.0f} GFLOP/s on one core, {peaks.fma_gflops_all:.0f} on "
              f"{peaks.cores}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
