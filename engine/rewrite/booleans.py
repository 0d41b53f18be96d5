"""Boolean (i1) tensors between linalg ops stored as i8, before bufferization.

PyTorch's attention (`nn.MultiheadAttention`, `scaled_dot_product_attention`) imports with a "safe
softmax": an i1 tensor saying which rows are all -inf, reduced with `andi` and read by a `select`.
Bufferized as it is, that is a memref of i1, and lowering its stores aborts MLIR's LLVM conversion in
these wheels (an assertion: stored integers must be at least 8 bits wide). Here each such tensor becomes
an i8 tensor: its producer writes `extui(value)`, every linalg op reading it reads `trunci(byte)`; the
ops' own computations stay in i1, except a reduction by `andi`/`ori`/`xori` into an i1 result (the safe
softmax's "all -inf" row test), which is computed on the bytes themselves so that it stays a reduction
the vectorizer recognizes (the same bits: those ops commute with widening 0/1). Applied in engine.run.compile
after parsing and tagging, before the transform script, to every program (the script then tiles and
vectorizes the i8 form).
"""

from __future__ import annotations

#: Part of the cache key of a program this rewrite changes (engine.store.keys.cache_key): before it, such a
#: program's measurement was a crash, which must not be served now.
VERSION = "booleans-2"


def rewrites(text: str) -> bool:
    """Whether the program text holds an i1 tensor `widen` may rewrite."""
    return "xi1>" in text


#: ops whose i1 tensor result only changes type with their operand (a view or a copy of it)
_VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice", "tensor.cast")


def widen(module) -> int:
    """Rewrite `module` in place (inside an active MLIR context); how many i1 tensors became i8."""
    from mlir import ir

    ops: list = []

    def visit(op):
        if op.name != "linalg.yield" and any(_is_i1_tensor(r.type) for r in op.results) \
                or op.name == "linalg.generic" and any(_is_i1_tensor(v.type) for v in op.operands):
            ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    count = 0
    for op in ops:
        name = op.name
        if name == "tensor.empty" or name in _VIEWS:
            for r in op.results:
                if _is_i1_tensor(r.type):
                    r.set_type(_as_i8(r.type))
                    count += 1
        elif name == "linalg.fill" and _is_i1_tensor(op.results[0].type):
            count += _fill(op)
        elif name == "linalg.generic":
            count += _generic(op)
    return count


def _is_i1_tensor(t) -> bool:
    from mlir import ir

    return isinstance(t, ir.RankedTensorType) and isinstance(t.element_type, ir.IntegerType) \
        and t.element_type.width == 1


def _as_i8(t):
    from mlir import ir

    return ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(8), t.encoding)


def _fill(op) -> int:
    from mlir import ir
    from mlir.dialects import arith, linalg

    from mlir_rl_tui.engine.ir.program import TAG

    i8 = ir.IntegerType.get_signless(8)
    with ir.InsertionPoint(op), op.location:
        value = arith.extui(i8, op.operands[0])
        new = linalg.fill(value, outs=[op.operands[1]])
    if TAG in op.attributes:  # the schedule finds the op by its tag
        new.owner.attributes[TAG] = op.attributes[TAG]
    op.results[0].replace_all_uses_with(new)
    op.erase()
    return 1


def _generic(op) -> int:
    """A linalg.generic: its i8 operands (made so above) read as i1, its i1 results written as i8."""
    from mlir import ir
    from mlir.dialects import arith

    i1, i8 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(8)
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    made = 0
    for k, v in enumerate(op.operands):
        arg = args[k]
        if isinstance(v.type, ir.RankedTensorType) and v.type.element_type == i8 and arg.type == i1:
            arg.set_type(i8)
            with ir.InsertionPoint.at_block_begin(block), op.location:
                narrow = arith.trunci(i1, arg)
            arg.replace_all_uses_except(narrow, narrow.owner.operation)
    yield_op = block.operations[len(block.operations) - 1]
    n_in = len(op.operands) - len(op.results)
    for k, r in enumerate(op.results):
        if not _is_i1_tensor(r.type):
            continue
        r.set_type(_as_i8(r.type))
        if not _bitwise_reduction(yield_op, k, args[n_in + k]):
            with ir.InsertionPoint(yield_op), op.location:
                wide = arith.extui(i8, yield_op.operands[k])
            yield_op.operands[k] = wide
        made += 1
    return made


_BITWISE = ("arith.andi", "arith.ori", "arith.xori")


def _bitwise_reduction(yield_op, k: int, acc) -> bool:
    """If result `k` yields `andi/ori/xori(x, trunci(acc))` (its accumulator `acc`, now i8, read as i1 above),
    compute it as `op(extui(x), acc)` in i8 and yield that; whether it did."""
    from mlir import ir
    from mlir.dialects import arith

    value = yield_op.operands[k]
    combiner = _defining(value)
    if combiner is None or combiner.name not in _BITWISE:
        return False
    a, b = combiner.operands[0], combiner.operands[1]
    narrow = next((v for v in (a, b) if (d := _defining(v)) is not None and d.name == "arith.trunci"
                   and d.operands[0] == acc), None)
    if narrow is None or len(list(value.uses)) != 1:
        return False
    other = b if narrow == a else a
    i8 = ir.IntegerType.get_signless(8)
    with ir.InsertionPoint(combiner), combiner.location:
        wide = arith.extui(i8, other)
        new = ir.Operation.create(combiner.name, results=[i8], operands=[wide, acc])
    yield_op.operands[k] = new.results[0]
    combiner.erase()
    narrow_op = _defining(narrow)
    if not list(narrow.uses):  # a use of the accumulator besides the combiner: no reduction for the vectorizer
        narrow_op.erase()
    return True


def _defining(value):
    """The operation defining `value`, or None for a block argument."""
    owner = value.owner
    return getattr(owner, "operation", None)
