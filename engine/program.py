"""Load a linalg-on-tensors module: ops in traversal order, loops, accesses, producer/consumer graph.

Parsing uses the MLIR Python bindings in-process (parse errors are clean exceptions); anything that
can abort the process (transforms, compilation, runs) happens in `engine.worker`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field

from engine.errors import LoadError

#: Attribute that tags each payload op with its id, so transform scripts find it again.
TAG = "rl.op"
#: Bytes of arguments and results above which a program is refused before any allocation.
MAX_PROGRAM_BYTES = 4 << 30

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
    sha256: str
    func_name: str
    args: list[TensorSpec]
    results: list[TensorSpec]
    ops: list[LinalgOp]
    path: str | None = None

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


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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


def load_file(path: str) -> Program:
    """Read and load a .mlir file; every failure is a LoadError with one line naming the cause."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise LoadError(f"{path}: cannot read file ({e.strerror})") from None
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise LoadError(f"{path}: not MLIR text (binary data)") from None
    prog = load(text, name=path)
    prog.path = path
    return prog


def load(text: str, name: str = "<input>") -> Program:
    """Parse MLIR text and describe its linalg ops (paper Sec. III-IV)."""
    from mlir import ir

    if not text.strip():
        raise LoadError(f"{name}: empty file, expected an MLIR module with linalg ops")
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = False
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise LoadError(f"{name}: not valid MLIR: {_first_diagnostic(e)}") from None
        except Exception as e:  # noqa: BLE001 - binding errors vary by input
            raise LoadError(f"{name}: not valid MLIR: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        func = _entry_function(module, name)
        args = [_tensor_spec(a.type, f"argument {i} of @{_sym(func)}", name) for i, a in enumerate(func.arguments)]
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        results = [_tensor_spec(t, f"result {i} of @{_sym(func)}", name) for i, t in enumerate(ftype.results)]
        if len(results) != 1:
            raise LoadError(f"{name}: @{_sym(func)} returns {len(results)} values; exactly one tensor result is supported")
        total = sum(s.nbytes for s in args + results)
        if total > MAX_PROGRAM_BYTES:
            raise LoadError(f"{name}: arguments and result need {total / 2**30:.1f} GiB, more than the "
                            f"{MAX_PROGRAM_BYTES / 2**30:.0f} GiB limit; use smaller shapes")
        raw_ops = collect_linalg_ops(module)
        if not raw_ops:
            raise LoadError(f"{name}: no linalg op found in @{_sym(func)}; nothing to schedule")
        ops = _describe(raw_ops, name)
    return Program(text=text, sha256=sha256_text(text), func_name=_sym(func), args=args, results=results, ops=ops)


def collect_linalg_ops(module) -> list:
    """Linalg structured ops in textual (pre-)order, not descending into their bodies."""
    from mlir import ir

    found = []

    def visit(op):
        if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index"):
            found.append(op)
            return ir.WalkResult.SKIP
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def traversal_ids(n: int) -> list[str]:
    """Id of each op in textual order: traversal goes last consumer first, so op0 is the last op."""
    return [f"op{n - 1 - i}" for i in range(n)]


def tag_ops(module) -> None:
    """Tag every linalg op with its traversal id (the worker calls this on a fresh parse)."""
    from mlir import ir

    ops = collect_linalg_ops(module)
    for op, oid in zip(ops, traversal_ids(len(ops))):
        op.attributes[TAG] = ir.StringAttr.get(oid)


# ----------------------------------------------------------------------------------------------
def _first_diagnostic(e) -> str:
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


def _entry_function(module, name: str):
    from mlir import ir

    funcs = [op for op in module.body.operations if op.operation.name == "func.func"]
    with_body = [f for f in funcs if len(f.regions[0].blocks) > 0]
    if not with_body:
        raise LoadError(f"{name}: no func.func with a body; expected a function computing with linalg ops")
    for f in with_body:
        vis = f.attributes["sym_visibility"] if "sym_visibility" in f.attributes else None
        if vis is None or ir.StringAttr(vis).value == "public":
            return f
    return with_body[0]


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
    mlir.dialects.linalg with its Python op DSL (0.2-0.3 s of the app's start)."""
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


def _describe(raw_ops: list, name: str) -> list[LinalgOp]:
    from mlir import ir

    # the C extension behind mlir.dialects.linalg: importing that package also builds the Python op DSL
    # (opdsl, core_named_ops), 0.2-0.3 s of the app's start for three functions
    from mlir._mlir_libs import _mlirDialectsLinalg as linalg

    ids = traversal_ids(len(raw_ops))
    described: list[LinalgOp] = []
    for idx, (op, oid) in enumerate(zip(raw_ops, ids)):
        where = f"{name}:{_location(op)}"
        if op.name.startswith(_UNSUPPORTED):
            raise LoadError(f"{where}: {op.name} is not supported; lower it to linalg.generic first")
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
                if best is None or p.index > best[0].index:
                    best = (p, k)
        if best is not None:
            d.fusion_producer, d.fusion_operand = best[0].id, best[1]
    described.sort(key=lambda d: int(d.id[2:]))
    return described
