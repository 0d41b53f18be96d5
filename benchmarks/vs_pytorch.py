"""The product's best schedule against PyTorch eager, on the same CPU, interleaved in one run.

For each single-op sample (and, with --dataset, each one-op program of a data set's eval split):
1. the product's best schedule: hill climbing with --budget measurements, and the shipped policy's one
   pass (`optimize`); the faster of the two (measured once more each) is "the product's best";
2. then --rounds interleaved rounds A B A B: the product's schedule measured fresh by the engine (its
   timing protocol, pinned OpenMP threads), and PyTorch eager in a fresh process with the same thread
   count and the same timing protocol (agent.torch_reference: channels_last for NHWC ops);
3. per program: the ratio PyTorch time / product time (median over rounds, with min..max), GFLOP/s and
   % of the machine's roofline (FMA peak or bandwidth, engine.measure.roofline). Geomean over the programs.

    .venv/bin/python benchmarks/vs_pytorch.py [--budget 100] [--rounds 5] [--threads 2] [--dataset DIR]
    .venv/bin/python benchmarks/vs_pytorch.py --blocks [--only MLP,Attention] [--no-compile] [--passes none]

With --blocks, the programs are the model blocks of tests/data/torch/blocks.py, imported fresh with
`mlir-rl-tui import` (torch-mlir and its graph passes, `--passes`; PyTorch's output beside each, and every
measurement is validated against it), and PyTorch runs the nn.Module itself: eager in every round, and under `torch.compile` in the same
process (compiled and warmed up before it is timed).

Run it on an otherwise idle machine (it takes ~15 minutes with the default budget).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from mlir_rl_tui.agent.evaluate import gmean
from mlir_rl_tui.agent.torch_reference import run_in_subprocess
from mlir_rl_tui.engine import Engine, Schedule, load_file
from mlir_rl_tui.engine.config import MeasureConfig
from mlir_rl_tui.engine.search import search

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SAMPLES = ["matmul", "conv2d", "maxpool", "add", "relu"]
GOALS = {"matmul": 1.0, "conv2d": 1.0, "maxpool": 2.0, "add": 1.0, "relu": 1.0}
PAPER = {"matmul": "2.16x slower", "conv2d": "6.71x slower", "maxpool": "3.3x faster"}


def best_schedule(eng: Engine, prog, budget: int, seed: int, log) -> tuple[Schedule, dict]:
    """Hill climbing @budget and the policy's one pass; the faster (each measured once more, fresh)."""
    found = {}
    r = search(eng, prog, "hill", budget, seed=seed)
    found["hill"] = r.schedule
    try:
        from mlir_rl_tui.agent.suggest import load_policy

        pol = load_policy(None)
        if pol is not None:
            found["policy"] = pol.one_pass(prog, eng.openmp)
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
    ap.add_argument("--blocks", action="store_true", help="the model blocks of tests/data/torch/blocks.py instead")
    ap.add_argument("--no-compile", action="store_true", help="--blocks: skip torch.compile")
    ap.add_argument("--passes", default="all", help="--blocks: import's graph passes (all, none, or a list: bn,nhwc,...)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.blocks:
        return blocks(args)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    paths = [os.path.join(ROOT, "samples", f"{n}.mlir") for n in (args.only.split(",") if args.only else SAMPLES)]
    if args.dataset:
        from mlir_rl_tui.engine.corpus.programs import program_paths

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
                from mlir_rl_tui.engine import parse

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
                    f"peak), torch {t['time_ms']:.4f} ms, ratio {ratios[-1]:.2f}"
                    + (" (far cores after every retry: engine.measure.contention.far)" if m.far else ""))
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


BLOCKS_FILE = os.path.join(ROOT, "tests", "data", "torch", "blocks.py")
BLOCK_GOALS = {"geomean": 1.0, "each": 0.5, "ResNetBlock": 0.8, "Attention": 0.8}


