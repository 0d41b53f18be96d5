"""The current op's feature vector, block by block as in the paper (Sec. IV-B, engine.rl.features.blocks)."""

from __future__ import annotations

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from mlir_rl_tui.engine import Session
from mlir_rl_tui.engine.config import ARITH_KINDS, OP_TYPES
from mlir_rl_tui.engine.rl.features import blocks, features, split
from mlir_rl_tui.engine.schedule.state import OpState, vectorize_choice

ARITH_SIGNS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "exp": "exp"}


def _matrix(rows: np.ndarray) -> list[str]:
    return ["[" + " ".join(str(int(v)) if v else "·" for v in r) + "]" for r in rows]


def render_features(session: Session, st: OpState | None = None) -> Group | Text:
    """Rich renderable of the feature blocks of `st` (default: the current op)."""
    st = st or session.current
    if st is None:
        return Text("every op is finished", style="dim")
    lim = session.limits
    pending = session.pending if st is session.current else None
    vec = features(st, lim, pending)
    parts = split(vec, lim)
    n, op = st.n_loops, st.op
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column()
    sizes = dict(blocks(lim))

    def head(name: str) -> Text:
        return Text.assemble((name, "bold"), (f" {sizes[name]}", "dim"))

    kind = OP_TYPES[int(np.argmax(parts["op_type"]))]
    t.add_row(head("op_type"), Text(kind, style="cyan"))
    w = max(len(str(int(b))) for b in parts["bounds"][:n]) if n else 1
    bounds = " ".join(f"{int(b):>{w}}" for b in parts["bounds"][:n])
    its = " ".join(f"{'r' if i else 'p':>{w}}" for i in parts["iterators"][:n])
    t.add_row(head("bounds"), bounds)
    t.add_row(head("iterators"), its)
    vc = vectorize_choice(st, lim)
    flag = bool(parts["vectorizable"][0])
    t.add_row(head("vectorizable"), Text("yes" if flag else "no", style="green" if flag else "red")
              + (Text(f"  (V now: {vc.reason})", style="dim") if not vc.allowed else Text("")))
    ops = " ".join(f"{ARITH_SIGNS[k]}:{int(v)}" for k, v in zip(ARITH_KINDS, parts["op_counts"], strict=True))
    t.add_row(head("op_counts"), ops)
    acc = parts["access"].reshape(lim.n_arrays, lim.max_rank, lim.n_loops)
    mats = Table.grid(padding=(0, 2))
    names = [chr(ord("A") + i) for i in range(op.n_inputs)] + ["Y"] * (len(op.access) - op.n_inputs)
    cells = []
    for k, rows in enumerate(op.access[: lim.n_arrays]):
        rank = len(rows)
        body = _matrix(acc[k, :rank, :n]) if rank else ["(scalar)"]
        cells.append(Text("\n".join([f"{names[k]} {rank}x{n}"] + body), no_wrap=True))
    per = 3 if n <= 3 else (2 if n <= 5 else 1)
    for i in range(0, len(cells), per):
        mats.add_row(*cells[i: i + per])
    t.add_row(head("access"), mats)
    hist: list[str] = []
    for kind_name in ("T", "TP", "TF"):
        h = parts[f"history_{kind_name}"].reshape(lim.tau, lim.n_loops, lim.n_tile_sizes)
        for step in range(lim.tau):
            if h[step].any():
                s = [lim.tile_sizes[int(np.argmax(h[step, p]))] for p in range(n)]
                hist.append(f"{kind_name}({','.join(map(str, s))})")
    hi = parts["history_I"].reshape(lim.tau, lim.n_loops, lim.n_loops)
    for step in range(lim.tau):
        if hi[step].any():
            perm = [int(np.argmax(hi[step, p])) for p in range(n) if hi[step, p].any()]
            hist.append(f"I({','.join(map(str, perm))})")
    hsize = sum(v for k, v in sizes.items() if k.startswith("history"))
    t.add_row(Text.assemble(("history", "bold"), (f" {hsize}", "dim")), " ".join(hist) if hist else Text("(none)", style="dim"))
    nz = int(np.count_nonzero(vec))
    foot = Text(f"{op.id} {op.name}: {nz} non-zero of {vec.size} features "
                f"(observation = consumer + producer: {2 * vec.size})", style="dim")
    return Group(t, foot)


class FeaturesView(VerticalScroll):
    """Scrollable, labelled feature blocks of the current op."""

    DEFAULT_CSS = """
    FeaturesView { height: 1fr; }
    FeaturesView > Static { width: auto; }
    """

    def compose(self):
        yield Static(id="features-body")

    def show(self, session: Session) -> None:
        self.query_one("#features-body", Static).update(render_features(session))
