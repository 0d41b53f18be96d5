"""Where the time of a schedule goes, op by op (`mlir-rl-tui apply --per-op`, the app's op tree).

Before the transform script, each top-level op of the entry function's body that holds tagged linalg ops
gets a call to `rl_mark(i)` before it, and one call follows the last; the script then tiles, fuses and
vectorizes the ops in place, between their markers (a producer fused into its consumer moves into the
consumer's interval, and its own is empty). The marker is a C callback registered with the execution engine: it records the
time. Over repeated runs, each group's share is the median of its intervals over the sum of the medians.
A group that holds several tagged ops (a producer fused into its consumer) is reported as one.

Runs only inside a worker (engine.run.worker, mode "per-op"): it parses and compiles like a measurement.
"""

from __future__ import annotations

import ctypes
import time

from mlir_rl_tui.engine.run.compile import (
    Compiled,
    StageError,
    Stages,
    lower,
    mlir_lib_dir,
    parallel_runtime,
    parse_and_transform,
    random_inputs,
)

MARK = "rl_mark"


def instrument(module, func: str) -> list[list[str]]:
    """Insert the markers; returns the op ids of each timed group, in program order."""
    from mlir import ir
    from mlir.dialects import arith
    from mlir.dialects import func as func_d

    from mlir_rl_tui.engine.ir.program import TAG

    fn = None
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == func:
            fn = op
    if fn is None:
        raise StageError("compile", f"no function @{func}")
    i64 = ir.IntegerType.get_signless(64)
    with ir.InsertionPoint.at_block_begin(module.body):
        decl = func_d.FuncOp(MARK, ir.FunctionType.get([i64], []), visibility="private")
        decl.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
    groups: list[list[str]] = []
    body = fn.regions[0].blocks[0]
    tops = list(body.operations)
    for op in tops:
        ids: list[str] = []

        def visit(o, ids=ids):
            if TAG in o.attributes:
                ids.append(ir.StringAttr(o.attributes[TAG]).value)
            return ir.WalkResult.ADVANCE

        op.operation.walk(visit)
        if not ids:
            continue
        with ir.InsertionPoint(op):
            c = arith.ConstantOp(i64, len(groups))
            func_d.CallOp([], MARK, [c.result])
        groups.append(sorted(set(ids), key=lambda s: int(s[2:])))
    terminator = tops[-1]
    with ir.InsertionPoint(terminator):
        c = arith.ConstantOp(i64, len(groups))
        func_d.CallOp([], MARK, [c.result])
    return groups


def per_op(text: str, script_text: str | None, parallel: bool, func: str, arg_specs, result_spec, seed: int,
           runs: int = 20) -> list[dict]:
    """[{"ops": [...], "ms": median, "share": fraction}] for each timed group of the program."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    stages = Stages()
    with ir.Context(), ir.Location.unknown():
        groups: list[list[str]] = []
        module = parse_and_transform(text, script_text, stages, func,
                                      before=lambda m: groups.extend(instrument(m, func)))
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == func:
                op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        runtime = parallel_runtime() if parallel else None
        lower(module, parallel, runtime[0] if runtime else "")
        libs = [f"{mlir_lib_dir()}/libmlir_c_runner_utils.so"] + ([runtime[1]] if runtime else [])
        eng = ExecutionEngine(module, opt_level=3, shared_libs=libs)
        marks: list[tuple[int, int]] = []
        callback = ctypes.CFUNCTYPE(None, ctypes.c_int64)(lambda i: marks.append((i, time.perf_counter_ns())))
        eng.register_runtime(MARK, callback)
        compiled = Compiled(eng, func, arg_specs, result_spec, keep=(module, callback))
        compiled.bind(random_inputs(arg_specs, seed))
        samples: list[list[float]] = [[] for _ in groups]
        for r in range(runs + 2):
            marks.clear()
            compiled.call()
            compiled.free_result()
            if r < 2 or len(marks) != len(groups) + 1:  # warm-up
                continue
            for k in range(len(groups)):
                samples[k].append((marks[k + 1][1] - marks[k][1]) / 1e6)
    med = [sorted(s)[len(s) // 2] if s else 0.0 for s in samples]
    total = sum(med) or 1.0
    return [{"ops": g, "ms": m, "share": m / total} for g, m in zip(groups, med)]
