"""The action mask of the current op: every transformation and parameter choice, allowed or why not."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from mlir_rl_tui.engine import Session
from mlir_rl_tui.engine.schedule.notation import TILED

YES = Text("✓", style="bold green")
NO = Text("✗", style="bold red")


def render_mask(session: Session, kind: str = "T") -> Group | Text:
    """Transformations with reasons, then the tile-size grid of `kind` (or the interchange pointers)."""
    st = session.current
    mask = session.mask()
    if st is None or mask is None:
        return Text("every op is finished: nothing left to choose", style="dim")
    top = Table.grid(padding=(0, 1))
    top.add_column(no_wrap=True)
    top.add_column(no_wrap=True)
    top.add_column()
    for k, c in mask.transformation.items():
        top.add_row(Text(k, style="bold"), YES if c.allowed else NO, Text(c.reason, style="dim"))
    parts: list = [Text(f"{st.op.id} {st.op.name} {st.op.shape_text}", style="bold"), top, Text("")]
    n = st.n_loops
    if kind in TILED:
        grid = Table(title=f"{kind} tile size per loop", title_justify="left",
                     box=None, padding=(0, 1), show_edge=False)
        grid.add_column("loop", no_wrap=True)
        for s in mask.tile_sizes:
            grid.add_column(str(s), justify="center", no_wrap=True)
        reasons: list[Text] = []
        for pos in range(n):
            d = st.loop_at(pos)
            lp = st.op.loops[d]
            row = mask.tile[kind][pos]
            label = f"{pos} {st.extents[d]}{'r' if lp.iterator == 'reduction' else 'p'}"
            grid.add_row(label, *[YES if c.allowed else NO for c in row])
            seen: dict[str, list[int]] = {}
            for s, c in zip(mask.tile_sizes, row, strict=True):
                if not c.allowed:
                    seen.setdefault(_generic(c.reason, s), []).append(s)
            for why, ss in seen.items():
                reasons.append(Text.assemble((f"loop {pos}", "bold"), f" {','.join(map(str, ss))}: ", (why, "dim")))
        if not mask.transformation[kind].allowed:
            parts.append(Text(f"{kind} is masked: {mask.transformation[kind].reason}", style="red"))
        parts += [grid, *reasons]
    elif kind == "I":
        t = Table(title="I: loop for the next position", title_justify="left",
                  box=None, padding=(0, 1), show_edge=False)
        t.add_column("loop")
        t.add_column("")
        t.add_column("reason")
        for loop in range(n):
            c = mask.interchange[loop]
            t.add_row(f"{loop} ({st.extents[st.loop_at(loop)]})", YES if c.allowed else NO, Text(c.reason, style="dim"))
        parts.append(t)
    else:
        c = mask.transformation.get(kind)
        parts.append(Text(f"{kind} takes no parameters" + (f" - masked: {c.reason}" if c and not c.allowed else ""),
                          style="dim"))
    return Group(*parts)


def _generic(reason: str, size: int) -> str:
    """Group reasons that differ only by the size ("tile 16 > extent 8" and "tile 32 > extent 8")."""
    return reason.replace(f"tile {size} ", "tile ")


class MaskView(VerticalScroll):
    """Scrollable mask of the current op for the transformation picked in the action bar."""

    DEFAULT_CSS = """
    MaskView { height: 1fr; }
    """

    def compose(self):
        yield Static(id="mask-body")

    def show(self, session: Session, kind: str) -> None:
        self.query_one("#mask-body", Static).update(render_mask(session, kind))
