"""Live plot of the speedup per step: log scale, baseline at 1, best marked, one marker per source."""

from __future__ import annotations

import math
from dataclasses import dataclass

from textual.app import RenderResult
from textual_plotext import PlotextPlot

MARKERS = {"user": "dot", "policy": "x", "search": "+"}
COLORS = {"user": "cyan", "policy": "magenta", "search": "orange"}


@dataclass
class Point:
    step: int
    speedup: float
    source: str


class SpeedupPlot(PlotextPlot):
    """Speedup over the baseline after each measured step (only steps that measured ok)."""

    DEFAULT_CSS = """
    SpeedupPlot { height: 1fr; min-height: 8; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.points: list[Point] = []
        self._version = 0
        self._rendered: tuple[tuple, RenderResult] | None = None

    def set_points(self, points: list[Point]) -> None:
        """Replot, unless nothing changed (the screen calls this after every step and measurement)."""
        if list(points) == self.points and self._version:
            return
        self.points = list(points)
        self.replot()

    def render(self) -> RenderResult:
        """Build the plot once per (points, size, theme): Textual asks again whenever the plot is repainted."""
        key = (self._version, self.size, self.app.theme, self.theme)
        if self._rendered is None or self._rendered[0] != key:
            self._rendered = (key, super().render())
        return self._rendered[1]

    def on_mount(self) -> None:
        self.replot()

    @property
    def best(self) -> Point | None:
        return max(self.points, key=lambda p: p.speedup, default=None)

    def replot(self) -> None:
        """Log scale by hand (plotext's own log axis misbehaves with limits): y = log2(speedup)."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        best = self.best
        last = max((p.step for p in self.points), default=1)
        ys = [math.log2(p.speedup) for p in self.points]
        lo, hi = min(ys + [-1.0]), max(ys + [1.0])
        plt.hline(0.0, "gray")
        for src, marker in MARKERS.items():
            pts = [p for p in self.points if p.source == src]
            if pts:
                plt.scatter([p.step for p in pts], [math.log2(p.speedup) for p in pts], marker=marker,
                            color=COLORS[src], label=src)
        if best is not None:
            plt.scatter([best.step], [math.log2(best.speedup)], marker="*", color="yellow")
            plt.title(f"speedup (log) best {best.speedup:.1f}x @{best.step}")
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
        self._version += 1
        self.refresh()


def _fmt(v: float) -> str:
    return f"{v:g}x"
