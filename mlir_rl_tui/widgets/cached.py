"""A Rich renderable rendered once per width.

Textual measures a Rich renderable's height by rendering it, then renders it again to paint it: for the
mask's Rich tables that was 2 x 15 ms in the frame after each step. Wrapped in `Cached`, the second pass
reuses the segments of the first (same console, same width: the same output).
"""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment


class Cached:
    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._segments: dict[tuple, list[Segment]] = {}

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        key = (options.max_width, options.min_width, options.justify, options.overflow, options.no_wrap)
        segments = self._segments.get(key)
        if segments is None:
            segments = self._segments[key] = list(console.render(self.renderable, options))
        yield from segments

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.renderable)
