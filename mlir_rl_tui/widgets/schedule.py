"""The op tree: linalg ops in traversal order with shapes, links, per-op state; the current op marked."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree

from engine import Session

STATE_STYLE = {"untouched": "dim", "scheduled": "yellow", "vectorized": "green", "done": "cyan"}


class OpTree(Tree[str]):
    """One node per op (`op0 linalg.matmul 256x256x256  scheduled`), children: links and actions."""

    DEFAULT_CSS = """
    OpTree { height: 1fr; background: $surface; }
    """

    def __init__(self, **kw) -> None:
        super().__init__("program", **kw)
        self.show_root = True
        self.guide_depth = 2

    def show(self, session: Session) -> None:
        prog = session.program
        cur = session.current
        self.clear()
        self.root.set_label(Text.assemble(("@" + prog.func_name, "bold"), f"  {len(prog.ops)} ops"))
        for o in prog.ops:
            st = session.states[o.id]
            is_cur = cur is not None and cur.op.id == o.id
            label = Text.assemble(
                ("▶ " if is_cur else "  ", "bold yellow" if is_cur else ""),
                (o.id, "bold reverse" if is_cur else "bold"), " ",
                (o.name.removeprefix("linalg."), ""), " ", (o.shape_text, "cyan"),
            )
            node = self.root.add(label, data=o.id, expand=True)
            node.add_leaf(Text.assemble(("state ", "dim"), (st.status, STATE_STYLE.get(st.status, ""))))
            if o.producers:
                node.add_leaf(Text.assemble(("← ", "dim"), "producers ", ", ".join(o.producers)))
            if o.consumers:
                node.add_leaf(Text.assemble(("→ ", "dim"), "consumers ", ", ".join(o.consumers)))
            if st.fused_into:
                node.add_leaf(Text(f"fused into {st.fused_into}", style="magenta"))
            acts = session.schedule.actions(o.id)
            if acts:
                node.add_leaf(Text(" ".join(str(a) for a in acts), style="yellow"))
        self.root.expand()
