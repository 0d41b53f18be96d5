"""Adjacent OpenMP parallel regions merged into one: one fork and join where there were several.

MLIR's convert-scf-to-openmp makes one `omp.parallel { omp.wsloop }` per parallel loop nest, so a program
whose ops are tiled in parallel one after the other forks and joins the team once per op: a causal
attention block 22 times a call. Each `omp.wsloop` (without `nowait`) ends in a barrier, so two regions
that follow each other, with only constants and allocations between them, run the same as one region
holding both loops: the barrier after the first loop orders its writes before the second loop's reads,
as the join and the fork did. On GNU OpenMP (the runtime a built library runs on in a PyTorch process) a
fork and join costs more than a barrier; LLVM's OpenMPOpt pass merges regions the same way
(`-openmp-opt-enable-merging`), but its flag cannot be set through the Python bindings.

Run between convert-scf-to-openmp and the lowering to LLVM (engine.run.compile.lower). The ops between two
regions are moved above the first (constants, views, allocations: none reads or writes memory another
region touches) or, for deallocations, below the second (the second region cannot use a buffer freed
before it); any other op between them (a serial loop, a load) keeps the regions apart.
"""

from __future__ import annotations

# Not part of the cache key (engine.store.keys.cache_key): merging changes how fast a parallel schedule runs,
# not what it computes, and every multi-op program would otherwise be keyed apart from its sha256, the key the
# cost model's and the dataset's readers find its rows by. A figure cached before the merge is slower by at most
# the forks it saves (`--no-cache` measures it again); a library is checked whenever it is built.

#: Ops that neither read nor write memory (or only allocate it) and have no regions: moved above a region.
_HOIST = frozenset({
    "arith.constant", "llvm.mlir.constant", "ub.poison", "memref.alloc", "memref.alloca", "memref.subview",
    "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast", "memref.cast", "memref.view",
    "memref.extract_strided_metadata", "memref.get_global", "affine.apply", "arith.index_cast",
    "arith.addi", "arith.muli", "arith.subi",
})
_SINK = frozenset({"memref.dealloc"})
_TERMINATORS = frozenset({"func.return", "scf.yield", "omp.terminator", "omp.yield", "cf.br", "cf.cond_br"})


def _plain_region(op) -> bool:
    """An `omp.parallel` without clauses (the team's default size, no private or reduction values)."""
    return op.name == "omp.parallel" and len(op.operands) == 0 and len(op.regions[0].blocks) == 1 \
        and len(op.regions[0].blocks[0].arguments) == 0


def _has_omp(op) -> bool:
    """Whether `op` is or holds an OpenMP op (a region of its own: not moved into another)."""
    from mlir import ir

    found = []

    def visit(inner):
        if inner.name.startswith("omp."):
            found.append(inner)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return bool(found)


def _gap_kind(op) -> str | None:
    """How an op between two regions moves: 'hoist' (above the first), 'sink' (below the second), 'master'
    (into the merged region, run by one thread between two barriers: serial work with no results, such as
    the loops of an op scheduled without TP), or None (the regions stay apart)."""
    if op.name in _HOIST:
        return "hoist"
    if op.name in _SINK:
        return "sink"
    if len(op.results) == 0 and op.name not in _TERMINATORS and not _has_omp(op):
        return "master"
    return None


def merge_block(block) -> int:
    """Merge the runs of adjacent plain regions in `block`; the number of regions removed."""
    from mlir import ir

    merged = 0
    ops = list(block.operations)
    i = 0
    while i < len(ops):
        first = ops[i]
        if not _plain_region(first):
            i += 1
            continue
        j = i + 1
        while j < len(ops) and _gap_kind(ops[j]) is not None:
            j += 1
        if j == len(ops) or not _plain_region(ops[j]):
            i = j if j > i + 1 else i + 1
            continue
        second = ops[j]
        gaps = [(g, _gap_kind(g)) for g in ops[i + 1:j]]
        for g, kind in gaps:
            if kind == "hoist":
                g.move_before(first)
        for g, kind in reversed(gaps):
            if kind == "sink":
                g.move_after(second)
        into = first.regions[0].blocks[0]
        terminator = list(into.operations)[-1]
        serial = [g for g, kind in gaps if kind == "master"]
        if serial:
            with ir.InsertionPoint(terminator), first.location:
                master = ir.Operation.create("omp.master", regions=1)
                ir.Operation.create("omp.barrier")
            body = master.regions[0].blocks.append()
            for g in serial:
                g.move_before(master)  # then into the master's block, in order
            with ir.InsertionPoint(body), first.location:
                end = ir.Operation.create("omp.terminator")
            for g in serial:
                g.move_before(end)
        for inner in list(second.regions[0].blocks[0].operations)[:-1]:  # all but its omp.terminator
            inner.move_before(terminator)
        second.erase()
        merged += 1
        ops = list(block.operations)
        i += sum(1 for _, kind in gaps if kind == "hoist")  # `first`, now after the ops moved above it
    return merged


def merge(module) -> int:
    """Merge adjacent parallel regions in every block of `module` outside a parallel region; how many were
    removed."""
    from mlir import ir

    blocks = []

    def visit(op):
        if op.name == "omp.parallel":
            return ir.WalkResult.SKIP
        for region in op.regions:
            blocks.extend(region.blocks)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return sum(merge_block(b) for b in blocks)
