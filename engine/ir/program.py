"""Load a linalg-on-tensors module: ops in traversal order, loops, accesses, producer/consumer graph.

Parsing uses the MLIR Python bindings in-process (parse errors are clean exceptions); anything that
can abort the process (transforms, compilation, runs) happens in `engine.run.worker`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from mlir_rl_tui.engine.errors import EntryError, LoadError
from mlir_rl_tui.engine.units import duration

#: Attribute that tags each payload op with its id, so transform scripts find it again.
TAG = "rl.op"
#: Bytes of arguments and results above which a program is refused before any allocation. The measuring
#: worker (8 GiB address space, engine.config) holds the arguments, the float64 draws they are made from,
#: the baseline's and the candidate's results and MLIR itself (about 1.5 GiB): an add of two 1 GiB
#: tensors (3 GiB) ran out of memory there after 42 s of drawing inputs.
MAX_PROGRAM_BYTES = 2 << 30
#: Linalg ops in the entry function above which a program is refused: compiling a chain of elementwise
#: ops took 1 s at 100 ops, 5 s at 300 and 43 s at 600 (lowering and JIT both grow faster than linearly).
MAX_OPS = 300
#: Untransformed code runs near these rates (this machine: matmul 2.2 GFLOP/s, conv2d 2.6; elementwise
#: ops below the memory bandwidth): they give an estimate of a baseline run before any work.
BASELINE_FLOPS = 2e9
BASELINE_BYTES_PER_S = 5e9
#: An estimated baseline run above this is refused: the worker gives a first run 60 s (its compile
#: time-out, the estimate may be 2-3x off) and a measurement runs the baseline `baseline_runs` times.
MAX_BASELINE_S = 15.0
#: Above this, the command line says how long measuring will take before it starts.
NOTE_S = 3.0
#: Compiling takes about this long per linalg op (a chain of 300 elementwise ops: lowering 6.1 s, JIT 3.8 s
#: on an Intel Xeon VM); a first measurement of a schedule compiles the program up to 3 times (the
#: baseline alone, the schedule, the baseline again beside it in another worker).
COMPILE_S_PER_OP = 0.035

DTYPES = {
    "f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32",
    "i16": "int16", "i8": "int8", "i1": "bool",
}
_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec", "linalg.vecmat",
                 "linalg.batch_matvec", "linalg.dot", "linalg.batch_reduce_matmul", "linalg.contract",
                 "linalg.mmt4d", "linalg.batch_mmt4d")
_UNSUPPORTED = ("linalg.softmax", "linalg.pack", "linalg.unpack", "linalg.winograd")


@dataclass(frozen=True)
class TensorSpec:
    """A function argument or result: static shape and element type."""

    shape: tuple[int, ...]
    dtype: str  # MLIR element type, e.g. "f32"

    @property
    def numpy_dtype(self) -> str:
        return DTYPES[self.dtype]

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        size = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "f16": 2, "i16": 2}.get(self.dtype, 1)
        return n * size


@dataclass(frozen=True)
class Loop:
    """One loop of a linalg op: upper bound (lower bound 0, step 1) and iterator type."""

    bound: int
    iterator: str  # "parallel" | "reduction"


@dataclass
class LinalgOp:
    """One linalg operation of the program, as the agent sees it."""

    id: str
    index: int  # position in textual order
    name: str
    op_type: str  # category of engine.config.OP_TYPES
    loops: list[Loop]
    #: Per operand (inputs then outputs): access matrix rows (one per tensor dim, one column per loop).
    access: list[list[list[int]]]
    n_inputs: int
    arith: dict[str, int]
    location: str
    producers: list[str] = field(default_factory=list)
    consumers: list[str] = field(default_factory=list)
    #: The producer fused by TF (paper: the last producer textually before the consumer).
    fusion_producer: str | None = None
    #: Operand index through which the consumer reads `fusion_producer`'s result.
    fusion_operand: int | None = None
    #: The ops whose results this op writes into (its output operands' producers, e.g. a linalg.fill).
    init_producers: list[str] = field(default_factory=list)
    #: For 2-D convolutions and poolings: (output-height loop, kernel-height loop), which must be
    #: tiled to 1 before `decompose` turns the op into a vectorizable 1-D one.
    decompose_dims: tuple[int, int] | None = None
    result_shape: tuple[int, ...] = ()
    #: Body ops outside arith/math/linalg.yield/linalg.index (e.g. cf.assert): the vectorizer rejects them.
    unvectorizable_body: list[str] = field(default_factory=list)
    #: A contraction (matmul-like: multiply, then accumulate over reduction loops), named or generic.
    contraction: bool = False
    #: Why the vectorizer cannot turn a reduction of this op into a vector reduction ("" if it can):
    #: each reduced output must be accumulated by one add/mul/min/max/and/or/xor (an argmax is not).
    unvectorizable_reduction: str = ""
    #: A linalg.fill whose only use is the padded buffer a tensor.insert_slice writes a linalg op's result
    #: into (a `tensor.pad` after engine.rewrite.graph's `pad` rewrite): left as it is, that producer writes straight
    #: into the buffer (eliminate-empty-tensors); tiled, bufferization copies the result in through MLIR's
    #: generic strided `memrefCopy` instead (engine.schedule.state allows it NT only). A fill shared by two pads, or
    #: padding a function argument, is copied into either way, and there a vectorized fill is faster.
    pad_fill: bool = False
    #: Element type of each operand (inputs then outputs), e.g. ["f32", "f32", "f32"].
    dtypes: list[str] = field(default_factory=list)
    #: The body's ops by name and count, e.g. {"arith.maximumf": 1, "linalg.yield": 1} (engine.tune.workload).
    body: dict[str, int] = field(default_factory=dict)

    @property
    def shape_text(self) -> str:
        return "x".join(str(lp.bound) for lp in self.loops)

    @property
    def flops(self) -> int:
        """Arithmetic operations executed by the op: body arithmetic ops times iterations."""
        n = 1
        for lp in self.loops:
            n *= lp.bound
        return n * max(1, sum(self.arith.values()))


@dataclass
class Program:
    """A loaded module: its text, entry function signature and linalg ops in traversal order."""

    text: str
    sha256: str  # program_sha256: of the text, and of the entry function when there are several
    func_name: str
    args: list[TensorSpec]
    results: list[TensorSpec]
    ops: list[LinalgOp]
    path: str | None = None
    #: Every function with a body (candidates for the entry, `func_name`).
    functions: list[str] = field(default_factory=list)

    def op(self, op_id: str) -> LinalgOp:
        for o in self.ops:
            if o.id == op_id:
                return o
        known = ", ".join(o.id for o in self.ops)
        raise LoadError(f"unknown op id {op_id!r}; this program has {known}")

    @property
    def flops(self) -> int:
        """Arithmetic operations of the program (fills do none), for GFLOP/s."""
        return sum(o.flops for o in self.ops if o.name != "linalg.fill")

    @property
    def compulsory_bytes(self) -> int:
        """Traffic no schedule avoids: every argument read once, every result written once (the roofline's
        memory bound, engine.measure.roofline.place)."""
        return sum(s.nbytes for s in self.args + self.results)

    @property
    def bytes_moved(self) -> int:
        """Bytes an untransformed run reads and writes at least: the compulsory bytes, and each
        intermediate result written once and read once (taken as 4-byte elements)."""
        inter = sum(4 * math.prod(o.result_shape) for o in self.ops[1:])
        return self.compulsory_bytes + 2 * inter

    @property
    def estimated_baseline_s(self) -> float:
        """What one untransformed run should take: an estimate from flops and bytes, not a measurement."""
        return self.flops / BASELINE_FLOPS + self.bytes_moved / BASELINE_BYTES_PER_S

    def to_json(self) -> dict:
        """Everything but the text (the loader's answer; the caller has the text)."""
        d = asdict(self)
        del d["text"]
        return d

    @classmethod
    def from_json(cls, d: dict, text: str) -> Program:
        ops = []
        for o in d["ops"]:
            o = dict(o)
            o["loops"] = [Loop(**lp) for lp in o["loops"]]
            o["decompose_dims"] = tuple(o["decompose_dims"]) if o["decompose_dims"] is not None else None
            o["result_shape"] = tuple(o["result_shape"])
            ops.append(LinalgOp(**o))
        specs = {k: [TensorSpec(tuple(t["shape"]), t["dtype"]) for t in d[k]] for k in ("args", "results")}
        return cls(text=text, sha256=d["sha256"], func_name=d["func_name"], ops=ops, path=d.get("path"),
                   functions=list(d.get("functions", [])), **specs)


def baseline_runs(run_s: float) -> int:
    """Runs of an untransformed run of `run_s` seconds in a first measurement of a schedule (engine.measure.timing
    with the default config): the baseline alone (first run, warm-up, its rounds), then the rounds paired
    with the schedule (first run, warm-up, its rounds)."""
    from mlir_rl_tui.engine.config import DEFAULT_MEASURE
    from mlir_rl_tui.engine.measure.timing import TimingConfig, least_rounds

    cfg = TimingConfig(**DEFAULT_MEASURE.timing())
    ms = max(run_s * 1e3, 1e-3)
    per = 1 if ms > cfg.slow_ms else max(cfg.round_runs, int(cfg.round_s * 1e3 / ms))
    warm = 1 if ms > 50 else max(3, int(cfg.warmup_s * 1e3 / ms))
    alone = least_rounds(cfg, cfg.min_rounds, per * ms) * per
    paired = least_rounds(cfg, cfg.min_baseline_rounds, per * ms) * per
    return 2 * (1 + warm) + alone + paired


def measurement_note(program: Program, name: str) -> str | None:
    """Before measuring: a LoadError when the untransformed program would run too long to be measured,
    a one-line note of what will take the time when a first measurement should take over NOTE_S, else None."""
    t = program.estimated_baseline_s
    what = f"{program.flops / 1e9:.1f} GFLOP, {program.bytes_moved / 2**20:.0f} MiB"
    if t > MAX_BASELINE_S:
        raise LoadError(f"{name}: an untransformed run of @{program.func_name} should take about {duration(t)} "
                        f"({what}), over the {MAX_BASELINE_S:.0f} s limit for measuring; use smaller shapes")
    compile_s = COMPILE_S_PER_OP * len(program.ops)
    runs = baseline_runs(t)
    total = 3 * compile_s + runs * t
    if total <= NOTE_S:
        return None
    parts = []
    if 3 * compile_s > 1.0:
        parts.append(f"compiling its {len(program.ops)} linalg ops should take about {duration(compile_s)}, up to "
                     f"3 times")
    if runs * t > 1.0:
        parts.append(f"an untransformed run of @{program.func_name} about {duration(t)} ({what}), {runs} of them")
    return (f"{name}: a first measurement of a schedule should take about {duration(total)}: " + "; ".join(parts)
)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def program_sha256(text: str, func: str, functions: list[str]) -> str:
    """The program's identity (cache keys, the worker's baselines, traces): its text, and its entry
    function when the text has several (two entries of one file are two programs)."""
    if len(functions) <= 1:
        return sha256_text(text)
    return sha256_text(f"{text}\0entry=@{func}")


def op_category(name: str) -> str:
    if name in _CONTRACTIONS or name.startswith("linalg.matmul"):
        return "matmul"
    if name.startswith(("linalg.conv_", "linalg.depthwise_conv_")):
        return "conv_2d"
    if name.startswith("linalg.pooling_"):
        return "pooling"
    if name == "linalg.add":
        return "add"
    if name == "linalg.generic":
        return "generic"
    return "unknown"


def load_file(path: str, entry: str | None = None) -> Program:
    """Read and load a .mlir file in a guarded process (engine.ir.loader); every failure is a LoadError
    with one line naming the cause. `entry` names the function to schedule and time."""
    from mlir_rl_tui.engine.ir.loader import load_file as guarded_load_file

    return guarded_load_file(path, entry)


def load(text: str, name: str = "<input>", entry: str | None = None) -> Program:
    """Parse MLIR text and describe its linalg ops (paper Sec. III-IV), in a guarded process."""
    from mlir_rl_tui.engine.ir.loader import load_text

    return load_text(text, name, entry)


def describe_text(text: str, name: str = "<input>", entry: str | None = None) -> Program:
    """`load` in this process: only `engine.ir.load_worker` calls it, since MLIR's parser can abort or
    overflow its stack on bad input (engine.ir.text_check)."""
    from mlir import ir

    from mlir_rl_tui.engine.ir.text_check import check_text

    if not text.strip():
        raise LoadError(f"{name}: empty file, expected an MLIR module with linalg ops")
    problem = check_text(text, name)
    if problem:
        raise LoadError(problem)
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = False
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise LoadError(f"{name}: not valid MLIR: {first_diagnostic(e)}") from None
        except Exception as e:  # noqa: BLE001 - binding errors vary by input
            raise LoadError(f"{name}: not valid MLIR: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        foreign = _foreign_code(module)
        if foreign:
            raise LoadError(f"{name}: {foreign}; a program may only compute with its own functions (running it "
                            "would call code outside the file)")
        func, candidates = entry_function(module, name, entry)
        fname = _sym(func)
        args = [_tensor_spec(a.type, f"argument {i} of @{fname}", name) for i, a in enumerate(func.arguments)]
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        results = [_tensor_spec(t, f"result {i} of @{fname}", name) for i, t in enumerate(ftype.results)]
        if len(results) != 1:
            raise LoadError(f"{name}: @{fname} returns {len(results)} values; exactly one tensor result is supported")
        total = sum(s.nbytes for s in args + results)
        if total > MAX_PROGRAM_BYTES:
            raise LoadError(f"{name}: the arguments and result of @{fname} need {total / 2**30:.1f} GiB, more than "
                            f"the {MAX_PROGRAM_BYTES / 2**30:.0f} GiB a measuring worker can hold with its copies; "
                            "use smaller shapes")
        raw_ops = collect_linalg_ops(func)
        if not raw_ops:
            raise LoadError(f"{name}: no linalg op found in @{fname}; nothing to schedule")
        if len(raw_ops) > MAX_OPS:
            raise LoadError(f"{name}: @{fname} has {len(raw_ops)} linalg ops, more than the {MAX_OPS} the engine "
                            f"schedules (compiling grows faster than the op count: 300 ops take 5 s, 600 ops 43 s); "
                            f"split the function")
        ops = _describe(raw_ops, name)
    return Program(text=text, sha256=program_sha256(text, fname, candidates), func_name=fname, args=args,
                   results=results, ops=ops, functions=candidates)


def _foreign_code(module) -> str:
    """What in the module would run code from outside it when compiled and run: a function declared
    without a body (an external symbol: `func.call @system(...)` would call libc), or an LLVM dialect op
    (inline assembly, calls through pointers). "" when there is none."""
    from mlir import ir

    found: list[str] = []

    def visit(op):
        if op.name.startswith("llvm."):
            found.append(f"it contains {op.name} at {_location(op)}")
            return ir.WalkResult.INTERRUPT
        if op.name == "func.func" and len(op.regions[0].blocks) == 0:
            found.append(f"it declares the external function @{ir.StringAttr(op.attributes['sym_name']).value}")
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if found else ""


def collect_linalg_ops(root) -> list:
    """Linalg structured ops under `root` (a module or a function) in textual (pre-)order, not
    descending into their bodies."""
    from mlir import ir

    found = []

    def visit(op):
        if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index"):
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    root.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def traversal_ids(n: int) -> list[str]:
    """Id of each op in textual order: traversal goes last consumer first, so op0 is the last op."""
    return [f"op{n - 1 - i}" for i in range(n)]


def untie_empties(root) -> int:
    """Give every use of a `tensor.empty` under `root` its own copy (returns how many were made).

    torch-mlir writes one `tensor.empty` for all the ops of one result shape (CSE). When a consumer is tiled
    into an scf.forall whose shared output is that empty, `fuse_into_containing_op` makes a fused producer
    with the same empty as destination write into the forall's shared output; the producer's tile is larger
    than the consumer's (its rows for all of a matmul's K), so it overwrites what other iterations wrote (an
    MLP block: `op3: TF(4,32) V; op4: TF(4,0,0) NT`, 8181 of 8192 elements wrong). An empty's contents are
    undefined, so copies are the same program; bufferization allocates each destination either way."""
    from mlir import ir

    empties = []

    def visit(op):
        if op.name == "tensor.empty":
            empties.append(op)
        return ir.WalkResult.ADVANCE

    root.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    made = 0
    for empty in empties:
        for use in list(empty.result.uses)[1:]:
            user = use.owner
            copy = empty.clone(ip=ir.InsertionPoint(user))
            user.operands[use.operand_number] = copy.result
            made += 1
    return made


def tag_ops(module, func: str | None = None) -> None:
    """Tag every linalg op of function `func` (all functions when None) with its traversal id, after
    `untie_empties`; the worker calls this on a fresh parse, so ids match the Program's."""
    from mlir import ir

    root = module
    if func is not None:
        root = next((f for f in functions_with_body(module) if _sym(f) == func), module)
    untie_empties(root)
    ops = collect_linalg_ops(root)
    for op, oid in zip(ops, traversal_ids(len(ops))):
        op.attributes[TAG] = ir.StringAttr.get(oid)


# ----------------------------------------------------------------------------------------------
def first_diagnostic(e) -> str:
    diags = getattr(e, "error_diagnostics", None) or []
    if diags:
        d = diags[0]
        loc = str(d.location)
        m = re.search(r":(\d+):(\d+)", loc)
        where = f"line {m.group(1)} col {m.group(2)}: " if m else ""
        return where + str(d.message).splitlines()[0]
    msg = str(e).strip().splitlines()
    return msg[-1] if msg else "parse error"


def _sym(func) -> str:
    from mlir import ir

    return ir.StringAttr(func.attributes["sym_name"]).value


def functions_with_body(module) -> list:
    """The module's func.func ops that have a body (declarations are not candidates)."""
    return [op for op in module.body.operations
            if op.operation.name == "func.func" and len(op.regions[0].blocks) > 0]


def _public(func) -> bool:
    from mlir import ir

    vis = func.attributes["sym_visibility"] if "sym_visibility" in func.attributes else None
    return vis is None or ir.StringAttr(vis).value == "public"


def entry_function(module, name: str, entry: str | None):
    """(the function to schedule and time, the names of every candidate).

    Without `entry` the choice must be obvious: one function, or one public function with no private
    helper before it (a helper first may well be the kernel, called by a driver). Otherwise an
    EntryError lists the candidates, for `--entry NAME` or the app's picker."""
    funcs = functions_with_body(module)
    if not funcs:
        raise LoadError(f"{name}: no func.func with a body; expected a function computing with linalg ops")
    names = [_sym(f) for f in funcs]
    listed = ", ".join("@" + n for n in names)
    if entry is not None:
        want = entry.lstrip("@")
        for f, n in zip(funcs, names):
            if n == want:
                return f, names
        raise EntryError(f"{name}: no function @{want}; --entry must name one of {listed}", names)
    public = [f for f in funcs if _public(f)]
    if len(funcs) == 1 or (len(public) == 1 and public[0] is funcs[0]):
        return funcs[0], names
    why = f"{len(public)} public functions" if len(public) > 1 else "a private function before the public one"
    raise EntryError(f"{name}: {why} ({listed}); choose the one to schedule and time with --entry NAME", names)


def _tensor_spec(t, what: str, name: str) -> TensorSpec:
    from mlir import ir

    if not isinstance(t, ir.RankedTensorType):
        try:
            t = ir.RankedTensorType(t)
        except (ValueError, TypeError):
            raise LoadError(f"{name}: {what} has type {t}; only ranked tensors are supported") from None
    if not t.has_static_shape:
        raise LoadError(f"{name}: {what} has dynamic shape {t}; only static shapes are supported")
    et = str(t.element_type)
    if et not in DTYPES:
        raise LoadError(f"{name}: {what} has element type {et}; supported: {', '.join(DTYPES)}")
    return TensorSpec(tuple(t.shape), et)


def _location(op) -> str:
    m = re.search(r":(\d+):(\d+)", str(op.location))
    return f"{m.group(1)}:{m.group(2)}" if m else "?"


def affine_coeffs(expr, n_dims: int) -> tuple[list[int], int]:
    """Linear affine expression -> (coefficient per loop, constant); raises ValueError if non-linear."""
    from mlir import ir

    e = expr.maybe_downcast() if hasattr(expr, "maybe_downcast") else expr
    if isinstance(e, ir.AffineDimExpr):
        v = [0] * n_dims
        v[e.position] = 1
        return v, 0
    if isinstance(e, ir.AffineConstantExpr):
        return [0] * n_dims, e.value
    if isinstance(e, ir.AffineSymbolExpr):
        raise ValueError("symbolic access")
    if isinstance(e, ir.AffineAddExpr):
        (a, ca), (b, cb) = affine_coeffs(e.lhs, n_dims), affine_coeffs(e.rhs, n_dims)
        return [x + y for x, y in zip(a, b)], ca + cb
    if isinstance(e, ir.AffineMulExpr):
        (a, ca), (b, cb) = affine_coeffs(e.lhs, n_dims), affine_coeffs(e.rhs, n_dims)
        if not any(b):
            return [x * cb for x in a], ca * cb
        if not any(a):
            return [x * ca for x in b], ca * cb
    raise ValueError(f"non-linear access {e}")


_ARITH = {
    "add": ("arith.addf", "arith.addi"), "sub": ("arith.subf", "arith.subi", "arith.negf"),
    "mul": ("arith.mulf", "arith.muli"), "div": ("arith.divf", "arith.divsi", "arith.divui"),
    "exp": ("math.exp", "math.exp2", "math.expm1"),
}


def _body_op_names(op, nested: bool = True) -> list[str]:
    """Names of the ops in `op`'s regions (nested=False: only those directly in its blocks), pre-order.

    Walks Operations: iterating `block.operations` makes OpViews, and the first linalg one imports
    mlir.dialects.linalg with its Python op DSL (0.2-0.3 s of import time)."""
    from mlir import ir

    names: list[str] = []

    def visit(o):
        if not names and o == op:
            names.append("")  # op itself
            return ir.WalkResult.ADVANCE
        names.append(o.name)
        return ir.WalkResult.ADVANCE if nested else ir.WalkResult.SKIP

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return names[1:]


def _arith_counts(op) -> dict[str, int]:
    names = Counter(_body_op_names(op))
    return {k: sum(names[n] for n in ns) for k, ns in _ARITH.items()}


_VECTOR_BODY_OK = ("arith.", "math.", "linalg.yield", "linalg.index")
#: Body ops with regions of their own (scf.if, scf.for, ...): the compile pipeline cannot lower them there.
_CONTROL_FLOW = ("scf.",)


def _foreign_body_ops(op) -> list[str]:
    found: list[str] = []
    for n in _body_op_names(op, nested=False):
        if not n.startswith(_VECTOR_BODY_OK) and n not in found:
            found.append(n)
    return found


#: Combiners the vectorizer turns into vector reductions (Vectorization.cpp, getCombinerOpKind).
_COMBINERS = {f"arith.{k}" for k in ("addf", "addi", "mulf", "muli", "andi", "ori", "xori", "maxsi", "maxui",
                                     "minsi", "minui", "maximumf", "minimumf", "maxnumf", "minnumf")}


def _reduction_blocker(op, n_in: int, iterators: list[str], access: list[list[list[int]]]) -> str:
    """Mirror of the vectorizer's reduction pre-condition (mlir::matchReduction): every output not
    written through a permutation must be read once, by a combiner whose other operand does not depend
    on an output, and whose result is yielded as that output. Walks Operations (see _body_op_names)."""
    from mlir import ir

    if "reduction" not in iterators or not len(op.regions) or not len(op.regions[0].blocks):
        return ""
    block = op.regions[0].blocks[0]
    body: list = []

    def visit(o):
        if o == op:
            return ir.WalkResult.ADVANCE
        body.append(o)
        return ir.WalkResult.SKIP

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    if not body:
        return ""
    outs = list(block.arguments)[n_in:]
    terminator = body[-1]

    def depends_on_outputs(v, seen: int = 0) -> bool:
        if any(v == a for a in outs):
            return True
        for o in body[:-1]:
            if any(v == r for r in o.results):
                return seen < 64 and any(depends_on_outputs(x, seen + 1) for x in o.operands)
        return False

    for k, arg in enumerate(outs):
        rows = access[n_in + k] if n_in + k < len(access) else []
        if len(rows) == len(iterators) and sorted(r.index(1) for r in rows if sum(r) == 1) == list(range(len(rows))):
            continue  # written through a permutation: not a reduction
        users = [o for o in body for x in o.operands if x == arg]
        if len(users) != 1:
            return f"output {k} is read {len(users)} times in the body (not a single accumulation)"
        comb = users[0]
        if comb.name not in _COMBINERS or len(comb.operands) != 2:
            return f"output {k} is accumulated with {comb.name}, not an add/mul/min/max/and/or/xor"
        other = comb.operands[1] if comb.operands[0] == arg else comb.operands[0]
        if depends_on_outputs(other):
            return f"output {k} is accumulated with a value computed from an output"
        res = comb.results[0]
        readers = [(o, i) for o in body for i, x in enumerate(o.operands) if x == res]
        if len(readers) != 1 or readers[0][0] != terminator or readers[0][1] != k:
            return f"output {k}'s accumulation is used by more than the yield"
    return ""


def _fills_padding(raw) -> bool:
    """Whether a fill's only use is as the destination of a tensor.insert_slice of a linalg op's result
    (LinalgOp.pad_fill: the case where the result is written into the buffer without a copy)."""
    uses = [u for res in raw.results for u in res.uses]
    if len(uses) != 1 or uses[0].owner.name != "tensor.insert_slice" or uses[0].operand_number != 1:
        return False
    src = uses[0].owner.operands[0].owner  # an op, or the Block of a function argument
    return getattr(src, "name", "").startswith("linalg.")


def _describe(raw_ops: list, name: str) -> list[LinalgOp]:
    from mlir import ir

    # the C extension behind mlir.dialects.linalg: importing that package also builds the Python op DSL
    # (opdsl, core_named_ops), 0.2-0.3 s of import time for three functions
    from mlir._mlir_libs import _mlirDialectsLinalg as linalg

    ids = traversal_ids(len(raw_ops))
    described: list[LinalgOp] = []
    for idx, (op, oid) in enumerate(zip(raw_ops, ids)):
        where = f"{name}:{_location(op)}"
        if op.name.startswith(_UNSUPPORTED):
            raise LoadError(f"{where}: {op.name} is not supported; lower it to linalg.generic first")
        parent = op.parent.name if op.parent is not None else ""
        if parent != "func.func":  # in a loop or a branch: bufferizing it into the region fails to compile
            raise LoadError(f"{where}: {op.name} is inside {parent}; only linalg ops at the function's top level "
                            "can be scheduled")
        flow = [n for n in _body_op_names(op, nested=False) if n.startswith(_CONTROL_FLOW)]
        if flow:  # the lowering leaves them half converted: LLVM cannot translate the result
            raise LoadError(f"{where}: {op.name}'s body holds {flow[0]}; bodies with control flow are not "
                            "supported (arith.select instead of scf.if)")
        try:
            maps = [ir.AffineMapAttr(a).value for a in linalg.get_indexing_maps(op)]
        except Exception:  # noqa: BLE001
            raise LoadError(f"{where}: {op.name} is not a structured linalg op; it cannot be scheduled") from None
        if not maps:
            raise LoadError(f"{where}: {op.name} has no indexing maps; it cannot be scheduled")
        n = maps[0].n_dims
        operands = list(op.operands)
        n_out = len(op.results) if len(op.results) else 1
        n_in = len(operands) - n_out
        access: list[list[list[int]]] = []
        bounds: list[int | None] = [None] * n
        for v, m in zip(operands, maps):
            shape = list(ir.ShapedType(v.type).shape) if isinstance(v.type, ir.ShapedType) else []
            rows = []
            for j, r in enumerate(m.results):
                try:
                    coeffs, _ = affine_coeffs(r, n)
                except ValueError as e:
                    raise LoadError(f"{where}: {op.name} has a {e}; only affine accesses are supported") from None
                rows.append(coeffs)
                rd = r.maybe_downcast() if hasattr(r, "maybe_downcast") else r
                if isinstance(rd, ir.AffineDimExpr) and bounds[rd.position] is None and j < len(shape):
                    if shape[j] == ir.ShapedType.get_dynamic_size() or shape[j] < 0:
                        raise LoadError(f"{where}: {op.name} has dynamic shapes; only static shapes are supported")
                    bounds[rd.position] = shape[j]
            access.append(rows)
        if any(b is None for b in bounds):
            raise LoadError(f"{where}: cannot infer the static loop bounds of {op.name}")
        used_by_out = set()
        for rows in access[n_in:]:
            for row in rows:
                used_by_out |= {i for i, c in enumerate(row) if c}
        if "iterator_types" in op.attributes:
            # from the text: iterating the ArrayAttr makes linalg attribute views (see _body_op_names)
            its = ["reduction" if "reduction" in a else "parallel"
                   for a in str(ir.ArrayAttr(op.attributes["iterator_types"])).strip("[]").split(",")]
        else:
            its = ["parallel" if i in used_by_out else "reduction" for i in range(n)]
        decompose = None
        category = op_category(op.name)
        if category in ("conv_2d", "pooling") and linalg.isa_convolution_op(op):
            cd = linalg.infer_convolution_dimensions(op)
            oimg, floop = list(cd.output_image), list(cd.filter_loop)
            if len(oimg) == 2 and len(floop) == 2:
                decompose = (oimg[0], floop[0])
        rshape = tuple(ir.ShapedType(op.results[0].type).shape) if len(op.results) else ()
        if len(op.results):
            rt = ir.ShapedType(op.results[0].type)
            nbytes = TensorSpec(rshape, str(rt.element_type)).nbytes if str(rt.element_type) in DTYPES else 0
            if nbytes > MAX_PROGRAM_BYTES:
                raise LoadError(f"{where}: the result of {op.name} needs {nbytes / 2**30:.1f} GiB, more than the "
                                f"{MAX_PROGRAM_BYTES / 2**30:.0f} GiB limit; use smaller shapes")
        described.append(LinalgOp(
            id=oid, index=idx, name=op.name, op_type=category,
            loops=[Loop(int(b), it) for b, it in zip(bounds, its)],
            access=access, n_inputs=n_in, arith=_arith_counts(op), location=_location(op),
            decompose_dims=decompose, result_shape=rshape, unvectorizable_body=_foreign_body_ops(op),
            contraction=bool(linalg.isa_contraction_op(op)),
            dtypes=[str(ir.ShapedType(v.type).element_type) if isinstance(v.type, ir.ShapedType) else str(v.type)
                    for v in operands],
            body=dict(sorted(Counter(_body_op_names(op)).items())),
            unvectorizable_reduction="" if decompose else _reduction_blocker(op, n_in, its, access)))
    # producer / consumer graph through SSA values
    # by result value: `Value.owner` makes an OpView (see _body_op_names)
    by_result = {res: d for raw, d in zip(raw_ops, described) for res in raw.results}
    for raw, d in zip(raw_ops, described):
        best = None
        for k, v in enumerate(raw.operands):
            p = by_result.get(v)
            if p is not None:
                if p.id not in d.producers:
                    d.producers.append(p.id)
                if d.id not in p.consumers:
                    p.consumers.append(d.id)
                if k >= d.n_inputs and p.id not in d.init_producers:
                    d.init_producers.append(p.id)
                if best is None or p.index > best[0].index:
                    best = (p, k)
        if best is not None:
            d.fusion_producer, d.fusion_operand = best[0].id, best[1]
        d.pad_fill = d.name == "linalg.fill" and _fills_padding(raw)
    described.sort(key=lambda d: int(d.id[2:]))
    return described
