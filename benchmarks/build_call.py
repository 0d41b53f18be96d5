"""Does a kernel built with `mlir-rl-tui build` run, called from Python, as fast as `apply` reports?

For each schedule of the matmul sample (serial and parallel): `engine.run.native.build_library` writes the
shared library, `mlir_rl_tui.runtime.load` loads it in this process, and then --rounds interleaved rounds
A B A B: A, the engine measures the schedule fresh (no cache, its workers, its timing protocol: what
`apply` reports); B, this process calls the library from Python (`kernel(a, b)`, numpy arrays in, a numpy
array out: what a user's program pays, allocation of the result and the call's Python overhead included),
timed with the same protocol (engine.measure.timing). Reports per schedule the ratio B / A per round (median and
min..max; goal <= 1.10) and checks the library's result against numpy.

    .venv/bin/python benchmarks/build_call.py [--rounds 5] [--json]

Then the fixed cost of a call (--rounds interleaved rounds, each the median of 2000 calls): a 4x16 add
built the same way, called as `runtime.load(...)(a, b)` with numpy arrays and as `mlir_rl_tui.torch.load`'s
module with torch tensors, against the engine's figure for the same kernel (what `apply` reports): the
difference is what a call costs beyond the kernel.

Run on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.measure.timing import TimingConfig, time_kernel
from mlir_rl_tui.engine.run.native import build_library
from mlir_rl_tui.engine.store.cache import Cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCHEDULES = [
    ("serial", "op0: T(8,32,1) V; op1: NT"),
    ("parallel", "op0: TP(32,32,0) T(8,32,1) V; op1: NT"),
]
GOAL = 1.10


def time_library(kernel, args: list[np.ndarray]) -> float:
    """The median ms of `kernel(*args)` from Python, by the engine's timing protocol."""

    def call() -> float:
        t0 = time.perf_counter()
        kernel(*args)
        return (time.perf_counter() - t0) * 1e3

    first = call()
    return time_kernel(call, first, TimingConfig()).candidate.estimate()[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    from mlir_rl_tui import runtime

    prog = load_file(os.path.join(ROOT, "samples", "matmul.mlir"))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(x.shape).astype(np.float32) for x in prog.args]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(os.path.join(tmp, "measurements.sqlite"))
        with Engine(cache=cache, reuse=False) as eng:
            for kind, text in SCHEDULES:
                sched = parse(text)
                lib = os.path.join(tmp, f"{kind}.so")
                build_library(eng, prog, sched, lib)
                kernel = runtime.load(lib)
                ok = bool(np.allclose(kernel(*args), args[0] @ args[1], rtol=1e-4, atol=1e-3))
                applied, called = [], []
                for _ in range(a.rounds):
                    m = eng.measure(prog, sched)
                    if m.status != "ok":
                        print(f"{text}: {m.status} {m.error}", file=sys.stderr)
                        return 2
                    applied.append(m.time_ms)
                    called.append(time_library(kernel, args))
                ratios = [c / p for c, p in zip(called, applied, strict=True)]
                rows.append({"schedule": text, "runtime": kernel.meta["runtime"], "matches_numpy": ok,
                             "apply_ms": round(statistics.median(applied), 4),
                             "library_ms": round(statistics.median(called), 4),
                             "ratio": round(statistics.median(ratios), 3),
                             "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3)})
    over = overhead(a.rounds)
    if a.json:
        print(json.dumps({"schedules": rows, "overhead": over}, indent=1))
    else:
        print(f"{'schedule':<42} {'runtime':<8} {'apply ms':>9} {'library ms':>10} {'library/apply':>22} numpy")
        for r in rows:
            print(f"{r['schedule']:<42} {r['runtime']:<8} {r['apply_ms']:>9.4f} {r['library_ms']:>10.4f} "
                  f"{r['ratio']:>8.3f} ({r['ratio_min']:.3f}..{r['ratio_max']:.3f}) "
                  f"{'ok' if r['matches_numpy'] else 'WRONG'}")
        print(f"goal: library / apply <= {GOAL:.2f} (median over {a.rounds} interleaved rounds)")
        print(f"a call's fixed cost (4x16 add, engine {over['engine_us']:.2f} us): numpy "
              f"{over['numpy_us']:.2f} us ({over['numpy_us_min']:.2f}..{over['numpy_us_max']:.2f}), torch module "
              f"{over['torch_us']:.2f} us ({over['torch_us_min']:.2f}..{over['torch_us_max']:.2f}); beyond the "
              f"kernel: {over['numpy_us'] - over['engine_us']:.2f} us and {over['torch_us'] - over['engine_us']:.2f} us")
    return 0 if all(r["ratio"] <= GOAL and r["matches_numpy"] for r in rows) else 1


TINY = """func.func @forward(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.add ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
"""


def _median_call_us(fn, n: int = 2000) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def overhead(rounds: int) -> dict:
    """A call's fixed cost: the tiny add through the numpy runtime and the torch module, against the
    engine's figure of the same kernel, in interleaved rounds (medians over rounds, min..max)."""
    import torch

    import mlir_rl_tui.torch as mtorch
    from mlir_rl_tui import runtime
    from mlir_rl_tui.engine.ir.loader import load_text

    prog = load_text(TINY, "tiny-add")
    sched = parse("op0: V")
    a, b = np.ones((4, 16), np.float32), np.ones((4, 16), np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    eng_us, np_us, t_us = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Cache(os.path.join(tmp, "measurements.sqlite"))
        with Engine(cache=cache, reuse=False) as eng:
            lib = os.path.join(tmp, "tiny.so")
            build_library(eng, prog, sched, lib)
            kernel, module = runtime.load(lib), mtorch.load(lib)
            for _ in range(rounds):
                eng_us.append(eng.measure(prog, sched).time_ms * 1e3)
                np_us.append(_median_call_us(lambda: kernel(a, b)))
                t_us.append(_median_call_us(lambda: module(ta, tb)))
    med = statistics.median
    return {"engine_us": round(med(eng_us), 3), "numpy_us": round(med(np_us), 3), "numpy_us_min": round(min(np_us), 3),
            "numpy_us_max": round(max(np_us), 3), "torch_us": round(med(t_us), 3), "torch_us_min": round(min(t_us), 3),
            "torch_us_max": round(max(t_us), 3)}


if __name__ == "__main__":
    sys.exit(main())
