"""engine.rewrite.math_approx through the real pipeline: f32 erf, exp and tanh, vectorized and scalar, built into a
library and compared with float64 math on a dense grid and at the edges (overflow, underflow, NaN)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

N = 8192
PROGRAM = textwrap.dedent("""\
    #id = affine_map<(d0) -> (d0)>
    func.func @forward(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
      %e = tensor.empty() : tensor<{n}xf32>
      %r = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel"]}}
          ins(%x : tensor<{n}xf32>) outs(%e : tensor<{n}xf32>) {{
        ^bb0(%i: f32, %o: f32):
          %y = math.{fn} %i : f32
          linalg.yield %y : f32
      }} -> tensor<{n}xf32>
      return %r : tensor<{n}xf32>
    }}
    """)


def built(tmp_path, fn: str, schedule: str):
    from mlir_rl_tui import runtime

    src = tmp_path / f"{fn}.mlir"
    src.write_text(PROGRAM.format(n=N, fn=fn))
    out = tmp_path / f"{fn}-{len(schedule)}.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(src), "--schedule", schedule, "-o", str(out)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    return runtime.load(str(out))


@pytest.mark.parametrize("fn,lo,hi,rel", [("erf", -6.0, 6.0, False), ("tanh", -12.0, 12.0, False),
                                          ("exp", -87.0, 88.5, True)])
def test_vectorized_math_matches_float64(tmp_path, cache_dir, fn, lo, hi, rel):
    k = built(tmp_path, fn, "op0: T(8) V")  # vector<8xf32> math: the approximation's vector form
    x = np.linspace(lo, hi, N, dtype=np.float32)
    y = k(x).astype(np.float64)
    ref = np.array([getattr(math, fn)(float(v)) for v in x])
    err = np.abs(y - ref) / (np.abs(ref) if rel else 1.0)
    assert err.max() < (2e-7 if rel else 1e-6), (fn, float(err.max()), float(x[err.argmax()]))


def test_exp_at_its_edges_and_scalar_erf(tmp_path, cache_dir):
    k = built(tmp_path, "exp", "op0: T(8) V")
    x = np.zeros(N, np.float32)
    edges = [100.0, 88.8, -88.0, -100.0, float("inf"), float("-inf"), float("nan"), 0.0]
    x[:len(edges)] = edges
    y = k(x)[:len(edges)]
    assert y[0] == np.inf and y[1] == np.inf and y[2] < 1e-37 and y[3] == 0 and y[4] == np.inf and y[5] == 0
    assert np.isnan(y[6]) and y[7] == 1.0
    e = built(tmp_path, "erf", "")  # untransformed: the scalar f32 form inside the loops
    x = np.linspace(-6, 6, N, dtype=np.float32)
    ref = np.array([math.erf(float(v)) for v in x])
    assert np.abs(e(x) - ref).max() < 1e-6


def test_every_f32_erf_exp_tanh_is_rewritten_and_f64_is_left():
    from mlir import ir

    from mlir_rl_tui.engine.rewrite.math_approx import approximate

    text = """
    func.func @f(%a: vector<8xf32>, %b: f32, %c: f64) -> (vector<8xf32>, f32, f32, f64) {
      %0 = math.erf %a : vector<8xf32>
      %1 = math.exp %b : f32
      %2 = math.tanh %1 : f32
      %3 = math.exp %c : f64
      return %0, %1, %2, %3 : vector<8xf32>, f32, f32, f64
    }"""
    with ir.Context(), ir.Location.unknown():
        m = ir.Module.parse(text)
        assert approximate(m) == 3
        m.operation.verify()
        out = str(m)
    assert "math.erf" not in out and "math.tanh" not in out and out.count("math.exp") == 1  # the f64 one


POWERS = textwrap.dedent("""\
    #id = affine_map<(d0) -> (d0)>
    func.func @forward(%x: tensor<8192xf32>) -> tensor<8192xf32> {
      %two = arith.constant 2 : i64
      %three = arith.constant -3 : i64
      %e = tensor.empty() : tensor<8192xf32>
      %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%x : tensor<8192xf32>) outs(%e : tensor<8192xf32>) {
        ^bb0(%i: f32, %o: f32):
          %a = math.fpowi %i, %two : f32, i64
          %b = math.fpowi %i, %three : f32, i64
          %y = arith.addf %a, %b : f32
          linalg.yield %y : f32
      } -> tensor<8192xf32>
      return %r : tensor<8192xf32>
    }
    """)


def test_integer_powers_vectorize(tmp_path, cache_dir):
    """`x.pow(2)` (an RMSNorm's) is math.fpowi: vectorized it lowered to llvm.intr.powi of a vector exponent,
    which LLVM refuses (every schedule with V on such an op was a compile error); expanded into
    multiplications first, it computes x^2 + x^-3 like numpy, vectorized and not."""
    from mlir_rl_tui import runtime

    src = tmp_path / "powers.mlir"
    src.write_text(POWERS)
    x = np.linspace(0.5, 3.0, 8192, dtype=np.float32)
    for schedule in ("op0: T(8) V", ""):
        out = tmp_path / f"powers-{len(schedule)}.so"
        r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(src), "--schedule", schedule, "-o",
                            str(out)], capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr
        y = runtime.load(str(out))(x)
        np.testing.assert_allclose(y, x.astype(np.float64) ** 2 + x.astype(np.float64) ** -3, rtol=1e-6)
