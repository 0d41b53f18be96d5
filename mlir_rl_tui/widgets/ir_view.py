"""IR view: original, transformed, diff of the last two steps, loop nest, transform script.

MLIR is highlighted by the tree-sitter-mlir grammar (PyPI wheel `tree-sitter-mlir`) in Textual's TextArea;
without it the text is shown plain. The diff is a virtual (line API) `Log` with a diff highlighter, the loop
nest a Rich Syntax rendering.

Nothing slow runs on the UI thread: the highlight query is compiled once in a thread, and each MLIR text but
the smallest is shown plain at once, then parsed and highlighted in a thread worker (`prepare`; without it
the app stalls 100-160 ms after steps, mlir_rl_tui/workarounds.py). Texts longer than MAX_LINES lines (or MAX_CHARS characters) are cut with a
note saying so; export writes the whole IR.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field

from rich.highlighter import Highlighter
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.document._document import Document, DocumentBase
from textual.document._document_navigator import DocumentNavigator
from textual.document._wrapped_document import WrappedDocument
from textual.message import Message
from textual.widgets import ContentSwitcher, Log, Static, Tab, Tabs, TextArea

from mlir_rl_tui import workarounds

MODES = {
    "original": "1 orig",
    "transformed": "2 after",
    "diff": "3 diff",
    "loops": "4 loops",
    "script": "5 script",
}
MLIR_MODES = ("original", "transformed", "script")

#: Longest text the MLIR view and the diff show (the TextArea does O(lines) work on the UI thread per text).
MAX_LINES = 2000
MAX_CHARS = 300_000
#: Texts up to this size are parsed and highlighted on the UI thread (~1 ms per 1,000 characters); longer
#: ones are shown plain at once (up to PLAIN_CHARS) and highlighted in a thread worker.
SMALL_CHARS = 3_000
PLAIN_CHARS = 100_000


def cap(text: str, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS, comment: str = "//") -> str:
    """`text`, or its first lines and a note on what was left out."""
    if len(text) <= max_chars and text.count("\n") < max_lines:
        return text
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        size += len(line) + 1
        if size > max_chars:
            break
        kept.append(line)
    more = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n{comment} ... {more} more lines not shown here ({len(lines)} in all; "
                              f"export with `e` writes the whole IR)")


@functools.cache
def mlir_language():
    """(tree-sitter Language, highlight query text, compiled Query) or None without the grammar.

    The first call compiles the highlight query (0.1-0.5 s; tree-sitter releases the GIL meanwhile): the view
    makes it from a thread worker. (TextArea itself compiled it again on every `load_text`: the app's worst
    stall when switching views or after a step.)
    """
    try:
        import importlib.resources

        import tree_sitter_mlir
        from tree_sitter import Language, Query

        text = (importlib.resources.files("tree_sitter_mlir") / "queries" / "highlights.scm").read_text()
        language = Language(tree_sitter_mlir.language())
        return language, text, Query(language, text)
    except Exception:  # noqa: BLE001 - highlighting is a nicety, plain text still works
        return None


@dataclass
class Prepared:
    """A TextArea document with its syntax highlights, built off the UI thread."""

    text: str
    document: DocumentBase
    highlights: dict[int, list[tuple[int, int | None, str]]] = field(default_factory=dict)
    query: object = None


def prepare(text: str, highlight: bool = True) -> Prepared:
    """Parse and highlight `text` (capped): what `TextArea._set_document` + `_build_highlight_map` do."""
    text = cap(text)
    lang = mlir_language() if highlight else None
    if lang is None:
        return Prepared(text, Document(text))
    from textual.document._syntax_aware_document import SyntaxAwareDocument

    language, _, query = lang
    doc = SyntaxAwareDocument(text, language)
    highlights: dict[int, list[tuple[int, int | None, str]]] = defaultdict(list)
    for name, nodes in doc.query_syntax_tree(query).items():
        for node in nodes:
            (r0, c0), (r1, c1) = node.start_point, node.end_point
            if r0 == r1:
                highlights[r0].append((c0, c1, name))
            else:
                highlights[r0].append((c0, None, name))
                for row in range(r0 + 1, r1):
                    highlights[row].append((0, None, name))
                highlights[r1].append((0, c1, name))
    return Prepared(text, doc, highlights, query)


class MLIRArea(TextArea):
    """A read-only TextArea that shows documents prepared in a thread (see `prepare`)."""

    def show_prepared(self, p: Prepared) -> None:
        """Install a prepared document: TextArea._set_document (textual==8.2.8, pinned) without the parsing,
        highlighting and query compiling, which `prepare` did elsewhere."""
        self.history.clear()
        self._highlight_query = p.query
        self.document = p.document
        self.wrapped_document = WrappedDocument(p.document, tab_width=self.indent_width)
        self.navigator = DocumentNavigator(self.wrapped_document)
        self._line_cache.clear()
        self._highlights.clear()
        self._highlights.update(p.highlights)
        self.move_cursor((0, 0))
        self._rewrap_and_refresh_virtual_size()
        self.post_message(self.Changed(self).set_sender(self))


class DiffHighlighter(Highlighter):
    """Unified diff colours (those of Pygments' diff lexer in the monokai theme)."""

    def highlight(self, text: Text) -> None:
        s = text.plain
        if s.startswith(("+++", "---")):
            text.stylize("bold #f8f8f2")
        elif s.startswith("@@"):
            text.stylize("#75715e")
        elif s.startswith("+"):
            text.stylize("#a6e22e")
        elif s.startswith("-"):
            text.stylize("#f92672")


class IRView(Vertical):
    """Tabs over a read-only TextArea (MLIR), a diff log and a scrollable Static (loop nest)."""

    DEFAULT_CSS = """
    IRView { height: 1fr; }
    IRView Tabs { height: 2; }
    IRView TextArea { height: 1fr; border: none; padding: 0; }
    IRView #ir-other { height: 1fr; background: $surface; }
    IRView #ir-difflog { height: 1fr; border: none; padding: 0; background: $surface; }
    IRView ContentSwitcher { height: 1fr; }
    """

    @dataclass
    class ModeChanged(Message):
        """The user switched the IR view (the screen fetches what that view needs)."""

        mode: str

    @dataclass
    class GrammarReady(Message):
        """The MLIR grammar and its highlight query are compiled (in a thread worker)."""

    @dataclass
    class TextPrepared(Message):
        """A thread worker parsed and highlighted the text of an MLIR view."""

        mode: str
        source: str
        prepared: Prepared

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.mode = "original"
        self._texts: dict[str, str] = dict.fromkeys(MODES, "")
        self._prepared: dict[str, tuple[str, Prepared]] = {}  # mode -> (source text, prepared)
        self._shown: tuple[str, str] | None = None  # (mode, source text) in the TextArea
        self._pending: tuple[str, str] | None = None  # being prepared in a worker
        self._grammar = False
        self._diff_shown: str | None = None
        self._rich_shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Tabs(*[Tab(label, id=f"ir-{m}") for m, label in MODES.items()], id="ir-tabs")
        with ContentSwitcher(initial="ir-text"):
            area = MLIRArea("", read_only=True, show_line_numbers=True, id="ir-text", soft_wrap=False)
            area.theme = "monokai"
            yield area
            diff = Log(highlight=True, auto_scroll=False, id="ir-difflog")
            diff.highlighter = DiffHighlighter()
            yield diff
            with VerticalScroll(id="ir-other"):
                yield Static(id="ir-rich")

    def load_grammar(self) -> None:
        """Compile the MLIR highlight query (0.1-0.5 s) in a thread; the screen calls this after its first
        paint. Until it is ready, MLIR is shown plain."""
        self.run_worker(self._compile_grammar, thread=True, group="ir-grammar", description="MLIR grammar",
                        exit_on_error=False)

    def _compile_grammar(self) -> None:
        if mlir_language() is not None:
            self.post_message(self.GrammarReady())
        # the loop nest's highlighter: importing Pygments and compiling its Python lexer takes 50-100 ms,
        # here rather than on the UI thread the first time the loop nest is shown
        from rich.syntax import Syntax

        Syntax("for i in 0..1:", "python").highlight("for i in 0..1:")

    @on(GrammarReady)
    def _grammar_ready(self, msg: GrammarReady) -> None:
        """Highlight what is shown, and every MLIR text from now on."""
        msg.stop()
        self._grammar = True
        self._prepared.clear()
        self._shown = None
        if self.mode in MLIR_MODES:
            self._show()

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

    # ------------------------------------------------------------------------------------------
    def _show(self) -> None:
        text = self._texts[self.mode]
        switcher = self.query_one(ContentSwitcher)
        if self.mode in MLIR_MODES:
            self._show_mlir(self.mode, text)
            switcher.current = "ir-text"
        elif self.mode == "diff":
            self._show_diff(text)
            switcher.current = "ir-difflog"
        else:
            self._show_loops(text)
            switcher.current = "ir-other"

    def _show_loops(self, text: str) -> None:
        """The loop nest, highlighted by Rich (rendered when the view is shown)."""
        if self._rich_shown == text:
            return
        self._rich_shown = text
        rich = self.query_one("#ir-rich", Static)
        if not text:
            rich.update(Text("(nothing yet)", style="dim"))
            return
        from rich.syntax import Syntax

        rich.update(Syntax(text, "python", theme="monokai", background_color="default", word_wrap=False))

    def _show_mlir(self, mode: str, text: str) -> None:
        if self._shown == (mode, text):
            return
        if not workarounds.on("prepared_ir"):  # the public way: TextArea parses and highlights in the frame
            area = self.query_one("#ir-text", MLIRArea)
            lang = mlir_language() if self._grammar else None
            if lang is not None and area.language != "mlir":
                area.register_language("mlir", lang[0], lang[1])
                area.language = "mlir"
            area.load_text(cap(text))
            self._shown = (mode, text)
            return
        cached = self._prepared.get(mode)
        if cached is not None and cached[0] == text:
            self._install(mode, text, cached[1])
        elif len(text) <= SMALL_CHARS or not self._grammar:
            # small (or no highlighting yet): a few milliseconds here
            self._install(mode, text, prepare(text, highlight=self._grammar))
        elif self._pending != (mode, text):
            self._pending = (mode, text)
            # plain at once (no flash of the previous text; no parsing, well under a millisecond up to
            # PLAIN_CHARS), then the highlighted document from the worker
            if len(text) <= PLAIN_CHARS:
                self._install(mode, None, prepare(text, highlight=False))
            else:
                lines = text.count("\n") + 1
                self._install(mode, None, Prepared("", Document(f"// highlighting {lines} lines...")))
            self.run_worker(functools.partial(self._prepare, mode, text), thread=True, exclusive=True,
                            group="ir-prepare", description="IR highlighting", exit_on_error=False)

    def _prepare(self, mode: str, text: str) -> None:
        self.post_message(self.TextPrepared(mode, text, prepare(text)))

    @on(TextPrepared)
    def _prepared_ready(self, msg: TextPrepared) -> None:
        msg.stop()
        if self._pending == (msg.mode, msg.source):
            self._pending = None
        self._prepared[msg.mode] = (msg.source, msg.prepared)
        if self.mode == msg.mode and self._texts[msg.mode] == msg.source:
            self._install(msg.mode, msg.source, msg.prepared)

    def _install(self, mode: str, text: str | None, p: Prepared) -> None:
        """Show `p` for `mode` (text None: a placeholder while the text is being prepared)."""
        if text is not None:
            self._prepared[mode] = (text, p)
        self.query_one("#ir-text", MLIRArea).show_prepared(p)
        self._shown = (mode, text) if text is not None else None

    def _show_diff(self, text: str) -> None:
        if self._diff_shown == text:
            return
        self._diff_shown = text
        log = self.query_one("#ir-difflog", Log)
        log.clear()
        log.write_lines(cap(text or "(nothing yet)", comment="").splitlines(), scroll_end=False)
        log.scroll_home(animate=False)
