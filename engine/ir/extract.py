"""One op of a program (with the producer tiled fusion would fuse into it) as a program of its own.

`mlir-rl-tui tune` tunes a workload on this small program instead of the whole model: a candidate of a
ResNet-18's convolution then compiles in a fraction of a second instead of the model's seconds, so a
workload gets tens of tries where it got a few. The new program's `@forward` takes as arguments the
tensors the ops read from the rest of the model (weights included) and returns the consumer's result;
small constants (scalars, index tables) and `tensor.empty`s are copied in. Its ops have the same workloads (engine.tune.workload) as in the model, so an op schedule tuned here is the
op schedule of every op of that workload there.

Parsing and rewriting MLIR can abort the process on bad input, so `extract_here` runs in the loader
process (engine.ir.loader); `extract` is what callers use.
"""

from __future__ import annotations

import math

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program


def extract(program: Program, groups: list[list[str]]) -> list[Program | str]:
    """Each group of op ids of `program` as a program of its own, or the one line saying why it cannot
    be (an op reading a value that is neither a tensor nor a constant, an op not at the top level, several
    results). One parse of the program for all groups (a ResNet-18 with its weights is 90 MB of text)."""
    from mlir_rl_tui.engine.ir.loader import guarded, load_text

    name = program.path or "<program>"
    texts = guarded("extract", program.text, name=name, func=program.func_name, groups=groups)["texts"]
    out: list[Program | str] = []
    for group, text in zip(groups, texts):
        if text.startswith("error: "):
            out.append(text.removeprefix("error: "))
            continue
        try:
            out.append(load_text(text, f"{name}:{'+'.join(group)}"))
        except EngineError as e:
            out.append(str(e))
    return out


#: Constant tensors up to this many elements are copied in (index tables, biases); larger ones (weights)
#: become arguments: a ResNet-18 convolution's 9 MB of weights made every compile of its program parse and
#: embed them, and their values do not change the op's time.
COPY_ELEMENTS = 4096


def _copyable(v) -> bool:
    """A value copied into the new function: a small constant or a static tensor.empty."""
    from mlir import ir

    if not isinstance(v, ir.OpResult):
        return False
    op = v.owner.operation
    if op.name == "tensor.empty":
        return len(op.operands) == 0
    if op.name != "arith.constant":
        return False
    value = op.attributes["value"]
    if isinstance(value, ir.DenseElementsAttr) and value.is_splat:
        return True
    return not isinstance(v.type, ir.ShapedType) or math.prod(v.type.shape) <= COPY_ELEMENTS


def extract_here(text: str, func: str, groups: list[list[str]]) -> list[str]:
    """In the loader process: each group's module text, or "error: " and why not."""
    from mlir import ir

    from mlir_rl_tui.engine.ir.program import TAG, collect_linalg_ops, functions_with_body, tag_ops

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        tag_ops(module, func)
        fn = next((f for f in functions_with_body(module)
                   if ir.StringAttr(f.attributes["sym_name"]).value == func), None)
        if fn is None:
            raise EngineError(f"no function @{func}")
        tagged = {ir.StringAttr(op.attributes[TAG]).value: op for op in collect_linalg_ops(fn)}
        out = []
        for group in groups:
            try:
                out.append(_one(fn, tagged, group))
            except EngineError as e:
                out.append(f"error: {e}")
        return out


def _one(fn, tagged: dict, op_ids: list[str]) -> str:
    from mlir import ir
    from mlir.dialects import func as func_d

    from mlir_rl_tui.engine.ir.program import TAG

    func = ir.StringAttr(fn.attributes["sym_name"]).value
    missing = [i for i in op_ids if i not in tagged]
    if missing:
        raise EngineError(f"no op {missing[0]} in @{func}")
    position = {op.operation: k for k, op in enumerate(fn.regions[0].blocks[0].operations)}
    chosen = [tagged[i].operation for i in op_ids]
    if any(op not in position for op in chosen):
        raise EngineError("an op inside another op's region cannot be taken out on its own")
    chosen.sort(key=lambda op: position[op])
    if len(chosen[-1].results) != 1:
        raise EngineError(f"{chosen[-1].name} has {len(chosen[-1].results)} results; one is supported")

    inside: set = set()
    outside: list = []  # values the ops read from the rest of the function, in order of first use

    def visit(o):
        for r in o.results:
            inside.add(r)
        for region in o.regions:
            for b in region.blocks:
                for a in b.arguments:
                    inside.add(a)
        return ir.WalkResult.ADVANCE

    for op in chosen:
        op.walk(visit, ir.WalkOrder.PRE_ORDER)

    def reads(o):
        for v in o.operands:
            if v not in inside and v not in outside:
                outside.append(v)
        return ir.WalkResult.ADVANCE

    for op in chosen:
        op.walk(reads, ir.WalkOrder.PRE_ORDER)
    copies, args = [], []
    for v in outside:
        if _copyable(v):
            copies.append((v, v.owner.operation))
            continue
        if not isinstance(v.type, ir.RankedTensorType):
            raise EngineError(f"the op reads a {v.type} computed elsewhere in @{func}; only tensors and "
                              "constants can become the new program's inputs")
        args.append(v)

    result = chosen[-1].results[0]
    new = ir.Module.create()
    with ir.InsertionPoint(new.body):
        f = func_d.FuncOp("forward", ir.FunctionType.get([v.type for v in args], [result.type]))
        entry = f.add_entry_block()
    mapping = dict(zip(args, entry.arguments))
    with ir.InsertionPoint(entry):
        for v, owner in copies:
            mapping[v] = owner.clone().results[0]
        for op in chosen:
            copy = op.clone()

            def remap(o):
                for k, v in enumerate(list(o.operands)):
                    if v in mapping:
                        o.operands[k] = mapping[v]
                return ir.WalkResult.ADVANCE

            copy.walk(remap, ir.WalkOrder.PRE_ORDER)
            if TAG in copy.attributes:
                del copy.attributes[TAG]
            for a, b in zip(op.results, copy.results):
                mapping[a] = b
        func_d.ReturnOp([mapping[result]])
    new.operation.verify()
    return str(new)
