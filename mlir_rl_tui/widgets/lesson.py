"""The lesson panel: the lesson's step, what it does and why, and what this machine measured for it."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from mlir_rl_tui.engine import Measurement


class LessonView(VerticalScroll):
    """`]` next step, `[` back, `l` back to the lesson's step after trying your own."""

    DEFAULT_CSS = """
    LessonView { height: 1fr; }
    LessonView #lesson-text { width: 1fr; }
    """

    def __init__(self, lesson, **kw) -> None:
        super().__init__(**kw)
        self.lesson = lesson
        self.at = -1

    def compose(self):
        yield Static(self._summary(), id="lesson-text")

    def _summary(self) -> Text:
        lesson = self.lesson
        return Text.assemble((lesson.title + "\n\n", "bold"), (lesson.summary + "\n\n", ""),
                             (f"{len(lesson.steps)} steps. ", "dim"), ("] ", "bold"), ("next step  ", "dim"),
                             ("[ ", "bold"), ("back  ", "dim"), ("l ", "bold"),
                             ("back to the lesson after trying your own steps", "dim"))

    def show_step(self, k: int, workspace) -> None:
        self.at = k
        self._show(workspace)

    def measured(self, schedule: str, m: Measurement, workspace) -> None:
        if self.at >= 0 and self.lesson.steps[self.at].schedule == schedule:
            self._show(workspace)

    def result(self, k: int, workspace) -> tuple[Measurement | None, float | None]:
        """The measurement of step k and how many times faster it is than step k-1 (when both are known):
        the ratio of their times (their speedups are each over a baseline timed at its own moment, and the
        untransformed loop nests drift far more than the tuned kernels on a shared machine)."""
        steps = self.lesson.steps
        m = workspace.measurements.get(steps[k].schedule)
        prev = workspace.measurements.get(steps[k - 1].schedule) if k > 0 else None
        if m is None or not m.ok or prev is None or not prev.ok or not m.time_ms or not prev.time_ms:
            return m, None
        return m, prev.time_ms / m.time_ms

    def _show(self, workspace) -> None:
        k = self.at
        step = self.lesson.steps[k]
        text = Text.assemble((f"{self.lesson.title}\n", "dim"),
                             (f"step {k + 1} of {len(self.lesson.steps)}: {step.title}\n\n", "bold"),
                             (step.text + "\n\n", ""))
        m, gain = self.result(k, workspace)
        if m is None:
            text.append("measuring on this machine...", style="yellow")
        elif not m.ok:
            text.append(f"{m.status}: {m.error}", style="bold red")
        else:
            line = f"measured: {m.time_ms:.3f} ms, {m.speedup:.1f}x the naive program"
            if m.peak_fraction is not None:
                line += f", {100 * m.peak_fraction:.0f}% of {'the FMA peak' if m.bound == 'compute' else 'bandwidth'}"
            text.append(line + "\n", style="green")
            if gain is not None:
                promise = f" (the lesson says at least {step.faster:g}x)" if step.faster else ""
                ok = step.faster is None or gain >= step.faster
                text.append(f"{gain:.2f}x faster than the previous step{promise}\n", style="green" if ok else "yellow")
        text.append(f"\nlook at: the {step.look} view.  ] next  [ back  l back to this step", style="dim")
        self.query_one("#lesson-text", Static).update(text)
