"""IR view: original, transformed, diff of the last two steps, loop nest, transform script.

MLIR is highlighted by the tree-sitter-mlir grammar (PyPI wheel `tree-sitter-mlir`) registered with
Textual's TextArea; without it the text is shown plain. Diff and loop nest are Rich Syntax renderings.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import ContentSwitcher, Static, Tab, Tabs, TextArea

MODES = {
    "original": "1 orig",
    "transformed": "2 after",
    "diff": "3 diff",
    "loops": "4 loops",
    "script": "5 script",
}
MLIR_MODES = ("original", "transformed", "script")


@functools.cache
def mlir_language():
    """(tree-sitter Language, highlight query) or None when the grammar is not installed."""
    try:
        import importlib.resources

        import tree_sitter_mlir
        from tree_sitter import Language

        query = (importlib.resources.files("tree_sitter_mlir") / "queries" / "highlights.scm").read_text()
        return Language(tree_sitter_mlir.language()), query
    except Exception:  # noqa: BLE001 - highlighting is a nicety, plain text still works
        return None


class IRView(Vertical):
    """Tabs over a read-only TextArea (MLIR) and a scrollable Static (diff, loop nest)."""

    DEFAULT_CSS = """
    IRView { height: 1fr; }
    IRView Tabs { height: 2; }
    IRView TextArea { height: 1fr; border: none; padding: 0; }
    IRView #ir-other { height: 1fr; background: $surface; }
    IRView ContentSwitcher { height: 1fr; }
    """

    @dataclass
    class ModeChanged(Message):
        """The user switched the IR view (the screen fetches what that view needs)."""

        mode: str

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.mode = "original"
        self._texts: dict[str, str] = dict.fromkeys(MODES, "")

    def compose(self) -> ComposeResult:
        yield Tabs(*[Tab(label, id=f"ir-{m}") for m, label in MODES.items()], id="ir-tabs")
        with ContentSwitcher(initial="ir-text"):
            area = TextArea("", read_only=True, show_line_numbers=True, id="ir-text", soft_wrap=False)
            area.theme = "monokai"
            yield area
            with VerticalScroll(id="ir-other"):
                yield Static(id="ir-rich")

    def on_mount(self) -> None:
        # Compiling the highlight query takes ~0.2 s: do it once, after the first paint.
        self.set_timer(0.05, self._enable_highlighting)

    def _enable_highlighting(self) -> None:
        lang = mlir_language()
        if lang is not None:
            area = self.query_one("#ir-text", TextArea)
            area.register_language("mlir", *lang)
            area.language = "mlir"

    @property
    def highlighted(self) -> bool:
        return mlir_language() is not None

    def set_text(self, mode: str, text: str) -> None:
        self._texts[mode] = text
        if mode == self.mode:
            self._show()

    def select(self, mode: str) -> None:
        self.query_one(Tabs).active = f"ir-{mode}"

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab is None or event.tab.id is None:
            return
        mode = event.tab.id.removeprefix("ir-")
        if mode != self.mode:
            self.mode = mode
            self._show()
            self.post_message(self.ModeChanged(mode))

    def _show(self) -> None:
        text = self._texts[self.mode]
        switcher = self.query_one(ContentSwitcher)
        if self.mode in MLIR_MODES:
            area = self.query_one("#ir-text", TextArea)
            if area.text != text:
                area.load_text(text)
            switcher.current = "ir-text"
        else:
            rich = self.query_one("#ir-rich", Static)
            if not text:
                rich.update(Text("(nothing yet)", style="dim"))
            else:
                lexer = "diff" if self.mode == "diff" else "python"
                rich.update(Syntax(text, lexer, theme="monokai", background_color="default", word_wrap=False))
            switcher.current = "ir-other"
