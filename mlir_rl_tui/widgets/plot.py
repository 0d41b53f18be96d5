"""Live plot of the speedup per step: log scale, baseline at 1, best marked, one marker per source."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import RenderResult
from textual.message import Message
from textual_plotext import PlotextPlot

MARKERS = {"user": "dot", "policy": "x", "search": "+", "lesson": "o"}
COLORS = {"user": "cyan", "policy": "magenta", "search": "orange", "lesson": "green"}


@dataclass
class Point:
    step: int
    speedup: float
    source: str
    peak: float | None = None  # fraction of the roofline bound (engine.measure.roofline)


class SpeedupPlot(PlotextPlot):
    """Speedup over the baseline after each measured step (only steps that measured ok).

    New points are plotted by plotext in a thread worker for the size the plot has (5-10 ms, no longer in
    the frame after a measurement); until it is done the previous plot stays. Any other size or theme is
    plotted on the spot. The plotext figure is only touched under `_lock`."""

    DEFAULT_CSS = """
    SpeedupPlot { height: 1fr; min-height: 8; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.points: list[Point] = []
        self._version = 0
        self._rendered: tuple[tuple, RenderResult] | None = None
        self._building: tuple | None = None  # the key a worker is plotting
        self._lock = threading.Lock()

    @dataclass
    class Built(Message):
        key: tuple
        text: Text | None

    def _key(self) -> tuple:
        return (self._version, self.size, self.app.theme, self.theme)

    def set_points(self, points: list[Point]) -> None:
        """Replot, unless nothing changed (the screen calls this after every step and measurement)."""
        if list(points) == self.points and self._version:
            return
        self.points = list(points)
        self._version += 1
        if self._rendered is None or not self.size:  # not shown yet: plotted when it is
            self.refresh()
            return
        self._building = self._key()
        self._build(self._building, list(self.points))

    @work(thread=True, exclusive=True, exit_on_error=False, group="plot", description="plot")
    def _build(self, key: tuple, points: list[Point]) -> None:
        text = None
        try:
            with self._lock:
                self._replot(points)
                text = super().render()
        finally:  # (failed: None, and the plot is made on the spot when next rendered)
            self.post_message(self.Built(key, text))

    @on(Built)
    def _built(self, msg: Built) -> None:
        msg.stop()
        if msg.key == self._building:
            self._building = None
        if msg.key == self._key():
            if msg.text is not None:
                self._rendered = (msg.key, msg.text)
            self.refresh()

    def render(self) -> RenderResult:
        """Build the plot once per (points, size, theme): Textual asks again whenever the plot is repainted."""
        key = self._key()
        if self._rendered is not None and (self._rendered[0] == key or self._building == key):
            return self._rendered[1]  # (the previous plot while a worker plots this one)
        with self._lock:
            self._replot(self.points)
            self._rendered = (key, super().render())
        return self._rendered[1]

    def on_mount(self) -> None:
        self._version += 1
        self.refresh()

    @property
    def best(self) -> Point | None:
        return max(self.points, key=lambda p: p.speedup, default=None)

    def _replot(self, points: list[Point]) -> None:
        """Log scale by hand (plotext's own log axis misbehaves with limits): y = log2(speedup)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        best = max(points, key=lambda p: p.speedup, default=None)
        last = max((p.step for p in points), default=1)
        ys = [math.log2(p.speedup) for p in points]
        lo, hi = min(ys + [-1.0]), max(ys + [1.0])
        plt.hline(0.0, "gray")
        for src, marker in MARKERS.items():
            pts = [p for p in points if p.source == src]
            if pts:
                plt.scatter([p.step for p in pts], [math.log2(p.speedup) for p in pts], marker=marker,
                            color=COLORS[src], label=src)
        if best is not None:
            plt.scatter([best.step], [math.log2(best.speedup)], marker="*", color="yellow")
            peak = f", {100 * best.peak:.0f}% of peak" if best.peak is not None else ""
            plt.title(f"speedup (log) best {best.speedup:.1f}x @{best.step}{peak}")
        else:
            plt.title("speedup per step (log)")
        plt.xlim(0, max(last, 1) + 0.5)
        plt.ylim(math.floor(lo) - 0.3, math.ceil(hi) + 0.3)
        ticks = list(range(math.floor(lo), math.ceil(hi) + 1))
        step = max(1, len(ticks) // 5)
        ticks = ticks[::step]
        plt.yticks(ticks, [_fmt(2.0 ** t) for t in ticks])
        plt.xticks(list(range(0, max(last, 1) + 1, max(1, last // 6))))
        plt.xlabel("step")


def _fmt(v: float) -> str:
    return f"{v:g}x"