def blocks(args) -> int:
    """The model blocks: imported, searched, then product / eager / torch.compile in interleaved rounds."""
    import importlib.util
    import tempfile

    from mlir_rl_tui.agent.torch_import import import_module, parse_passes

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    spec = importlib.util.spec_from_file_location("_blocks_inputs", BLOCKS_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    names = args.only.split(",") if args.only else list(mod.INPUTS)
    given = dict(s.split("=", 1) for s in args.schedule)
    rows = []
    with tempfile.TemporaryDirectory(prefix="vs-pytorch-blocks-") as tmp, Engine(config=MeasureConfig()) as eng:
        for name in names:
            shape = mod.INPUTS[name]
            path = os.path.join(tmp, f"{name}.mlir")
            done = import_module(f"{BLOCKS_FILE}:{name}", [shape], path, passes=parse_passes(args.passes))["passes"]
            prog = load_file(path)
            base = eng.measure(prog, Schedule({}), use_cache=False)
            if not base.ok:
                log(f"{name}: the untransformed program fails: {base.status} {base.error}")
                continue
            log(f"{name}: {len(prog.ops)} ops (import passes: {done or 'none'}), baseline {base.time_ms:.3f} ms "
                "(validated against PyTorch); "
                f"searching (hill @{args.budget}) ...")
            if name in given:
                from mlir_rl_tui.engine import parse

                sched, info = parse(given[name]), {"source": "given"}
            else:
                sched, info = best_schedule(eng, prog, args.budget, args.seed, log)
            ours, eager, compiled = [], [], []
            for i in range(args.rounds):
                m = eng.measure(prog, sched, use_cache=False)
                t = run_in_subprocess(path, args.threads, timeout=900, module=(f"{BLOCKS_FILE}:{name}", [shape]),
                                      compiled=not args.no_compile and i == 0)
                if not m.ok or t is None:
                    log(f"  round {i}: product {m.status} {m.error}; torch {t}")
                    break
                ours.append(m.time_ms)
                eager.append(t["time_ms"])
                if "compiled_ms" in t:
                    compiled.append(t["compiled_ms"])
                log(f"  round {i}: product {m.time_ms:.4f} ms, eager {t['time_ms']:.4f} ms"
                    + (f", torch.compile {t['compiled_ms']:.4f} ms" if "compiled_ms" in t else "")
                    + f", ratio {t['time_ms'] / m.time_ms:.2f}")
            if not ours:
                continue
            ratios = [e / o for e, o in zip(eager, ours, strict=True)]
            rows.append({"block": name, "input": shape, "ops": len(prog.ops), "schedule": str(sched), **info,
                         "baseline_ms": base.time_ms, "product_ms": statistics.median(ours),
                         "eager_ms": statistics.median(eager), "ratio": statistics.median(ratios),
                         "ratio_min": min(ratios), "ratio_max": max(ratios),
                         "compiled_ms": compiled[0] if compiled else None,
                         "ratio_compiled": compiled[0] / statistics.median(ours) if compiled else None,
                         "untransformed_ratio": statistics.median(eager) / base.time_ms})
    if not rows:
        log("nothing measured")
        return 1
    g = gmean([r["ratio"] for r in rows])
    gc = gmean([r["ratio_compiled"] for r in rows if r["ratio_compiled"]])
    out = {"threads": args.threads, "budget": args.budget, "rounds": args.rounds, "passes": args.passes, "rows": rows,
           "geomean_eager": g, "geomean_compiled": gc, "geomean_untransformed": gmean([r["untransformed_ratio"] for r in rows])}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"\nModel blocks: PyTorch vs the product's best ({args.threads} threads, hill @{args.budget} or the "
          f"policy; {args.rounds} interleaved rounds against eager, torch.compile timed once; ratio = PyTorch "
          f"time / product time, >1: the product is faster; every product figure validated against PyTorch)\n")
    print("| block | input | ops | product's schedule | untransformed / eager | product ms | eager ms | "
          "vs eager (min..max) | torch.compile ms | vs compile |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        comp = f"{r['compiled_ms']:.3f} | {r['ratio_compiled']:.2f}x" if r["compiled_ms"] else "- | -"
        print(f"| {r['block']} | {r['input']} | {r['ops']} | `{r['schedule']}` | {r['untransformed_ratio']:.2f}x | "
              f"{r['product_ms']:.3f} | {r['eager_ms']:.3f} | {r['ratio']:.2f}x ({r['ratio_min']:.2f}..{r['ratio_max']:.2f}) | "
              f"{comp} |")
    print(f"\ngeomean vs eager {g:.2f}x (goal >= {BLOCK_GOALS['geomean']:.1f}x, no block below "
          f"{BLOCK_GOALS['each']:.1f}x)" + (f"; vs torch.compile {gc:.2f}x" if gc else "")
          + f"; untransformed vs eager {out['geomean_untransformed']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
