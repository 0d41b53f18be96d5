"""f32 `math.erf`, `math.exp` and `math.tanh` as polynomial approximations in arith ops, before lowering.

LLVM has no vector form of these functions for the host CPU without a vector math library: a vectorized
GELU's `math.erf` became one scalar `erff` call per lane (`convert-math-to-libm`) and a softmax's
`math.exp` one `expf` call per lane. Written as arith ops (multiply-adds, a division, clamps, a bitcast)
they stay vectors: in the per-op profile of the speech front-end of benchmarks/model_zoo.py (the policy's
schedule, Intel Xeon VM) its largest GELU, over 1x1599x64 floats, went from 0.97 ms to 0.58 ms and the
model from 2.57 ms to 2.09 ms. Applied in engine.run.compile after the transform script, to every
program the engine lowers (baselines included): the transformed IR a user exports keeps the math ops.

The approximations are Eigen's (erf, tanh: a rational function of x on a clamped range) and Cephes' (exp:
x = n ln2 + r, a degree-7 polynomial of r, times 2^n). Largest error measured against float64 over a dense
grid: erf 4.2e-7 absolute, tanh 3.4e-7 absolute, exp 8.0e-8 relative (tests/test_math_approx.py checks
them through the real pipeline). exp is +inf above ln(FLT_MAX) and 0 below -87.3, as `expf` is (to within
its denormals); NaN stays NaN.
"""

from __future__ import annotations

APPROXIMATED = ("math.erf", "math.exp", "math.tanh")
#: Part of the cache key of a program these rewrites change (engine.store.keys.cache_key): its measurements from
#: before them are not served (the rest of the cache, and the measurement files in data/, stay valid).
VERSION = "math-approx-1"
#: Powers by an integer (`x.pow(2)` of an RMSNorm) are expanded into multiplications first (MLIR's
#: math-expand-ops): vectorized, `math.fpowi` became `llvm.intr.powi` of a vector exponent, which LLVM
#: refuses, and every schedule that vectorized such an op failed to compile.
EXPANDED = ("math.fpowi",)
EXPAND_VERSION = "math-expand-1"


def rewrites(text: str) -> bool:
    """Whether the program text holds an op `approximate` may rewrite."""
    return any(name in text for name in APPROXIMATED + EXPANDED)


def versions(text: str) -> list[str]:
    """The versions of these rewrites a program's compiled code depends on (its part of the cache key)."""
    return [v for names, v in ((APPROXIMATED, VERSION), (EXPANDED, EXPAND_VERSION))
            if any(name in text for name in names)]

# Eigen's generic_fast_erf_float: erf(x) = x P(x^2) / Q(x^2) on [-4, 4], +-1 outside
_ERF_CLAMP = 4.0
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)  # x^12 .. x^0 of P
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)
# Eigen's generic_fast_tanh_float: tanh(x) = x P(x^2) / Q(x^2) on [-7.905, 7.905], +-1 outside
_TANH_CLAMP = 7.90531110763549805
_TANH_P = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
           1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03)
_TANH_Q = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
# Cephes' expf: exp(r) = 1 + r + r^2 P(r) for |r| <= ln2/2
_EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_HI, _EXP_LO = 88.7228391, -87.3365448  # ln(FLT_MAX), ln(FLT_MIN)


def approximate(module) -> int:
    """Rewrite every f32 (scalar or vector) erf/exp/tanh of `module` in place, after expanding integer powers;
    how many erf/exp/tanh were rewritten. Runs inside an active MLIR context."""
    from mlir import ir
    from mlir.passmanager import PassManager

    powers: list = []

    def seek(op):
        if op.name in EXPANDED:
            powers.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(seek)
    if powers:
        PassManager.parse("builtin.module(func.func(math-expand-ops{ops=fpowi}))").run(module.operation)
    found: list = []

    def visit(op):
        if op.name in APPROXIMATED and _is_f32(op.results[0].type):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            x = op.operands[0]
            new = {"math.erf": _erf, "math.exp": _exp, "math.tanh": _tanh}[op.name](_Builder(x.type), x)
        op.results[0].replace_all_uses_with(new)
        op.erase()
    return len(found)


def _is_f32(t) -> bool:
    from mlir import ir

    if isinstance(t, ir.VectorType):
        t = t.element_type
    return isinstance(t, ir.F32Type)


class _Builder:
    """arith ops on values of one f32 type (scalar or vector) and its i32 twin."""

    def __init__(self, t) -> None:
        from mlir import ir

        self.f = t
        if isinstance(t, ir.VectorType):
            self.i = ir.VectorType.get(t.shape, ir.IntegerType.get_signless(32))
        else:
            self.i = ir.IntegerType.get_signless(32)

    def _const(self, t, attr):
        from mlir import ir
        from mlir.dialects import arith

        if isinstance(t, ir.VectorType):
            attr = ir.DenseElementsAttr.get_splat(t, attr)
        return arith.constant(t, attr)

    def c(self, v: float):
        from mlir import ir

        return self._const(self.f, ir.FloatAttr.get(ir.F32Type.get(), v))

    def ci(self, v: int):
        from mlir import ir

        return self._const(self.i, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v))

    def clamp(self, x, lo: float, hi: float):
        from mlir.dialects import arith

        return arith.minimumf(arith.maximumf(x, self.c(lo)), self.c(hi))

    def horner(self, x, coeffs: tuple[float, ...]):
        """coeffs[0] x^(n-1) + ... + coeffs[-1], by Horner's rule."""
        from mlir.dialects import arith

        p = self.c(coeffs[0])
        for k in coeffs[1:]:
            p = arith.addf(arith.mulf(p, x), self.c(k))
        return p


def _odd_rational(b: _Builder, x, clamp: float, p: tuple[float, ...], q: tuple[float, ...]):
    from mlir.dialects import arith

    x = b.clamp(x, -clamp, clamp)
    x2 = arith.mulf(x, x)
    return arith.divf(arith.mulf(x, b.horner(x2, p)), b.horner(x2, q))


def _erf(b: _Builder, x):
    return _odd_rational(b, x, _ERF_CLAMP, _ERF_P, _ERF_Q)


def _tanh(b: _Builder, x):
    return _odd_rational(b, x, _TANH_CLAMP, _TANH_P, _TANH_Q)


def _exp(b: _Builder, x):
    from mlir.dialects import arith, math

    xc = b.clamp(x, _EXP_LO, _EXP_HI)
    n = math.floor(arith.addf(arith.mulf(xc, b.c(_LOG2E)), b.c(0.5)))
    r = arith.subf(arith.subf(xc, arith.mulf(n, b.c(_LN2_HI))), arith.mulf(n, b.c(_LN2_LO)))
    y = arith.addf(arith.addf(arith.mulf(b.horner(r, _EXP_P), arith.mulf(r, r)), r), b.c(1.0))
    # 2^n as two factors 2^h 2^(n-h), h = n >> 1: n reaches 128 at ln(FLT_MAX), past the largest exponent
    ni = arith.fptosi(b.i, n)
    h = arith.shrsi(ni, b.ci(1))

    def pow2(k):
        return arith.bitcast(b.f, arith.shli(arith.addi(k, b.ci(127)), b.ci(23)))

    out = arith.mulf(arith.mulf(y, pow2(h)), pow2(arith.subi(ni, h)))
    over = arith.cmpf(arith.CmpFPredicate.OGT, x, b.c(_EXP_HI))
    under = arith.cmpf(arith.CmpFPredicate.OLT, x, b.c(_EXP_LO))
    out = arith.select(over, b.c(float("inf")), out)
    return arith.select(under, b.c(0.0), out)
