"""A fake of the app's adapter (mlir_rl_tui.adapter.Adapter) for UI tests and snapshots: fixed timings, no
worker processes."""

from __future__ import annotations

import threading

from mlir_rl_tui.adapter import NoPolicy, Progress, Suggestion
from mlir_rl_tui.engine import Measurement, Program, Schedule, Session


class FakeAdapter:
    """Fixed timings, no worker processes.

    Each action makes the program `speedup_per_action` times faster; a schedule containing an action
    listed in `fail` gets that status instead (e.g. {"V": "crash"}); `delay` seconds per measurement.
    """

    def __init__(self, baseline_ms: float = 10.0, speedup_per_action: float = 2.0, delay: float = 0.0,
                 fail: dict[str, str] | None = None, suggestion: Suggestion | None = None) -> None:
        self.baseline_ms = baseline_ms
        self.factor = speedup_per_action
        self.delay = delay
        self.fail = fail or {}
        self.suggestion = suggestion
        self.calls: list[str] = []

    def measure(self, program: Program, schedule: Schedule, on_progress: Progress | None = None,
                cancel: threading.Event | None = None) -> Measurement:
        from mlir_rl_tui.engine import to_text

        text = to_text(schedule)
        self.calls.append(text)
        for k, phase in enumerate(("compile", "run")):
            if on_progress:
                on_progress(phase, k, 2)
            if cancel is not None and cancel.wait(self.delay / 2):
                return Measurement(status="cancelled", schedule=text, error="cancelled")
        kinds = [a.kind for acts in schedule.ops.values() for a in acts]
        for kind, status in self.fail.items():
            if kind in kinds:
                return Measurement(status=status, schedule=text, baseline_ms=self.baseline_ms,
                                   error=f"fake {status} for {kind}")
        ms = self.baseline_ms / (self.factor ** len(kinds))
        sp = self.baseline_ms / ms
        return Measurement(status="ok", schedule=text, time_ms=ms, baseline_ms=self.baseline_ms, speedup=sp,
                           validated=True, time_ci_ms=[ms * 0.98, ms * 1.02], speedup_ci=[sp * 0.97, sp * 1.03],
                           gflops=program.flops / ms / 1e6, peak_fraction=min(1.0, 0.02 * sp), bound="compute",
                           runtime="serial")

    def transformed_ir(self, program: Program, schedule: Schedule) -> tuple[str, str]:
        from mlir_rl_tui.engine import to_text

        return "ok", f"// transformed by: {to_text(schedule)}\n{program.text}"

    def script(self, program: Program, schedule: Schedule) -> str:
        from mlir_rl_tui.engine.schedule.transforms import script

        return script(program, schedule)

    def replayable(self, program: Program, schedule: Schedule) -> str:
        return f"// replayable\n{program.text}"

    def per_op(self, program: Program, schedule: Schedule) -> list[dict]:
        """Equal shares, the first op twice the others: fixed numbers for snapshots."""
        weights = [2.0 if i == 0 else 1.0 for i in range(len(program.ops))]
        total = sum(weights)
        return [{"ops": [o.id], "ms": w, "share": w / total} for o, w in zip(program.ops, weights)]

    def suggest(self, session: Session, k: int = 3) -> Suggestion:
        if self.suggestion is None:
            raise NoPolicy("no policy checkpoint available")
        return self.suggestion

    def close(self) -> None:
        pass
