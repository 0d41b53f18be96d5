"""Schedules as transform-dialect scripts: one small builder per action kind.

The script is a separate module applied with `interpreter.apply_named_sequence(payload, entry, script)`;
`mlir-opt --transform-interpreter` replays the same text when it sits beside the payload
(`--emit-transform` writes it that way). Payload ops are found by their `rl.op` tag.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.ir.program import TAG, Program
from mlir_rl_tui.engine.schedule.notation import Schedule
from mlir_rl_tui.engine.schedule.state import OpState, applied, tiles_nothing, untiled_covering, walk

ANY = "!transform.any_op"


def _ret(n: int) -> str:
    return f"({ANY}) -> (" + ", ".join([ANY] * n) + ")"


class _Builder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counter = 0

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)


def match_op(b: _Builder, tag: str, scope: str = "%root") -> str:
    """The payload op tagged `tag` (an op id, or `producer@consumer` for a fused copy) inside `scope`."""
    h = b.fresh(f"{tag.split('@')[0]}_")
    b.emit(f'{h} = transform.structured.match attributes {{{TAG} = "{tag}"}} in {scope} : ({ANY}) -> {ANY}')
    return h


def tile(b: _Builder, h: str, sizes: tuple[int, ...]) -> tuple[str, list[str]]:
    """T: tile_using_for, one scf.for per non-zero size; returns the tiled op and the loops, outer first."""
    n = sum(1 for s in sizes if s)
    if n == 0:
        return h, []
    t, loops = b.fresh("tiled"), b.fresh("loops")
    b.emit(f"{t}, {loops}:{n} = transform.structured.tile_using_for {h} tile_sizes {list(sizes)} : {_ret(n + 1)}")
    return t, [f"{loops}#{i}" for i in range(n)]


def tile_parallel(b: _Builder, h: str, sizes: tuple[int, ...]) -> tuple[str, str | None]:
    """TP: tile_using_forall; the scf.forall becomes an OpenMP parallel loop."""
    if not any(sizes):
        return h, None
    t, fa = b.fresh("tiled"), b.fresh("forall")
    b.emit(f"{t}, {fa} = transform.structured.tile_using_forall {h} tile_sizes {list(sizes)} : {_ret(2)}")
    return t, fa


def fuse(b: _Builder, producer: str, container: str, tag: str) -> tuple[str, str]:
    """Fuse the producer into the container (an scf.forall) and tag the fused copy `tag`: a producer of
    two consumers is copied into the tiles of both, and matching its op id must find only the original.

    A consumer that reads the producer twice (x * x) has two equal slices of it in the container: CSE
    makes them one first, so fusion makes one copy (two would give the producer's own actions a handle
    to two ops)."""
    b.emit(f"transform.apply_cse to {container} : {ANY}")
    fp, fa = b.fresh("fused"), b.fresh("forall")
    b.emit(f"{fp}, {fa} = transform.structured.fuse_into_containing_op {producer} into {container} "
           f": ({ANY}, {ANY}) -> ({ANY}, {ANY})")
    name = b.fresh("tag")
    b.emit(f'{name} = transform.param.constant "{tag}" -> !transform.any_param')
    b.emit(f"transform.annotate {fp} \"{TAG}\" = {name} : {ANY}, !transform.any_param")
    return fp, fa


def tile_fuse(b: _Builder, h: str, sizes: tuple[int, ...], producer: str, tag: str,
              scopes: Sequence[str] = ()) -> tuple[str, str | None]:
    """TF: tile the consumer into an scf.forall and fuse its producer into it; returns the tiled consumer
    and the new forall (None when `sizes` tile nothing).

    A consumer that was itself fused into tiles (`scopes`, outermost first) reads its producer from
    outside them: fusion only follows uses inside the containing op, so the producer is fused into each
    of those tiles in turn, then into the new one. With no size to tile, the producer only follows the
    consumer into its tiles (a forall of one iteration instead would be folded by canonicalization, and
    MLIR's slice canonicalizer mis-types the slices it leaves: `mask.untiled_covering`)."""
    if not any(sizes) and not scopes:
        return h, None
    p = match_op(b, producer)
    for scope in scopes:
        p, _ = fuse(b, p, scope, tag)
    if not any(sizes):
        return h, None
    t, fa = tile_parallel(b, h, sizes)
    _, fa2 = fuse(b, p, fa, tag)
    return t, fa2


def interchange(b: _Builder, h: str, perm: tuple[int, ...]) -> str:
    """I: generalize (named ops refuse interchange) then permute the iterators."""
    g, i = b.fresh("generic"), b.fresh("interchanged")
    b.emit(f"{g} = transform.structured.generalize {h} : ({ANY}) -> {ANY}")
    b.emit(f"{i} = transform.structured.interchange {g} iterator_interchange = {list(perm)} : ({ANY}) -> {ANY}")
    return i


def vectorize(b: _Builder, h: str, decompose: bool, generic: bool) -> None:
    """V: vectorize the (tiled) op; 2-D convolutions and poolings are decomposed to 1-D first, and
    contractions become `vector.contract` (`create_named_contraction`), lowered to FMAs by `finish`.
    A linalg.generic is specialized to its named op first where it is one (a generic matmul otherwise
    vectorizes to mulf + addf: 71 instead of 111 GFLOP/s)."""
    if decompose:
        d = b.fresh("decomposed")
        b.emit(f"{d} = transform.structured.decompose {h} : ({ANY}) -> {ANY}")
        h = d
    if generic:
        sp = b.fresh("specialized")
        b.emit(f"{sp} = transform.structured.specialize {h} : ({ANY}) -> {ANY}")
        h = sp
    b.emit(f"transform.structured.vectorize {h} {{create_named_contraction}} : {ANY}")


def specializable(op) -> bool:
    """Whether `structured.specialize` finds the named op of a contraction: one reduction loop and at most
    three parallel ones (matmul, batch matmul and their transposed forms). A contraction over several
    reduction loops (a reshape folded into a matmul: `64x64x1x4x16`) has none, and specialize fails the
    whole script; the vectorizer takes it as it is."""
    its = [lp.iterator for lp in op.loops]
    return bool(op.contraction) and its.count("reduction") == 1 and its.count("parallel") <= 3


def batch_order_undo(st: OpState) -> tuple[int, ...] | None:
    """The interchange back to the original loop order of an interchanged batch contraction whose batch
    loops no longer lead: `specialize` recognizes a batch matmul only with its batch loops outermost, and
    V turns the tile into one vector.contract whatever the loop order was."""
    op = st.op
    if not (op.contraction and st.interchanged):
        return None
    batch = [d for d in range(st.n_loops) if all(any(row[d] for row in rows) for rows in op.access)]
    if st.order[:len(batch)] == batch:
        return None
    return tuple(st.order.index(d) for d in range(st.n_loops))


def finish(b: _Builder, func: str, reduction_loops: list[str]) -> None:
    """After every op is transformed (so no pattern can invalidate a handle still to be used):

    - keep accumulators in registers: canonicalize (slices fold into the vector transfers), then hoist
      the output's transfers out of the tile loops over reduction dimensions, innermost first (a loop
      whose output subset is not invariant is left as it is);
    - lower contractions to outer products (FMAs): the default "dot" lowering of a vector.contract is
      40x slower (reference/codegen-spike).
    """
    b.emit(f"transform.apply_patterns to {func} {{")
    for pattern in ("tensor.merge_consecutive_insert_extract_slice",
                    "tensor.fold_tensor_subset_ops_into_vector_transfers"):
        b.emit(f"  transform.apply_patterns.{pattern}")
    b.emit(f"}} : {ANY}")
    for loop in reduction_loops:
        b.emit(f"transform.loop.hoist_loop_invariant_subsets {loop} : {ANY}")
    b.emit(f"transform.apply_patterns to {func} {{")
    for pattern in ('vector.lower_contraction lowering_strategy = "outerproduct"', "vector.lower_outerproduct",
                    "vector.transfer_permutation_patterns", "vector.lower_transfer max_transfer_rank = 1",
                    "canonicalization"):
        b.emit(f"  transform.apply_patterns.{pattern}")
    b.emit(f"}} : {ANY}")


def match_func(b: _Builder, name: str) -> str:
    f = b.fresh("func")
    b.emit(f'{f} = transform.structured.match ops{{["func.func"]}} attributes {{sym_name = "{name}"}} '
           f"in %root : ({ANY}) -> {ANY}")
    return f


def build_body(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS,
               check: bool = True) -> list[str]:
    """Script lines for the schedule; `check=False` skips the mask (to test crash handling)."""
    b = _Builder()
    func = match_func(b, program.func_name)
    handles: dict[str, str] = {}  # op id -> handle of its (tiled) op
    #: fused producer -> (the foralls it was fused into, outermost first; the tag of its copy there)
    scopes: dict[str, tuple[list[str], str]] = {}
    reduction_loops: dict[str, list[str]] = {}  # op id -> its tile loops over reduction dims, outer first
    hoist: list[str] = []  # reduction tile loops of vectorized ops, innermost first per op
    for st, given in walk(program, schedule, limits, check=check):
        op = st.op
        # NT emits nothing, nor does a tiling that tiles nothing; covering tile sizes are 0 (see `applied`)
        if tiles_nothing(st, given) or (given.kind == "NT" and op.id not in handles):
            continue
        a = applied(st, given)
        if op.id not in handles:
            b.lines.append(f"    // {op.id} ({op.name} {op.shape_text}): "
                           + " ".join(str(x) for x in schedule.actions(op.id)))
            chain, tag = scopes.get(op.id, (["%root"], op.id))
            handles[op.id] = match_op(b, tag, chain[-1])
        h = handles[op.id]
        if a.kind == "T":
            h, loops = tile(b, h, a.params)
            tiled = [pos for pos, s in enumerate(a.params) if s]
            reduction_loops.setdefault(op.id, []).extend(
                lp for pos, lp in zip(tiled, loops) if op.loops[st.loop_at(pos)].iterator == "reduction")
        elif a.kind == "TP":
            h, _ = tile_parallel(b, h, a.params)
        elif a.kind == "TF" and op.fusion_producer is not None and any(a.params):
            tag = f"{op.fusion_producer}@{op.id}"
            chain = scopes[op.id][0] if op.id in scopes else []
            h, fa = tile_fuse(b, h, untiled_covering(st, a), op.fusion_producer, tag, chain)
            if fa is not None or chain:
                scopes[op.fusion_producer] = (chain + ([fa] if fa is not None else []), tag)
            else:  # no tile, no enclosing one: the producer stays as it is, and its own actions apply to it there
                scopes.pop(op.fusion_producer, None)
        elif a.kind == "I":
            h = interchange(b, h, a.params)
        elif a.kind == "V":
            undo = batch_order_undo(st)
            if undo is not None:
                h = interchange(b, h, undo)
            vectorize(b, h, op.decompose_dims is not None,
                      specializable(op) and (op.name == "linalg.generic" or st.interchanged))
            hoist += reversed(reduction_loops.get(op.id, []))
        handles[op.id] = h
    if not handles:
        return []
    if any(a.kind == "V" for acts in schedule.ops.values() for a in acts):
        finish(b, func, hoist)
    return b.lines


def script(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS, check: bool = True) -> str:
    """The whole transform module for a schedule (an empty sequence for the baseline)."""
    body = build_body(program, schedule, limits, check)
    lines = [
        "module attributes {transform.with_named_sequence} {",
        f"  transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{",
        *body,
        "    transform.yield",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def uses_parallel(schedule: Schedule) -> bool:
    return any(a.kind in ("TP", "TF") and any(a.params) for acts in schedule.ops.values() for a in acts)
