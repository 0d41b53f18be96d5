"""engine.rewrite.booleans on real MLIR: a boolean tensor between linalg ops (PyTorch attention's "safe softmax":
which rows are all -inf, reduced with andi, read by a select) compiles and computes what it should; before,
lowering its i1 stores aborted MLIR."""

from __future__ import annotations

import textwrap

import numpy as np

PROGRAM = textwrap.dedent("""\
    #id = affine_map<(d0, d1) -> (d0, d1)>
    #row = affine_map<(d0, d1) -> (d0, 0)>
    func.func @forward(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
      %zero = arith.constant 0.0 : f32
      %true = arith.constant true
      %e = tensor.empty() : tensor<8x64xi1>
      %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%x : tensor<8x64xf32>) outs(%e : tensor<8x64xi1>) {
        ^bb0(%i: f32, %o: i1):
          %c = arith.cmpf olt, %i, %zero : f32
          linalg.yield %c : i1
      } -> tensor<8x64xi1>
      %e1 = tensor.empty() : tensor<8x1xi1>
      %t = linalg.fill ins(%true : i1) outs(%e1 : tensor<8x1xi1>) -> tensor<8x1xi1>
      %all = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
          ins(%neg : tensor<8x64xi1>) outs(%t : tensor<8x1xi1>) {
        ^bb0(%i: i1, %o: i1):
          %a = arith.andi %i, %o : i1
          linalg.yield %a : i1
      } -> tensor<8x1xi1>
      %e2 = tensor.empty() : tensor<8x64xf32>
      %r = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%all, %x : tensor<8x1xi1>, tensor<8x64xf32>) outs(%e2 : tensor<8x64xf32>) {
        ^bb0(%a: i1, %i: f32, %o: f32):
          %s = arith.select %a, %zero, %i : f32
          linalg.yield %s : f32
      } -> tensor<8x64xf32>
      return %r : tensor<8x64xf32>
    }
    """)


def test_boolean_tensors_compile_and_compute(tmp_path, cache_dir):
    import subprocess
    import sys

    from mlir_rl_tui import runtime

    src = tmp_path / "safe.mlir"
    src.write_text(PROGRAM)
    # the third vectorizes the andi reduction: its accumulator is reduced as bytes (a vector reduction)
    for k, schedule in enumerate(["", "op0: T(4,0) V; op1: T(4,0) NT; op3: T(4,8) V",
                                  "op0: T(4,0) V; op1: T(4,8) V; op3: T(4,8) V"]):
        out = tmp_path / f"safe{k}.so"
        r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(src), "--schedule", schedule, "-o",
                            str(out)], capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr
        x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
        x[2] = -np.abs(x[2]) - 0.1  # an all-negative row: zeroed
        x[5] = -np.abs(x[5]) - 0.1
        want = np.where((x < 0).all(axis=1, keepdims=True), 0.0, x)
        np.testing.assert_array_equal(runtime.load(str(out))(x), want)
