"""Help: the key bindings and what each transformation does."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("t", "tile (T): pick a tile size per loop, then x to apply"),
    ("p", "tiled parallelization (TP): scf.forall lowered to OpenMP, parallel loops only"),
    ("f", "tiled fusion (TF): tile the op and fuse its producer into the tile loop"),
    ("i", "interchange (I): pick the loop for each position"),
    ("v", "vectorize (V) now: ends the op"),
    ("n", "next op (NT): no more transformations for this op"),
    ("x", "apply what the action bar shows"),
    ("u", "undo the last step"),
    ("s", "ask the policy for a suggestion"),
    ("a", "accept the suggestion"),
    ("r", "record a trace on/off (JSONL, one line per step)"),
    ("e", "export: transformed .mlir, transform script, trace, into a folder"),
    ("1-5", "IR view: original, transformed, diff of the last two steps, loop nest, script"),
    ("m / F", "right panel: action mask / features"),
    ("ctrl+p", "command palette: every action by name"),
    ("?", "this help"),
    ("q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    """Key bindings; any key closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; height: auto; max-height: 90%; border: thick $accent;
                                  background: $surface; padding: 1 2; }
    """
    BINDINGS = [("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        t = Table.grid(padding=(0, 2))
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column()
        for k, what in KEYS:
            t.add_row(k, what)
        with VerticalScroll():
            yield Static(Text("mlir-rl-tui: schedule the current op step by step; every step is applied, "
                              "compiled, checked and timed in the background.\n", style="bold"))
            yield Static(t)
            yield Static(Text("\nesc closes this help", style="dim"))

    def on_click(self) -> None:
        self.dismiss()
