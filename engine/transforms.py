"""Schedules as transform-dialect scripts: one small builder per action kind.

The script is a separate module applied with `interpreter.apply_named_sequence(payload, entry, script)`;
`mlir-opt --transform-interpreter` replays the same text when it sits beside the payload
(`--emit-transform` writes it that way). Payload ops are found by their `rl.op` tag.
"""

from __future__ import annotations

from engine.config import DEFAULT_LIMITS, Limits
from engine.program import TAG, Program
from engine.schedule import Schedule
from engine.state import initial_state, replay

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


def match_op(b: _Builder, op_id: str, scope: str = "%root") -> str:
    h = b.fresh(f"{op_id}_")
    b.emit(f'{h} = transform.structured.match attributes {{{TAG} = "{op_id}"}} in {scope} : ({ANY}) -> {ANY}')
    return h


def tile(b: _Builder, h: str, sizes: tuple[int, ...]) -> str:
    """T: tile_using_for, one scf.for per non-zero size."""
    n = sum(1 for s in sizes if s)
    if n == 0:
        return h
    t, loops = b.fresh("tiled"), b.fresh("loops")
    b.emit(f"{t}, {loops}:{n} = transform.structured.tile_using_for {h} tile_sizes {list(sizes)} : {_ret(n + 1)}")
    return t


def tile_parallel(b: _Builder, h: str, sizes: tuple[int, ...]) -> tuple[str, str | None]:
    """TP: tile_using_forall; the scf.forall becomes an OpenMP parallel loop."""
    if not any(sizes):
        return h, None
    t, fa = b.fresh("tiled"), b.fresh("forall")
    b.emit(f"{t}, {fa} = transform.structured.tile_using_forall {h} tile_sizes {list(sizes)} : {_ret(2)}")
    return t, fa


def tile_fuse(b: _Builder, h: str, sizes: tuple[int, ...], producer: str) -> tuple[str, str | None]:
    """TF: tile the consumer into an scf.forall and fuse its producer into it."""
    t, fa = tile_parallel(b, h, sizes)
    if fa is None:
        return h, None
    p = match_op(b, producer)
    fp, fa2 = b.fresh("fused"), b.fresh("forall")
    b.emit(f"{fp}, {fa2} = transform.structured.fuse_into_containing_op {p} into {fa} : ({ANY}, {ANY}) -> ({ANY}, {ANY})")
    return t, fa2


def interchange(b: _Builder, h: str, perm: tuple[int, ...]) -> str:
    """I: generalize (named ops refuse interchange) then permute the iterators."""
    g, i = b.fresh("generic"), b.fresh("interchanged")
    b.emit(f"{g} = transform.structured.generalize {h} : ({ANY}) -> {ANY}")
    b.emit(f"{i} = transform.structured.interchange {g} iterator_interchange = {list(perm)} : ({ANY}) -> {ANY}")
    return i


def vectorize(b: _Builder, h: str, decompose: bool) -> None:
    """V: vectorize the (tiled) op; 2-D convolutions and poolings are decomposed to 1-D first."""
    if decompose:
        d = b.fresh("decomposed")
        b.emit(f"{d} = transform.structured.decompose {h} : ({ANY}) -> {ANY}")
        h = d
    b.emit(f"transform.structured.vectorize {h} : {ANY}")


def build_body(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS,
               check: bool = True) -> list[str]:
    """Script lines for the schedule; `check=False` skips the mask (to test crash handling)."""
    if check:
        replay(program, schedule, limits)  # raises ScheduleError on an illegal schedule
    b = _Builder()
    scopes: dict[str, str] = {}  # fused producer -> containing forall handle
    for op in program.ops:
        acts = schedule.actions(op.id)
        if not acts or all(a.kind == "NT" for a in acts):
            continue
        b.lines.append(f"    // {op.id} ({op.name} {op.shape_text}): " + " ".join(str(a) for a in acts))
        h = match_op(b, op.id, scopes.get(op.id, "%root"))
        st = initial_state(op)
        for a in acts:
            if a.kind == "T":
                h = tile(b, h, a.params)
            elif a.kind == "TP":
                h, _ = tile_parallel(b, h, a.params)
            elif a.kind == "TF" and op.fusion_producer is not None:
                h, fa = tile_fuse(b, h, a.params, op.fusion_producer)
                if fa is not None:
                    scopes[op.fusion_producer] = fa
            elif a.kind == "I":
                h = interchange(b, h, a.params)
                st.interchanged = True
            elif a.kind == "V":
                vectorize(b, h, decompose=op.decompose_dims is not None)
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
