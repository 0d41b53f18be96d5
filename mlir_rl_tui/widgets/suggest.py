"""The policy's suggestion for the current op, with the probabilities of its top choices."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static


class SuggestView(Static):
    """Empty until `s`; then the proposed action (accept with `a`) or why there is none."""

    DEFAULT_CSS = """
    SuggestView { height: auto; padding: 0 1; }
    """

    def on_mount(self) -> None:
        self.update(Text("s: ask the policy for a suggestion", style="dim"))

    def show_waiting(self) -> None:
        self.update(Text("asking the policy...", style="yellow"))

    def show_error(self, message: str) -> None:
        self.update(Text(message, style="yellow"))

    def show(self, action: str, top: list[tuple[str, float]]) -> None:
        t = Table.grid(padding=(0, 1))
        t.add_column(no_wrap=True)
        t.add_column(justify="right")
        t.add_column()
        for name, p in top:
            bar = "█" * max(1, round(p * 20))
            t.add_row(Text(name, style="bold" if name == action else ""), f"{p:.0%}", Text(bar, style="magenta"))
        head = Text.assemble(("policy suggests ", "dim"), (action, "bold magenta"), ("   a: accept", "dim"))
        from rich.console import Group

        self.update(Group(head, t))
