"""Rich renderables rendered once per width, and off the UI thread where possible.

Textual measures a Rich renderable's height by rendering it, then renders it again to paint it: for the
mask's Rich tables that was 2 x 15 ms in the frame after each step. Wrapped in `Cached`, the second pass
reuses the segments of the first (same console, same width: the same output).

`RenderedStatic` goes further: a thread worker builds the renderable and renders it for the width the
widget has, so the frame that shows it only splits ready segments into lines (1-2 ms instead of 10-15 ms
of Rich table layout on the event loop; benchmarks/app_responsiveness.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from textual import on, work
from textual.message import Message
from textual.widgets import Static

from mlir_rl_tui import workarounds


class Cached:
    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._segments: dict[tuple, list[Segment]] = {}
        self._measures: dict[tuple, Measurement] = {}

    @staticmethod
    def _key(options: ConsoleOptions) -> tuple:
        return (options.max_width, options.min_width, options.justify, options.overflow, options.no_wrap)

    def prerender(self, console: Console, options: ConsoleOptions) -> None:
        """Render for `options` now (in a worker thread), so the UI thread finds the segments ready."""
        key = self._key(options)
        if key not in self._segments:
            self._segments[key] = list(console.render(self.renderable, options))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key = self._key(options)
        segments = self._segments.get(key)
        if segments is None:
            segments = self._segments[key] = list(console.render(self.renderable, options))
        yield from segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        key = (options.max_width, options.min_width)
        m = self._measures.get(key)
        if m is None:
            m = self._measures[key] = Measurement.get(console, options, self.renderable)
        return m


class RenderedStatic(Static):
    """A Static whose Rich content is built and rendered in a thread worker (`show_later`)."""

    @dataclass
    class Rendered(Message):
        """A worker built and rendered the content asked for by `show_later` call number `seq`."""

        seq: int
        content: Cached
        width: int = 0  # the width it was rendered for first
        lines: int = 0  # and its number of lines at that width

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._seq = 0
        self._widths = (0, 0)  # (own width, container's) when last laid out

    def show_later(self, build: Callable[[], RenderableType]) -> None:
        """Show what `build()` returns once a worker has rendered it (`build` runs in the worker: it must
        only read plain data). Before the first layout the width is unknown: built and shown right here."""
        self._seq += 1
        if not workarounds.on("rendered_static"):  # the public way: built and rendered in the frame
            self.update(build())
            return
        parent = self.parent
        self._remember_widths()
        if not self._widths[0] or parent is None:
            self.update(Cached(build()))
            return
        # the width the next layout gives (hidden, the widget has size 0: the one it had when last shown):
        # the container's, or (width: auto) the content's within it; a new content may also make the
        # container's scrollbar come or go
        auto = self.styles.width is not None and self.styles.width.is_auto
        width = self._widths[1] if auto else self._widths[0]
        widths = [width]
        bar = parent.styles.scrollbar_size_vertical
        if bar and parent.show_vertical_scrollbar:
            widths.append(width + bar)
        elif bar and parent.styles.overflow_y == "auto":
            widths.append(width - bar)
        # the options Textual renders a Rich renderable with (textual==8.2.8, visual.RichVisual)
        base = self.app.console_options.update(highlight=False)
        self._build_and_render(self._seq, build, [base.update_width(w) for w in widths if w > 0], auto)

    @property
    def laid_out(self) -> bool:
        """Shown at least once: the width to render for is known (also while hidden)."""
        return bool(self._widths[0])

    def _remember_widths(self) -> None:
        if self.size.width:
            parent = self.parent
            self._widths = (self.size.width, parent.scrollable_content_region.width if parent else 0)

    def on_resize(self) -> None:
        self._remember_widths()

    @work(thread=True, exclusive=True, exit_on_error=False, group="render", description="render panel")
    def _build_and_render(self, seq: int, build: Callable[[], RenderableType], options: list[ConsoleOptions],
                auto: bool) -> None:
        content = Cached(build())
        console = self.app.console
        lines = 0
        for k, opts in enumerate(options):
            if auto:  # sized to the content: measured (and cached) as Textual will, then rendered at that width
                opts = opts.update_width(min(opts.max_width, content.__rich_measure__(console, opts).maximum))
            content.prerender(console, opts)
            if k == 0:
                lines = sum(1 for _ in Segment.split_lines(content._segments[Cached._key(opts)]))
        # posted once every width is ready: posted after the first, the frame often came before the second
        # (a scrollbar appearing) and rendered it on the event loop (8-15 ms for a long mask)
        self.post_message(self.Rendered(seq, content, 0 if auto else options[0].max_width, lines))

    @on(Rendered)
    def _rendered(self, msg: Rendered) -> None:
        msg.stop()
        if msg.seq == self._seq:
            # the same size as now (a panel of the same shape, e.g. the next op's mask): no layout of the
            # screen, only a repaint of this widget
            same = (msg.width and msg.width == self.size.width and self.styles.height is not None
                    and self.styles.height.is_auto and msg.lines + self.styles.gutter.height == self.outer_size.height)
            self.update(msg.content, layout=not same)
