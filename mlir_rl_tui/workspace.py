"""The session a screen shows, without Textual: steps, measurements, IR, trace records, export, lessons.

The main screen composes widgets and routes messages; every decision about scheduling state is made
here, so it is tested on its own (tests/test_workspace.py) with the fake adapter. Methods that block
(measure, transformed IR, diff, export, profile) are called from the screen's thread workers; the rest
are instant.
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mlir_rl_tui.adapter import Adapter, Suggestion
from mlir_rl_tui.engine import Action, EngineError, Measurement, Program, Session, parse, to_text
from mlir_rl_tui.engine.rl.actions import flat_mask
from mlir_rl_tui.engine.rl.trace import TraceRecorder, TraceStep
from mlir_rl_tui.engine.store import atomic


@dataclass
class Step:
    """One step on the current path: an action (or a lesson's whole schedule) and the session before it."""

    before: Session
    schedule: str  # schedule text after the step
    source: str  # user | policy | lesson
    action: Action | None = None
    op: str = ""
    label: str = ""  # what the step was, for messages ("T(8,32,1) on op0", "lesson step 3")
    observation: object = None  # the observation and flat mask from before the action: its trace record
    mask: object = None
    traced: TraceStep | None = None  # its record in the trace being recorded

    @property
    def written(self) -> bool:
        return self.traced is not None and self.traced.written


class Workspace:
    """Scheduling state of one program: the Session (plain engine data), the steps taken on the current
    path (undo restores the session before the last one), measurements by schedule text, the transformed
    IR and diffs known so far, and the trace being recorded."""

    def __init__(self, program: Program, adapter: Adapter, record: str | None = None) -> None:
        self.program = program
        self.adapter = adapter
        self.session = Session(program)
        self.steps: list[Step] = []
        self.measurements: dict[str, Measurement] = {}
        self.ir: dict[str, tuple[str, str]] = {}
        self.diffs: dict[tuple[str, str], str] = {}
        self.per_op: dict[str, list[dict]] = {}
        self.suggestion: Suggestion | None = None
        self.suggestion_for: str | None = None
        self.trace_path = record
        self.trace: TraceRecorder | None = None

    # -- state ----------------------------------------------------------------------------------
    @property
    def schedule_text(self) -> str:
        return to_text(self.session.schedule)

    @property
    def stem(self) -> str:
        """The program's file name without extension: for default trace and export names."""
        return os.path.splitext(os.path.basename(self.program.path or "program"))[0]

    @property
    def previous_schedule(self) -> str:
        return self.steps[-2].schedule if len(self.steps) >= 2 else ""

    def measurement(self, text: str | None = None) -> Measurement | None:
        return self.measurements.get(self.schedule_text if text is None else text)

    @property
    def baseline(self) -> Measurement | None:
        return self.measurements.get("")

    def needs_measurement(self) -> bool:
        m = self.measurements.get(self.schedule_text)
        return m is None or m.status == "cancelled"

    # -- steps ----------------------------------------------------------------------------------
    def apply(self, action: Action, source: str = "user") -> Step:
        """Apply to the current op; EngineError (with the mask's reason) if the action is masked."""
        before = self.session
        st = before.current
        after = before.apply(action)  # raises ScheduleError, an EngineError, with the reason
        assert st is not None
        self.session = after
        step = Step(before, self.schedule_text, source, action, st.op.id, f"{action} on {st.op.id}",
                    before.observation(), flat_mask(before.mask(), before.limits))
        if self.trace is not None:
            step.traced = self._record(self.trace, step)
        self.steps.append(step)
        self.suggestion = None
        return step

    def _record(self, rec: TraceRecorder, step: Step) -> TraceStep:
        return rec.step(self.program, step.op, step.action, step.observation, step.mask, step.source)

    def jump(self, schedule: str, source: str = "lesson", label: str = "") -> Step:
        """Go to a whole schedule (a lesson's step): one step, undone like any other; not a trace record."""
        before = self.session
        self.session = Session(self.program, parse(schedule), before.limits, before.openmp)
        step = Step(before, self.schedule_text, source, label=label or f"schedule {schedule or '(none)'}")
        self.steps.append(step)
        self.suggestion = None
        return step

    def undo(self) -> Step | None:
        if not self.steps:
            return None
        step = self.steps.pop()
        if step.traced is not None and self.trace is not None:
            self.trace.discard(step.traced)  # gone from the path; kept if already in the file
        self.session = step.before
        self.suggestion = None
        return step

    # -- measurements ---------------------------------------------------------------------------
    def measure(self, session: Session, on_progress: Callable[[str, int, int], None] | None = None,
                cancel: threading.Event | None = None) -> Measurement:
        """Measure `session`'s schedule (blocking: from a worker)."""
        try:
            return self.adapter.measure(session.program, session.schedule, on_progress=on_progress, cancel=cancel)
        except EngineError as e:
            return Measurement(status="transform-error", schedule=to_text(session.schedule), error=str(e))

    def measured(self, schedule: str, m: Measurement) -> None:
        """Keep a measurement (a cancelled one is forgotten) and write the trace records it completes."""
        if m.status != "cancelled":
            self.measurements[schedule] = m
            if m.ok and m.baseline_ms and "" not in self.measurements:
                self.measurements[""] = Measurement("ok", "", m.baseline_ms, m.baseline_ms, 1.0, True,
                                                    time_ci_ms=m.baseline_ci_ms, runtime="serial")
        self.resolve_records(schedule)

    def plot_points(self) -> list[tuple[int, float, str, float | None]]:
        """(step, speedup, source, fraction of peak) of every step measured ok."""
        pts = []
        for n, st in enumerate(self.steps, 1):
            m = self.measurements.get(st.schedule)
            if m is not None and m.ok and m.speedup:
                pts.append((n, m.speedup, st.source, m.peak_fraction))
        return pts

    def profile(self, session: Session) -> list[dict]:
        """Each op's share of the time of `session`'s schedule (blocking; engine.measure.per_op)."""
        groups = self.adapter.per_op(session.program, session.schedule)
        self.per_op[to_text(session.schedule)] = groups
        return groups

    def shares(self) -> dict[str, float]:
        """op id -> share of the time, for the current schedule when profiled."""
        out = {}
        for g in self.per_op.get(self.schedule_text, []):
            for i in g["ops"]:
                out[i] = g["share"] if not g.get("fused_into") else 0.0
        return out

    # -- IR -------------------------------------------------------------------------------------
    def script_text(self) -> str:
        if not self.steps:
            return "// no step yet: the transform script is empty"
        try:
            return self.adapter.script(self.program, self.session.schedule)
        except EngineError as e:
            return f"// {e}"

    def fetch_ir(self, schedule: str) -> tuple[str, str]:
        """(status, transformed IR or error) of `schedule` (blocking), kept for the views."""
        if not schedule:
            got = ("ok", self.program.text)
        else:
            got = self.adapter.transformed_ir(self.program, parse(schedule))
        self.ir[schedule] = got
        return got

    @staticmethod
    def make_diff(prev: str, cur: str, a: str, b: str) -> str:
        """Unified diff of two transformed IRs (difflib is quadratic in the worst case: from a worker)."""
        diff = difflib.unified_diff(a.splitlines(), b.splitlines(), prev or "original", cur, lineterm="", n=2)
        return "\n".join(diff) or "(no change in the IR)"

    # -- trace ----------------------------------------------------------------------------------
    @property
    def recording(self) -> bool:
        return self.trace is not None

    def start_recording(self, path: str | None = None) -> str:
        """Open the trace (OSError if it cannot be written) and record the path so far; returns its path."""
        path = path or self.trace_path or f"{self.stem}-{time.strftime('%Y%m%d-%H%M%S')}.trace.jsonl"
        self.trace = TraceRecorder(path)
        self.trace_path = path
        for st in self.steps:
            if st.action is not None:
                st.traced = self._record(self.trace, st)
        self.resolve_records(self.schedule_text)
        return path

    def resolve_records(self, schedule: str) -> None:
        """Write the records of the path up to the step that made `schedule` (the recorder writes the
        steps before it too, in step order; those never measured go without a measurement)."""
        if self.trace is None:
            return
        for st in reversed(self.steps):
            if st.schedule == schedule:
                m = self.measurements.get(schedule)
                if st.traced is not None and m is not None:
                    self.trace.measured(st.traced, m.to_json())
                return

    def stop_recording(self) -> str | None:
        """Write what is still waiting for a measurement (without one), then close; returns the path."""
        if self.trace is None:
            return None
        self.trace.close()
        self.trace = None
        for st in self.steps:
            st.traced = None
        return self.trace_path

    # -- export ---------------------------------------------------------------------------------
    def export(self, folder: str, session: Session) -> list[str]:
        """The transformed module, the replayable transform script, schedule.txt and the trace of this path
        into `folder` (blocking). Raises EngineError / OSError with the reason."""
        os.makedirs(folder, exist_ok=True)
        status, ir = self.adapter.transformed_ir(self.program, session.schedule)
        if status != "ok":
            raise EngineError(f"transformed IR failed: {status}: {ir}")
        outputs = {
            f"{self.stem}.transformed.mlir": ir,
            f"{self.stem}.transform.mlir": self.adapter.replayable(self.program, session.schedule),
            "schedule.txt": to_text(session.schedule) + "\n",
        }
        files = []
        for name, text in outputs.items():  # each replaced whole (engine.store.atomic): never a cut file
            atomic.write_text(os.path.join(folder, name), text)
            files.append(name)
        with atomic.replacing(os.path.join(folder, "trace.jsonl")) as tmp:  # this path's trace, not appended
            with TraceRecorder(tmp) as rec:
                for st in self.steps:
                    if st.action is not None:
                        m = self.measurements.get(st.schedule)
                        rec.measured(self._record(rec, st), m.to_json() if m is not None else None)
        files.append("trace.jsonl")
        return files
