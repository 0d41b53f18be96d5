"""How the shipped policy (agent/checkpoints/default.pt) is trained, end to end, in ~30 minutes on 2 cores.

1. programs: `engine.dataset` when present, else `synthetic_dataset` below (matmul, matmul+bias+ReLU,
   add, ReLU, conv2d, max-pool and matmul chains at random shapes; train/eval split by seed);
2. imitation data: hill climbing (engine.search, or agent.expert's) on every training program, the best schedule kept as a
   search trace (traces/*.jsonl);
3. behaviour cloning on those traces (policy + value pre-training);
4. a short PPO run from the cloned weights (final reward = log speedup, measured through the cache);
5. the result is written (float16) to agent/checkpoints/default.pt with default.json describing the run.

    python -m agent.train_default --work runs/default [--train 32 --eval 8 --budget 30 --iterations 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import time
from concurrent.futures import ThreadPoolExecutor

import torch

CHECKPOINTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints")

_MM = """func.func @forward(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<{m}x{n}xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %2 = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%1 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %2 : tensor<{m}x{n}xf32>
}}
"""
_MM_RELU = """#map = affine_map<(d0, d1) -> (d0, d1)>
#mb = affine_map<(d0, d1) -> (d1)>
func.func @forward(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>, %c: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<{m}x{n}xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %2 = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) outs(%1 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %3 = tensor.empty() : tensor<{m}x{n}xf32>
  %4 = linalg.generic {{indexing_maps = [#map, #mb, #map], iterator_types = ["parallel", "parallel"]}} ins(%2, %c : tensor<{m}x{n}xf32>, tensor<{n}xf32>) outs(%3 : tensor<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  }} -> tensor<{m}x{n}xf32>
  return %4 : tensor<{m}x{n}xf32>
}}
"""
_ADD = """func.func @forward(%a: tensor<{m}x{n}xf32>, %b: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = tensor.empty() : tensor<{m}x{n}xf32>
  %1 = linalg.add ins(%a, %b : tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>) outs(%0 : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %1 : tensor<{m}x{n}xf32>
}}
"""
_RELU = """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%a: tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<{m}x{n}xf32>
  %1 = linalg.generic {{indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}} ins(%a : tensor<{m}x{n}xf32>) outs(%0 : tensor<{m}x{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %r = arith.maximumf %x, %cst : f32
    linalg.yield %r : f32
  }} -> tensor<{m}x{n}xf32>
  return %1 : tensor<{m}x{n}xf32>
}}
"""
_CONV = """func.func @forward(%a: tensor<1x{ih}x{ih}x{c}xf32>, %w: tensor<3x3x{c}x{f}xf32>) -> tensor<1x{h}x{h}x{f}xf32> {{
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x{h}x{h}x{f}xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x{h}x{h}x{f}xf32>) -> tensor<1x{h}x{h}x{f}xf32>
  %2 = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}} ins(%a, %w : tensor<1x{ih}x{ih}x{c}xf32>, tensor<3x3x{c}x{f}xf32>) outs(%1 : tensor<1x{h}x{h}x{f}xf32>) -> tensor<1x{h}x{h}x{f}xf32>
  return %2 : tensor<1x{h}x{h}x{f}xf32>
}}
"""
_POOL = """func.func @forward(%a: tensor<1x{ih}x{ih}x{c}xf32>) -> tensor<1x{h}x{h}x{c}xf32> {{
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<1x{h}x{h}x{c}xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x{h}x{h}x{c}xf32>) -> tensor<1x{h}x{h}x{c}xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nhwc_max {{dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}} ins(%a, %2 : tensor<1x{ih}x{ih}x{c}xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x{h}x{h}x{c}xf32>) -> tensor<1x{h}x{h}x{c}xf32>
  return %3 : tensor<1x{h}x{h}x{c}xf32>
}}
"""


def _one(rnd: random.Random) -> tuple[str, str]:
    kind = rnd.choices(["matmul", "matmul_relu", "add", "relu", "conv", "pool"], [4, 3, 1, 1, 2, 1])[0]
    d = lambda: rnd.choice([64, 128, 192, 256, 320, 384, 512])  # noqa: E731
    if kind == "matmul":
        m, n, k = d(), d(), d()
        return f"matmul_{m}x{n}x{k}", _MM.format(m=m, n=n, k=k)
    if kind == "matmul_relu":
        m, n, k = d(), d(), d()
        return f"matmul_bias_relu_{m}x{n}x{k}", _MM_RELU.format(m=m, n=n, k=k)
    if kind in ("add", "relu"):
        m, n = rnd.choice([256, 512, 1024]), rnd.choice([256, 512, 1024])
        return f"{kind}_{m}x{n}", (_ADD if kind == "add" else _RELU).format(m=m, n=n)
    if kind == "conv":
        h, c, f = rnd.choice([14, 28, 56]), rnd.choice([32, 64]), rnd.choice([32, 64])
        return f"conv2d_{h}x{c}x{f}", _CONV.format(ih=h + 2, h=h, c=c, f=f)
    h, c = rnd.choice([28, 56]), rnd.choice([32, 64])
    return f"maxpool_{h}x{c}", _POOL.format(ih=2 * h + 1, h=h, c=c)


def synthetic_dataset(out: str, n_train: int, n_eval: int, seed: int = 0) -> str:
    """Write programs and manifest.json ({"train": [...], "eval": [...]}); returns the manifest path."""
    rnd = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    man: dict[str, list[str]] = {"train": [], "eval": []}
    names: set[str] = set()
    for split, n in (("train", n_train), ("eval", n_eval)):
        while len(man[split]) < n:
            name, text = _one(rnd)
            if name in names:
                continue
            names.add(name)
            with open(os.path.join(out, name + ".mlir"), "w") as f:
                f.write(text)
            man[split].append(name + ".mlir")
    path = os.path.join(out, "manifest.json")
    with open(path, "w") as f:
        json.dump(man, f, indent=1)
    return path


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default="runs/default")
    p.add_argument("--programs", help="dataset folder or manifest (default: generate one)")
    p.add_argument("--train", type=int, default=32)
    p.add_argument("--eval", type=int, default=8)
    p.add_argument("--budget", type=int, default=30, help="hill-climbing measurements per training program")
    p.add_argument("--search", choices=["engine", "agent"], default="engine",
                   help="hill climbing of engine.search (default) or agent.expert's fallback")
    p.add_argument("--bc-epochs", type=int, default=60)
    p.add_argument("--iterations", type=int, default=4, help="PPO iterations after BC")
    p.add_argument("--batch", type=int, default=64, help="PPO programs per batch")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from agent import bc, expert, ppo
    from agent.data import load_programs
    from agent.policy import ActorCritic, save
    from engine import Engine
    from engine.config import MeasureConfig

    t0 = time.time()
    log = lambda *x: print(f"[{time.time() - t0:7.1f}s]", *x, flush=True)  # noqa: E731
    os.makedirs(a.work, exist_ok=True)
    manifest = a.programs or synthetic_dataset(os.path.join(a.work, "dataset"), a.train, a.eval, a.seed)
    train = load_programs(manifest, split="train")
    log(f"{len(train)} training programs from {manifest}")

    traces = os.path.join(a.work, "traces")
    os.makedirs(traces, exist_ok=True)
    found: dict[str, float] = {}
    with Engine(config=MeasureConfig(runs=3)) as eng:
        def one(i: int) -> None:
            prog = train[i]
            if a.search == "engine":
                sched, m = expert.search_best(eng, prog, a.budget, seed=a.seed + i)
            else:
                sched, m = expert.hill_climb(eng, prog, a.budget, seed=a.seed + i)
            path = os.path.join(traces, f"{i:03d}.jsonl")
            if os.path.exists(path):
                os.remove(path)
            expert.write_trace(path, prog, sched, m)
            found[prog.path] = m.speedup or 0.0
            log(f"hill {i + 1}/{len(train)} {os.path.basename(prog.path)}: {m.speedup:.2f}x {sched}")

        with ThreadPoolExecutor(2) as ex:
            list(ex.map(one, range(len(train))))
        search_evaluated = eng.evaluated
    t_search = time.time() - t0

    torch.set_num_threads(2)
    examples = [e for f in sorted(os.listdir(traces)) for e in bc.examples_from_trace(os.path.join(traces, f), train)]
    model = ActorCritic()
    bc_rows = []
    bc.behaviour_cloning(model, examples, a.bc_epochs, seed=a.seed,
                         log=lambda ep, loss: bc_rows.append((ep, loss)))
    bc_path = os.path.join(a.work, "bc.pt")
    save(model, bc_path, {"trained_by": "bc", "examples": len(examples), "epochs": a.bc_epochs})
    with open(os.path.join(a.work, "bc.csv"), "w") as f:
        f.write("epoch,loss\n" + "".join(f"{e},{x:.5f}\n" for e, x in bc_rows))
    t_bc = time.time() - t0
    log(f"BC on {len(examples)} decisions: loss {bc_rows[0][1]:.3f} -> {bc_rows[-1][1]:.3f}")

    args = ppo.Args(programs=[manifest], out=os.path.join(a.work, "ppo"), seed=a.seed, iterations=a.iterations,
                    init=bc_path, threads=2, programs_per_batch=a.batch)
    final = ppo.train(args, on_iteration=lambda row: log(
        f"PPO it {row['iteration']}: reward {row['charts/reward']:.3f} speedup {row['charts/speedup_gmean']:.2f}x "
        f"cache hits {row['charts/cache_hit_rate']:.2f}"))
    # ship whichever of the BC and PPO policies schedules the training programs better (greedy, one pass)
    from agent.suggest import load_policy
    from engine import Session

    scores = {}
    with Engine(config=MeasureConfig(runs=3)) as eng:
        for name, path in (("bc", bc_path), ("ppo", final)):
            pol = load_policy(path)
            sp = [eng.measure(prog, pol.schedule(Session(prog)).schedule).speedup or 0.0 for prog in train]
            scores[name] = _gmean(sp)
            log(f"greedy {name} policy on the training programs: gmean {scores[name]:.2f}x")
    chosen = final if scores["ppo"] >= scores["bc"] else bc_path
    t_all = time.time() - t0
    os.makedirs(CHECKPOINTS, exist_ok=True)
    shutil.copy(chosen, os.path.join(CHECKPOINTS, "default.pt"))
    import sys

    info = {
        "command": "python -m agent.train_default " + " ".join(sys.argv[1:] if argv is None else argv),
        "how": "hill-climbing search traces -> behaviour cloning -> PPO (python -m agent.train_default)",
        "programs": manifest, "train_programs": len(train), "hill_budget": a.budget, "hill": a.search,
        "hill_measurements": search_evaluated, "hill_gmean_speedup": _gmean(list(found.values())),
        "bc_decisions": len(examples), "bc_epochs": a.bc_epochs, "bc_loss": [bc_rows[0][1], bc_rows[-1][1]],
        "ppo": {k: v for k, v in vars(args).items() if k != "programs"},
        "greedy_train_gmean": scores, "shipped": "ppo" if chosen == final else "bc",
        "seconds": {"search": round(t_search), "bc": round(t_bc - t_search), "ppo": round(t_all - t_bc),
                    "total": round(t_all)},
        "machine": os.uname().machine, "cores": os.cpu_count(),
    }
    with open(os.path.join(CHECKPOINTS, "default.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"done: {os.path.join(CHECKPOINTS, 'default.pt')}")


def _gmean(xs: list[float]) -> float:
    import math

    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


if __name__ == "__main__":
    main()

