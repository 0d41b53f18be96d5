"""Status bar: baseline, current time, speedup, GFLOP/s, the parallel runtime, and the measurement status or
progress."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from mlir_rl_tui.engine import Measurement

STATUS_STYLE = {"ok": "green", "cancelled": "dim", "measuring": "yellow"}
STATE_STYLE = {"quiet": "green", "noisy": "yellow", "unstable": "bold red"}


def gflops(flops: int, ms: float | None) -> float | None:
    if not ms or not flops:
        return None
    return flops / (ms * 1e-3) / 1e9


class StatusBar(Horizontal):
    """Two parts: the numbers of the last measurement of the current schedule, and its status line."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; }
    StatusBar #numbers { width: auto; padding: 0 1; }
    StatusBar #status { width: 1fr; padding: 0 1; }
    StatusBar ProgressBar { width: 26; display: none; }
    StatusBar.-busy ProgressBar { display: block; }
    StatusBar ProgressBar Bar { width: 16; }
    """

    def __init__(self, flops: int = 0, **kw) -> None:
        super().__init__(**kw)
        self.flops = flops
        self.baseline_ms: float | None = None
        self.time_ms: float | None = None
        self.speedup: float | None = None
        self.rel_error: float | None = None
        self.contended: float | None = None  # other processes' cores during the timing, when too many
        self.far = False  # the host kept the cores far apart through the timing (engine.measure.contention.far)
        self.unsteady = False  # the state probe said the host slowed the cores through the timing
        self.state = ""  # the machine's state in one word when the figure was taken (Measurement.state)
        self.peak: tuple[float, str] | None = None  # (fraction of the roofline bound, "compute"|"memory")
        self.runtime: str | None = None  # "openmp" or "async" when the schedule ran in parallel (TP/TF)
        self.status = "idle"
        self.message = ""
        self._numbers: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="numbers")
        yield Static(id="status")
        yield ProgressBar(total=None, show_eta=False, show_percentage=False, id="progress")

    def on_mount(self) -> None:
        self._render_numbers()
        self.set_status("idle", "")

    # ------------------------------------------------------------------------------------------
    def set_baseline(self, ms: float | None) -> None:
        self.baseline_ms = ms
        self._render_numbers()

    def set_measurement(self, m: Measurement | None) -> None:
        """Show `m` (None: the schedule is not measured yet)."""
        if m is None or not m.ok:
            self.time_ms = self.speedup = self.rel_error = self.peak = self.runtime = None
            self.contended, self.far, self.state, self.unsteady = None, False, "", False
        else:
            self.state, self.unsteady = m.state, m.unsteady
            self.contended = m.foreign_cores if m.contended else None
            self.far = m.far
            self.time_ms, self.speedup, self.rel_error = m.time_ms, m.speedup, m.rel_error
            self.peak = (m.peak_fraction, m.bound) if m.peak_fraction is not None else None
            self.runtime = m.runtime if m.runtime not in ("", "serial") else None
        if m is not None and m.baseline_ms:
            self.baseline_ms = m.baseline_ms
        self._render_numbers()

    def set_status(self, status: str, message: str = "") -> None:
        self.status, self.message = status, " ".join(message.split())
        style = STATUS_STYLE.get(status, "bold red" if status not in ("idle",) else "dim")
        text = Text.assemble((status, style), (f"  {self.message}" if self.message else "", ""))
        # a fixed-size line: no layout of the whole screen for each progress message
        self.query_one("#status", Static).update(text, layout=False)
        self.set_class(status == "measuring", "-busy")

    def set_progress(self, phase: str, i: int, n: int) -> None:
        bar = self.query_one(ProgressBar)
        if n:
            bar.update(total=n, progress=i)
        else:
            bar.update(total=None)
        if phase == "wait":
            phase = "waiting: another process is timing a kernel"
        self.set_status("measuring", f"{phase} {i}/{n}" if n else phase)

    def _render_numbers(self) -> None:
        def ms(v: float | None) -> str:
            return f"{v:.3f} ms" if v is not None else "-"

        g = gflops(self.flops, self.time_ms)
        sp = f"{self.speedup:.2f}x" if self.speedup is not None else "-"
        sp_style = "bold green" if self.speedup and self.speedup > 1 else ("bold red" if self.speedup else "")
        err = f" ±{100 * self.rel_error:.0f}%" if self.rel_error is not None and self.time_ms is not None else ""
        text = Text.assemble(("baseline ", "dim"), ms(self.baseline_ms), ("  now ", "dim"), ms(self.time_ms),
                             (err, "dim"), ("  speedup ", "dim"), (sp, sp_style),
                             ("  GFLOP/s ", "dim"), f"{g:.2f}" if g is not None else "-")
        if self.peak is not None:
            frac, bound = self.peak
            text.append_text(Text.assemble(("  ", ""), (f"{100 * frac:.0f}%", "bold"),
                                           (" of FMA peak" if bound == "compute" else " of bandwidth", "dim")))
        if self.runtime:
            text.append_text(Text.assemble(("  ", ""), (self.runtime, "dim")))
        if self.contended is not None:  # engine.measure.contention: the cores were not the kernel's alone
            text.append_text(Text.assemble(("  ", ""), (f"contended ({self.contended:.1f} cores busy)", "bold yellow")))
        if self.far:  # the figure is this moment's: the cores' hand-off was slow through every retry
            text.append_text(Text.assemble(("  ", ""), ("far cores", "bold yellow")))
        if self.unsteady:  # the figure is this moment's: the state probe said the host slowed the cores
            text.append_text(Text.assemble(("  ", ""), ("unsteady", "bold yellow")))
        if self.state:  # how far a repeat of the figure may move here (mlir-rl-tui doctor says more)
            text.append_text(Text.assemble(("  ", ""), (self.state, STATE_STYLE.get(self.state, ""))))
        if text.plain != self._numbers:
            # the numbers are sized to their text: a layout only when their width changes
            layout = len(text.plain) != len(self._numbers or "")
            self._numbers = text.plain
            self.query_one("#numbers", Static).update(text, layout=layout)

    @property
    def numbers_text(self) -> str:
        return str(self.query_one("#numbers", Static).render())
