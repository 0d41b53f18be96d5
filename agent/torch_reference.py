"""PyTorch eager as the reference a user would run otherwise: the same op, layout and thread count.

`reference(program)` maps a one-op program to a PyTorch callable on the engine's own seeded inputs, in the
same memory layout (NHWC convolutions and poolings run on channels_last tensors, which is the same memory
order), or None. `reference_output` is its result as a numpy array, to check the program against PyTorch.
`time_reference` times it with the engine's own protocol (engine.measure.timing: warm-up until stable, rounds,
median of the round minima), so both sides of a comparison use one estimator. Run it in a fresh process
(`python -m mlir_rl_tui.agent.torch_reference FILE --threads N`) to keep PyTorch's spinning OpenMP threads away
from the engine's timings; `benchmarks/vs_pytorch.py` and `mlir-rl-tui evaluate` do.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable

from mlir_rl_tui.engine.ir.program import Program


def reference(prog: Program, seed: int = 0) -> Callable[[], object] | None:
    """A PyTorch callable computing `prog` (a single op, fills aside), or None if there is none."""
    import torch
    import torch.nn.functional as F

    from mlir_rl_tui.engine.run.compile import random_inputs

    names = [o.name for o in prog.ops if o.name != "linalg.fill"]
    if len(names) != 1:
        return None
    op = next(o for o in prog.ops if o.name == names[0])
    name = names[0]
    x = [torch.from_numpy(a) for a in random_inputs(prog.args, seed)]  # the engine's inputs
    strides = re.findall(r"strides = dense<(\d+)>", prog.text)
    stride = int(strides[0]) if strides else 1
    window = [lp.bound for lp in op.loops if lp.iterator == "reduction"]  # pooling: (kh, kw)
    body = set(k for k, v in op.arith.items() if v)
    if name == "linalg.matmul" and len(x) == 2:
        return lambda: torch.mm(x[0], x[1])
    if name == "linalg.batch_matmul" and len(x) == 2:
        return lambda: torch.bmm(x[0], x[1])
    if name == "linalg.add" and len(x) == 2:
        return lambda: torch.add(x[0], x[1])
    if name == "linalg.generic" and len(x) == 1 and "arith.maximumf" in prog.text and not body:
        return lambda: torch.relu(x[0])
    if name == "linalg.conv_2d_nhwc_hwcf" and len(x) == 2:
        inp = x[0].permute(0, 3, 1, 2)  # a view: NCHW sizes over NHWC memory = channels_last
        w = x[1].permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
        return lambda: F.conv2d(inp, w, stride=stride)
    if name == "linalg.pooling_nhwc_max" and len(x) == 1 and len(window) == 2:
        inp = x[0].permute(0, 3, 1, 2)
        return lambda: F.max_pool2d(inp, tuple(window), stride)
    return None


def reference_output(prog: Program, seed: int = 0):
    """PyTorch's result on the engine's seeded inputs (numpy, in the program's result layout), or None."""
    import torch

    fn = reference(prog, seed)
    if fn is None:
        return None
    with torch.no_grad():
        out = fn()
    if out.dim() == 4 and out.shape[1:] != tuple(prog.results[0].shape[1:]):
        out = out.permute(0, 2, 3, 1)  # NCHW sizes over NHWC memory: back to the program's NHWC
    return out.contiguous().numpy()


def time_reference(prog: Program, threads: int) -> dict | None:
    """{"time_ms", "time_ci_ms", "runs"} of PyTorch eager on `threads` threads, or None."""
    import torch

    from mlir_rl_tui.engine.measure.timing import TimingConfig, time_kernel

    torch.set_num_threads(threads)
    fn = reference(prog)
    if fn is None:
        return None

    def call() -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e6

    with torch.no_grad():
        first = call()
        timed = time_kernel(call, first, TimingConfig())
    t, lo, hi = timed.candidate.estimate()
    return {"time_ms": t, "time_ci_ms": [lo, hi], "runs": timed.candidate.runs}


def time_module(spec: str, inputs: list[str], threads: int, compiled: bool = False) -> dict:
    """`time_reference` of a whole nn.Module (`FILE.py:NAME`, as `import` takes it) on the engine's seeded
    inputs of the given shapes, eager; with `compiled`, also under `torch.compile` (compiled and warmed up
    before it is timed): {"time_ms", "time_ci_ms", "runs"[, "compiled_ms", "compiled_ci_ms"]}."""
    import torch

    from mlir_rl_tui.agent.torch_import import load_module, parse_input
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.measure.timing import TimingConfig, time_kernel
    from mlir_rl_tui.engine.run.compile import random_inputs

    torch.set_num_threads(threads)
    model = load_module(spec)
    xs = [torch.from_numpy(a) for a in random_inputs([TensorSpec(*parse_input(t)) for t in inputs], 0)]

    def timed(fn, warm: int) -> tuple[float, float, float, int]:
        def call() -> float:
            t0 = time.perf_counter_ns()
            fn(*xs)
            return (time.perf_counter_ns() - t0) / 1e6

        for _ in range(warm):  # torch.compile: the first calls compile
            first = call()
        res = time_kernel(call, first, TimingConfig())
        return (*res.candidate.estimate(), res.candidate.runs)

    with torch.no_grad():
        t, lo, hi, runs = timed(model, 1)
        out = {"time_ms": t, "time_ci_ms": [lo, hi], "runs": runs}
        if compiled:
            t, lo, hi, _ = timed(torch.compile(model), 3)
            out.update(compiled_ms=t, compiled_ci_ms=[lo, hi])
    return out


def run_in_subprocess(path: str, threads: int, timeout: float = 300.0, module: tuple[str, list[str]] | None = None,
                      compiled: bool = False) -> dict | None:
    """`time_reference` (or, with `module=(FILE.py:NAME, input shapes)`, `time_module`) in a fresh process
    pinned like the engine's workers (one thread per core)."""
    from mlir_rl_tui.engine.run.child import run_module

    env = dict(os.environ, OMP_PROC_BIND="close", OMP_PLACES="cores", OPENBLAS_NUM_THREADS="1")
    extra = []
    if module is not None:
        extra = ["--module", module[0], *[f"--input={t}" for t in module[1]]] + (["--compile"] if compiled else [])
    out = run_module("mlir_rl_tui.agent.torch_reference", [path, "--threads", str(threads), *extra], timeout, env)
    if out.problem or not out.stdout.strip():
        return None
    res = json.loads(out.stdout)
    return res or None


def main() -> int:
    from mlir_rl_tui.engine.ir.program import load_file

    ap = argparse.ArgumentParser(description="time PyTorch eager on a one-op program (or a whole module)")
    ap.add_argument("file")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--module", help="FILE.py:NAME: time this nn.Module instead (FILE is then unused)")
    ap.add_argument("--input", action="append", default=[], help="the module's input shapes, as `import` takes them")
    ap.add_argument("--compile", action="store_true", help="the module under torch.compile too")
    args = ap.parse_args()
    if args.module:
        print(json.dumps(time_module(args.module, args.input, args.threads, args.compile)))
        return 0
    print(json.dumps(time_reference(load_file(args.file), args.threads) or {}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
