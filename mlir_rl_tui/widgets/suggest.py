"""The policy's suggestion for the current op and why: the decision rule in words, the most probable actions
with their joint probabilities and the cost model's predicted speedups, the critic's value. The numbers and
the sentences come from agent.explain (computed off the UI thread); this only lays them out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:
    from mlir_rl_tui.agent.explain import Explanation


def _predicted(pred: tuple[float, float, float] | None) -> Text:
    if pred is None:
        return Text("-", style="dim")
    sp, lo, hi = pred
    return Text.assemble((f"{sp:.2f}x", "cyan"), (f" {lo:.1f}-{hi:.1f}", "dim"))


def _bar(p: float, width: int = 8) -> Text:
    return Text("█" * max(1, round(p * width)), style="magenta")


def render_suggestion(action: str, top: list[tuple[str, float]], why: Explanation | None = None) -> Group:
    """The panel: the proposal, the rule in words, the top actions, the value (or only the proposal and its
    top actions when there is no explanation)."""
    head = Text.assemble(("policy suggests ", "dim"), (action, "bold magenta"), ("   a: accept", "dim"))
    t = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
    t.add_column("action", no_wrap=True, overflow="ellipsis")
    t.add_column("p", justify="right", no_wrap=True)
    if why is None:
        t.add_column("", no_wrap=True, overflow="crop")
        for name, p in top:
            t.add_row(Text(name, style="bold" if name == action else ""), f"{p:.0%}", _bar(p))
        return Group(head, t)
    # the numbers are read in full: where the panel is narrow, the action's name is cut and the bar goes
    # first (a cut "8…" of a probability, or "2.1-5…" of an interval, reads as another number)
    cands = sorted(why.top, key=lambda c: -c.joint)
    t.columns[0].min_width = min(9, max((len(c.action) + 2 for c in cands), default=9))
    t.columns[1].min_width = max((len(f"{c.joint:.0%}") for c in cands), default=1)
    t.add_column("predicted", justify="right", no_wrap=True,
                 min_width=max([len("predicted")] + [_predicted(c.predicted).cell_len for c in cands]))
    t.add_column("", no_wrap=True, overflow="crop", min_width=0)
    for c in cands:
        mark = c.action == why.action
        t.add_row(Text(("> " if mark else "  ") + c.action, style="bold magenta" if mark else ""),
                  f"{c.joint:.0%}", _predicted(c.predicted), _bar(c.joint))
    rule = [Text.assemble((f"{i}. ", "bold"), line) for i, line in enumerate(why.rule(), 1)]
    rule += [Text(note, style="dim") for note in why.notes()]
    value = Text(why.value_text(), style="green" if why.value is not None else "dim")
    legend = Text("p: p(transformation) x p(parameters); predicted: the cost model's speedup of the schedule "
                  "with that action and its interval (calibrated on programs it was not trained on; '-': it "
                  "does not know)", style="dim")
    return Group(head, Text(why.heading(), style="dim"), *rule,
                 Text(""), t, legend, Text(""), value)


class SuggestView(VerticalScroll):
    """Empty until `s`; then the proposed action (accept with `a`) and why, or why there is none."""

    DEFAULT_CSS = """
    SuggestView { height: 1fr; }
    SuggestView > Static { padding: 0 1 0 0; }
    """

    def compose(self):
        yield Static(Text("s: ask the policy for a suggestion", style="dim"), id="suggest-body")

    def _set(self, renderable) -> None:
        self.query_one("#suggest-body", Static).update(renderable)

    def show_waiting(self) -> None:
        self._set(Text("asking the policy...", style="yellow"))

    def show_error(self, message: str) -> None:
        self._set(Text(message, style="yellow"))

    def show(self, action: str, top: list[tuple[str, float]], why: Explanation | None = None) -> None:
        self._set(render_suggestion(action, top, why))
