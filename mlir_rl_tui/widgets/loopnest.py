"""The current op as indented loop pseudo-code: what tiling, fusion, interchange and vectorization did.

Made for teaching: each tiling adds a band of tile loops (`for i0 in 0..256 step 64`), the loops inside
run over one tile, interchange reorders the point loops, and V turns them into one vector operation.
"""

from __future__ import annotations

from mlir_rl_tui.engine.schedule.notation import TILED
from mlir_rl_tui.engine.schedule.state import OpState

NAMES = "ijklmnopqrstuvwxyz"


def loop_var(d: int) -> str:
    return NAMES[d] if d < len(NAMES) else f"d{d}"


def _index(row: list[int]) -> str:
    terms = []
    for d, c in enumerate(row):
        if c == 1:
            terms.append(loop_var(d))
        elif c:
            terms.append(f"{c}*{loop_var(d)}")
    return "+".join(terms) or "0"


def _ref(name: str, rows: list[list[int]]) -> str:
    return f"{name}[{', '.join(_index(r) for r in rows)}]" if rows else name


def body(st: OpState) -> str:
    """The op's statement with its accesses, e.g. `Y[i, j] += A[i, k] * B[k, j]`."""
    op = st.op
    ins = [_ref(chr(ord("A") + n), op.access[n] if n < len(op.access) else []) for n in range(op.n_inputs)]
    out = _ref("Y", op.access[op.n_inputs] if len(op.access) > op.n_inputs else [])
    reduction = any(lp.iterator == "reduction" for lp in op.loops)
    kinds = [k for k, v in op.arith.items() if v]
    if len(ins) == 2 and reduction and set(kinds) >= {"add", "mul"}:
        return f"{out} += {ins[0]} * {ins[1]}"
    if op.name == "linalg.fill":
        return f"{out} = {ins[0] if ins else 'cst'}"
    f = op.name.split(".", 1)[-1] if not kinds else "/".join(kinds)
    if op.op_type == "pooling":
        return f"{out} = max({out}, {ins[0]})" if ins else f"{out} = max(...)"
    if reduction:
        return f"{out} = {f}({out}, {', '.join(ins)})"
    return f"{out} = {f}({', '.join(ins)})"


def loop_nest(st: OpState, fused_producer: str | None = None, pending: list[int] | None = None) -> str:
    """Pseudo-code of the op after its actions so far (bounds, steps, the action that made each band)."""
    op = st.op
    n = len(op.loops)
    order = list(range(n))
    extents = list(st.extents) if st.fused_into else [lp.bound for lp in op.loops]
    start: list[str | None] = [None] * n
    level = [0] * n
    lines = [f"# {op.id}: {op.name} {op.shape_text}  ({op.location})",
             "# loops: " + ", ".join(f"{loop_var(d)} {lp.bound} {lp.iterator}" for d, lp in enumerate(op.loops))]
    if st.fused_into:
        lines.append(f"# fused into {st.fused_into}: it runs inside {st.fused_into}'s tile loops, "
                     f"on a {'x'.join(str(e) for e in st.extents)} tile")
    depth = 0

    def emit(text: str, note: str = "") -> None:
        pad = "  " * depth
        lines.append(f"{pad}{text}" + (f"    # {note}" if note else ""))

    vectorized = False
    for a in st.actions:
        if a.kind in TILED:
            if not any(a.params):
                lines.append("  " * depth + f"# {a}: all sizes 0, nothing tiled")
                continue
            kw = "parallel for" if a.kind in ("TP", "TF") else "for"
            first = True
            for pos, s in enumerate(a.params):
                if not s or pos >= n:
                    continue
                d = order[pos]
                v = f"{loop_var(d)}{level[d]}"
                lo = start[d] or "0"
                hi = f"{start[d]}+{extents[d]}" if start[d] else str(extents[d])
                emit(f"{kw} {v} in {lo}..{hi} step {s}:", str(a) if first else "")
                first = False
                start[d], extents[d] = v, s
                level[d] += 1
                depth += 1
            if a.kind == "TF":
                emit(f"{fused_producer or 'the producer'} computed here, on this tile only", "fused by TF")
        elif a.kind == "I":
            order = [order[p] for p in a.params]
            lines.append("  " * depth + f"# {a}: point loops now in order "
                         + ", ".join(loop_var(d) for d in order))
        elif a.kind == "V":
            vectorized = True
        elif a.kind == "NT":
            lines.append("  " * depth + "# NT: no further transformation")
    if pending:
        lines.append("  " * depth + "# interchange in progress: "
                     + ", ".join(f"position {p} <- {loop_var(order[loop])}" for p, loop in enumerate(pending)))
    if vectorized:
        shape = "x".join(str(extents[d]) for d in order)
        emit(f"vector<{shape}> over " + ", ".join(loop_var(d) for d in order) + ":", "V: one vector operation")
        depth += 1
        emit(body(st))
        return "\n".join(lines)
    for d in order:
        lo = start[d] or "0"
        hi = f"{start[d]}+{extents[d]}" if start[d] else str(extents[d])
        kw = "for" if op.loops[d].iterator == "parallel" else "for"
        emit(f"{kw} {loop_var(d)} in {lo}..{hi}:", "reduction" if op.loops[d].iterator == "reduction" else "")
        depth += 1
    emit(body(st))
    return "\n".join(lines)
