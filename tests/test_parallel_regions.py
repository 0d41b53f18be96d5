"""Adjacent OpenMP parallel regions merged into one (engine.rewrite.parallel_regions), on real MLIR: how
many regions a schedule forks, what keeps two apart, and that merged code computes the same result in the
engine and in a built library on GNU OpenMP, for any team size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SAMPLES

from mlir_rl_tui.engine import load_file, parse
from mlir_rl_tui.engine.rewrite.parallel_regions import merge
from mlir_rl_tui.engine.run.compile import Stages, parse_and_transform, pipeline
from mlir_rl_tui.engine.schedule.transforms import script

MBR = SAMPLES / "matmul_bias_relu.mlir"  # op0 ReLU, op1 bias add, op2 matmul, op3 fill
ALL_PARALLEL = "op0: TP(32,0) T(1,256) V; op1: TP(32,0) T(1,256) V; op2: TP(32,32,0) T(8,32,1) V; op3: NT"
SERIAL_BETWEEN = "op0: TP(32,0) T(1,256) V; op1: T(32,0) T(1,256) V; op2: TP(32,32,0) T(8,32,1) V; op3: NT"


def _ops(module, name: str) -> int:
    from mlir import ir

    n = []

    def visit(op):
        if op.name == name:
            n.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return len(n)


def _regions(schedule: str) -> tuple[int, int, int]:
    """(parallel regions before merging, after, master blocks after) of the sample under `schedule`."""
    from mlir import ir
    from mlir.passmanager import PassManager

    program = load_file(str(MBR))
    with ir.Context(), ir.Location.unknown():
        module = parse_and_transform(program.text, script(program, parse(schedule)), Stages(), program.func_name)
        PassManager.parse(pipeline(True)[0]).run(module.operation)
        before = _ops(module, "omp.parallel")
        merge(module)
        assert module.operation.verify()
        return before, _ops(module, "omp.parallel"), _ops(module, "omp.master")


def test_three_parallel_ops_fork_once():
    assert _regions(ALL_PARALLEL) == (3, 1, 0)


def test_a_serial_op_between_two_regions_runs_on_one_thread_inside_the_merged_one():
    assert _regions(SERIAL_BETWEEN) == (2, 1, 1)


def test_a_value_read_from_memory_between_two_regions_keeps_them_apart():
    """A load between two regions may read what the first wrote and feeds what follows: neither hoisted
    above the first region nor put in a master block (it has a result), so nothing is merged."""
    from mlir import ir

    text = """
    func.func @f(%m: memref<4xf32>) -> f32 {
      omp.parallel {
        omp.terminator
      }
      %c0 = arith.constant 0 : index
      %v = memref.load %m[%c0] : memref<4xf32>
      omp.parallel {
        omp.terminator
      }
      %a = memref.alloc() : memref<4xf32>
      memref.dealloc %a : memref<4xf32>
      omp.parallel {
        omp.terminator
      }
      return %v : f32
    }"""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        assert merge(module) == 1  # the last two (an allocation and its deallocation between them)
        assert module.operation.verify() and _ops(module, "omp.parallel") == 2
        body = str(module)
        assert body.index("memref.load") < body.rindex("omp.parallel") < body.index("memref.dealloc")


def test_merged_regions_compute_the_right_result_in_the_engine(engine):
    program = load_file(str(MBR))
    for schedule in (ALL_PARALLEL, SERIAL_BETWEEN):
        m = engine.measure(program, parse(schedule))
        assert m.status == "ok" and m.validated, (schedule, m.status, m.error)


def test_a_library_of_merged_regions_is_right_for_any_team(tmp_path, cache_dir):
    """Built on GNU OpenMP through engine/run/kmpc_gomp.c (its master block and barriers): teams of 1, 2, 3
    (uneven shares) and 8, against numpy."""
    lib = tmp_path / "mbr.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(MBR), "--schedule", SERIAL_BETWEEN,
                        "-o", str(lib), "--json"], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0 and json.loads(r.stdout)["runtime"] == "gomp", r.stderr
    probe = (f"import numpy as np; from mlir_rl_tui import runtime; k = runtime.load({str(lib)!r}); "
             "rng = np.random.default_rng(3); a = rng.standard_normal((256, 512), np.float32); "
             "b = rng.standard_normal((512, 256), np.float32); c = rng.standard_normal(256).astype(np.float32); "
             "print(float(np.abs(k(a, b, c) - np.maximum(a @ b + c, 0)).max()))")
    for threads in ("1", "2", "3", "8"):
        got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "OMP_NUM_THREADS": threads})
        assert got.returncode == 0 and float(got.stdout) < 1e-3, (threads, got.stdout, got.stderr)
