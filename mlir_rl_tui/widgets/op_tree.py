"""The op tree: linalg ops in traversal order with shapes, links, per-op state; the current op marked."""

from __future__ import annotations

from rich.text import Text
from textual.cache import LRUCache
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from mlir_rl_tui.engine import Session

STATE_STYLE = {"untouched": "dim", "scheduled": "yellow", "vectorized": "green", "done": "cyan"}


class OpTree(Tree[str]):
    """One node per op (`op0 linalg.matmul 256x256x256  scheduled`), children: links and actions.

    Built once; each step only relabels the nodes whose text changed (a repaint of those lines), and
    adds or removes an op's leaves when their number changes: clearing and rebuilding the tree on every
    step made Textual lay out the whole screen again (benchmarks/app_responsiveness.py)."""

    DEFAULT_CSS = """
    OpTree { height: 1fr; background: $surface; }
    """

    def __init__(self, **kw) -> None:
        super().__init__("program", **kw)
        self.show_root = True
        self.guide_depth = 2
        # rendered lines by (node, its version, ...): relabelled nodes leave their old lines behind, so a few
        # screens' worth instead of Tree's 1024 (every cached Strip is ~8 objects for the garbage collector)
        self._line_cache = LRUCache(128)
        self._op_nodes: dict[str, TreeNode[str]] = {}
        self._shown_labels: dict[int, Text] = {}  # node id -> label shown

    def _relabel(self, node: TreeNode[str], label: Text) -> None:
        old = self._shown_labels.get(node.id)
        # Text equality ignores the base style (`Text(..., style=...)`): compared as well
        if old is None or old != label or old.style != label.style:
            self._shown_labels[node.id] = label
            node.set_label(label)

    def show(self, session: Session, shares: dict[str, float] | None = None) -> None:
        """`shares`: each op's share of the schedule's time (apply --per-op), when profiled."""
        prog = session.program
        shares = shares or {}
        cur = session.current
        self._relabel(self.root, Text.assemble(("@" + prog.func_name, "bold"), f"  {len(prog.ops)} ops"))
        for o in prog.ops:
            st = session.states[o.id]
            is_cur = cur is not None and cur.op.id == o.id
            label = Text.assemble(
                ("▶ " if is_cur else "  ", "bold yellow" if is_cur else ""),
                (o.id, "bold reverse" if is_cur else "bold"), " ",
                (o.name.removeprefix("linalg."), ""), " ", (o.shape_text, "cyan"),
            )
            if o.id in shares:
                label.append(f" {100 * shares[o.id]:.0f}%", style="bold magenta" if shares[o.id] >= 0.25 else "magenta")
            leaves = [Text.assemble(("state ", "dim"), (st.status, STATE_STYLE.get(st.status, "")))]
            if o.producers:
                leaves.append(Text.assemble(("← ", "dim"), "producers ", ", ".join(o.producers)))
            if o.consumers:
                leaves.append(Text.assemble(("→ ", "dim"), "consumers ", ", ".join(o.consumers)))
            if st.fused_into:
                leaves.append(Text(f"fused into {st.fused_into}", style="magenta"))
            acts = session.schedule.actions(o.id)
            if acts:
                leaves.append(Text(" ".join(str(a) for a in acts), style="yellow"))
            node = self._op_nodes.get(o.id)
            if node is None:
                node = self._op_nodes[o.id] = self.root.add(label, data=o.id, expand=True)
                self._shown_labels[node.id] = label
            else:
                self._relabel(node, label)
            children = node.children
            if len(children) == len(leaves):
                for child, text in zip(children, leaves, strict=True):
                    self._relabel(child, text)
            else:  # the tree's shape changes: that needs a layout anyway
                for child in children:
                    self._shown_labels.pop(child.id, None)
                node.remove_children()
                for text in leaves:
                    self._shown_labels[node.add_leaf(text).id] = text
        if not self.root.is_expanded:
            self.root.expand()
