"""The workspace: op tree and plot, IR view, mask / features / suggestion, action bar, status bar.

All scheduling state lives here: the Session (plain engine data, cheap to copy), the steps taken on
the current path (undo pops them), and the measurements by schedule text. Slow work (measure,
transformed IR, suggestion, export) runs in thread workers that report by posting messages.
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from dataclasses import dataclass, field

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Header, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from engine import Action, EngineError, Measurement, Program, Session, to_text
from engine.actions import flat_mask
from engine.trace import TraceWriter, make_record
from mlir_rl_tui.adapter import Adapter, NoPolicy, Suggestion
from mlir_rl_tui.messages import DiffReady, ExportDone, IRReady, MeasureDone, MeasureProgress, SuggestionReady
from mlir_rl_tui.widgets.action_bar import ActionBar
from mlir_rl_tui.widgets.features import FeaturesView
from mlir_rl_tui.widgets.footer import StableFooter
from mlir_rl_tui.widgets.ir_view import IRView
from mlir_rl_tui.widgets.loopnest import loop_nest
from mlir_rl_tui.widgets.mask import MaskView
from mlir_rl_tui.widgets.plot import Point, SpeedupPlot
from mlir_rl_tui.widgets.schedule import OpTree
from mlir_rl_tui.widgets.status_bar import StatusBar
from mlir_rl_tui.widgets.suggest import SuggestView


@dataclass
class Step:
    """One applied action on the current path, with its trace record (measurement filled in later)."""

    action: Action
    op: str
    source: str
    schedule: str  # schedule text after the step
    record: dict = field(default_factory=dict)
    written: bool = False


class MainScreen(Screen):
    """Keyboard first: every binding is also a command in the palette (commands.py)."""

    BINDINGS = [
        Binding("t", "pick('T')", "tile"),
        Binding("p", "pick('TP')", "parallel"),
        Binding("f", "pick('TF')", "fuse"),
        Binding("i", "pick('I')", "interchange"),
        Binding("v", "vectorize", "vectorize"),
        Binding("n", "next_op", "next op"),
        Binding("x", "apply", "apply"),
        Binding("u", "undo", "undo"),
        Binding("s", "suggest", "suggest"),
        Binding("a", "accept", "accept"),
        Binding("r", "record", "record"),
        Binding("e", "export", "export"),
        Binding("1", "view('original')", "original", show=False),
        Binding("2", "view('transformed')", "transformed", show=False),
        Binding("3", "view('diff')", "diff", show=False),
        Binding("4", "view('loops')", "loop nest", show=False),
        Binding("5", "view('script')", "script", show=False),
        Binding("m", "panel('mask')", "mask", show=False),
        Binding("F", "panel('features')", "features", show=False),
    ]

    def __init__(self, program: Program, adapter: Adapter, record: str | None = None) -> None:
        super().__init__()
        self.program = program
        self.adapter = adapter
        self.session = Session(program)
        self.steps: list[Step] = []
        self.measurements: dict[str, Measurement] = {}
        self.ir: dict[str, tuple[str, str]] = {}
        self.diffs: dict[tuple[str, str], str] = {}
        self._diffing: tuple[str, str] | None = None
        self.suggestion: Suggestion | None = None
        self.suggestion_for: str | None = None
        self.trace_path = record
        self.trace: TraceWriter | None = None
        self.step_counter = 0
        self._cancel = threading.Event()
        self._measuring: str | None = None
        self._panels_pending = False
        self._features_for: Session | None = None

    # ------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        # the screen is a grid (app.tcss): no container around the three panels (every container's cached
        # lines, and the pieces the compositor cuts them into, are thousands of objects for each full
        # garbage collection to scan, and one more level for every layout)
        with Vertical(id="left"):
            yield OpTree(id="ops")
            yield SpeedupPlot(id="plot")
        yield IRView(id="ir")
        with TabbedContent(id="right", initial="mask"):
            with TabPane("mask", id="mask"):
                yield MaskView(id="mask-view")
            with TabPane("features", id="features"):
                yield FeaturesView(id="features-view")
            with TabPane("suggest", id="suggest"):
                yield SuggestView(id="suggest-view")
        yield ActionBar(max_loops=max(len(o.loops) for o in self.program.ops), id="actions")
        yield StatusBar(flops=self.program.flops, id="statusbar")
        yield StableFooter()

    def on_mount(self) -> None:
        name = os.path.basename(self.program.path or "program")
        self.title = "mlir-rl-tui"
        if len(self.program.functions) > 1:  # the entry function, when the file has several
            name += f" @{self.program.func_name}"
        self.sub_title = f"{name}  ({len(self.program.ops)} ops, {self.program.flops / 1e6:.1f} MFLOP)"
        self.query_one(IRView).set_text("original", self.program.text)
        if self.trace_path:
            self._open_trace(self.trace_path)
        self.refresh_views()
        self.query_one("#ops", OpTree).focus()
        # the baseline starts the engine's workers: after the first paint, not before it
        self.set_timer(0.1, self._first_measure)
        self.call_after_refresh(self._after_first_paint)

    def _after_first_paint(self) -> None:
        self.query_one(IRView).load_grammar()
        idle_gc = getattr(self.app, "idle_gc", None)
        if idle_gc is not None:
            idle_gc.start(self.app)  # full garbage collections only while the user is idle (idle_gc.py)

    def _first_measure(self) -> None:
        if self._measuring is None and self.schedule_text not in self.measurements:
            self.measure_current()

    # ------------------------------------------------------------------------------------------
    @property
    def schedule_text(self) -> str:
        return to_text(self.session.schedule)

    def refresh_views(self) -> None:
        """Every view that follows the session (cheap: no worker involved).

        The side panels (mask, features, plot) follow one frame later: two shorter frames, and the event
        loop runs in between, instead of one long one (benchmarks/app_responsiveness.py)."""
        s = self.session
        self.query_one(OpTree).show(s)
        self.query_one(ActionBar).show(s)
        ir = self.query_one(IRView)
        ir.set_text("loops", self._loop_text())
        try:
            ir.set_text("script", self.adapter.script(self.program, s.schedule) if self.steps else
                        "// no step yet: the transform script is empty")
        except EngineError as e:
            ir.set_text("script", f"// {e}")
        self._refresh_ir()
        self._refresh_status()
        self._panels_later()

    def _panels_later(self) -> None:
        if not self._panels_pending:
            self._panels_pending = True
            self.call_after_refresh(self._refresh_panels)

    def _refresh_panels(self) -> None:
        self._panels_pending = False
        self._refresh_mask()
        self._features_for = None
        self._refresh_features()
        self._refresh_plot()

    def _refresh_features(self) -> None:
        """The features panel, only while it is shown (else when it is next shown)."""
        if self._features_for is self.session or self.query_one("#right", TabbedContent).active != "features":
            return
        self._features_for = self.session
        self.query_one(FeaturesView).show(self.session)

    @on(TabbedContent.TabActivated, "#right")
    def _on_panel(self, _: TabbedContent.TabActivated) -> None:
        self._refresh_features()

    def _loop_text(self) -> str:
        s = self.session
        st = s.current
        if st is None:
            parts = [loop_nest(s.states[o.id], o.fusion_producer) for o in self.program.ops]
            return "\n\n".join(parts)
        return loop_nest(st, st.op.fusion_producer, s.pending)

    def _refresh_ir(self) -> None:
        """Fill the transformed and diff views from the IR cache; fetch (or diff) what is missing if shown."""
        ir = self.query_one(IRView)
        cur = self.schedule_text
        prev = self.steps[-2].schedule if len(self.steps) >= 2 else ""
        if cur in self.ir:
            status, text = self.ir[cur]
            ir.set_text("transformed", text if status == "ok" else f"// {status}: {text}")
        else:
            ir.set_text("transformed", "// computing the transformed IR...")
        if not self.steps:
            ir.set_text("diff", "")
        elif (prev, cur) in self.diffs:
            ir.set_text("diff", self.diffs[(prev, cur)])
        else:
            ir.set_text("diff", "computing the diff...")
            if ir.mode == "diff" and cur in self.ir and prev in self.ir and self._diffing != (prev, cur):
                self._diffing = (prev, cur)
                self.make_diff(prev, cur, self.ir[prev][1], self.ir[cur][1])
        need = []
        if ir.mode in ("transformed", "diff") and cur not in self.ir:
            need.append(cur)
        if ir.mode == "diff" and self.steps and prev not in self.ir:
            need.append(prev)
        if need:
            self.fetch_ir(need)

    @work(thread=True, exclusive=True, exit_on_error=False, group="diff", description="diff")
    def make_diff(self, prev: str, cur: str, a: str, b: str) -> None:
        """difflib is quadratic in the worst case: never on the UI thread."""
        diff = difflib.unified_diff(a.splitlines(), b.splitlines(), prev or "original", cur, lineterm="", n=2)
        self.post_message(DiffReady(prev, cur, "\n".join(diff) or "(no change in the IR)"))

    @on(DiffReady)
    def _on_diff(self, msg: DiffReady) -> None:
        self.diffs[(msg.prev, msg.schedule)] = msg.text
        if self._diffing == (msg.prev, msg.schedule):
            self._diffing = None
        self._refresh_ir()

    def _refresh_plot(self) -> None:
        pts = []
        for n, st in enumerate(self.steps, 1):
            m = self.measurements.get(st.schedule)
            if m is not None and m.ok and m.speedup:
                pts.append(Point(n, m.speedup, st.source, m.peak_fraction))
        self.query_one(SpeedupPlot).set_points(pts)

    def _refresh_status(self) -> None:
        bar = self.query_one(StatusBar)
        m = self.measurements.get(self.schedule_text)
        base = self.measurements.get("")
        if base is not None and base.ok:
            bar.set_baseline(base.time_ms)
        bar.set_measurement(m)
        if self._measuring == self.schedule_text:
            return
        if m is None:
            bar.set_status("idle", "")
        elif m.ok:
            src = " (cached)" if m.cached else ""
            bar.set_status("ok", f"{m.schedule or 'baseline'} validated{src}")
        else:
            bar.set_status(m.status, m.error or m.status)

    # ------------------------------------------------------------------------------------------
    def apply_action(self, action: Action, source: str = "user") -> bool:
        """Apply to the current op; a masked action shows its reason and changes nothing."""
        before = self.session
        st = before.current
        try:
            after = before.apply(action)
        except EngineError as e:
            self.query_one(StatusBar).set_status("masked", str(e))
            self.notify(str(e), title="not applied", severity="warning")
            return False
        assert st is not None
        self.step_counter += 1
        record = make_record(self.program.path, self.program.sha256, st.op.id, self.step_counter, action,
                             before.observation(), flat_mask(before.mask(), before.limits), source, None)
        self.session = after
        self.steps.append(Step(action, st.op.id, source, self.schedule_text, record))
        self.suggestion = None
        self.refresh_views()
        self.measure_current()
        return True

    def measure_current(self) -> None:
        text = self.schedule_text
        if text in self.measurements and self.measurements[text].status != "cancelled":
            self._measuring = None
            self._refresh_status()
            self._resolve_records(text)
            return
        self._cancel.set()
        self._cancel = threading.Event()
        self._measuring = text
        self.query_one(StatusBar).set_progress("queued", 0, 0)
        self.measure(self.session, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="measure", description="measure")
    def measure(self, session: Session, cancel: threading.Event) -> None:
        text = to_text(session.schedule)
        worker = get_current_worker()

        def progress(phase: str, i: int, n: int) -> None:
            if not worker.is_cancelled:
                self.post_message(MeasureProgress(text, phase, i, n))

        try:
            m = self.adapter.measure(session.program, session.schedule, on_progress=progress, cancel=cancel)
        except EngineError as e:
            m = Measurement(status="transform-error", schedule=text, error=str(e))
        self.post_message(MeasureDone(text, m))

    @on(MeasureProgress)
    def _on_progress(self, msg: MeasureProgress) -> None:
        if msg.schedule == self._measuring:
            self.query_one(StatusBar).set_progress(msg.phase, msg.i, msg.n)

    @on(MeasureDone)
    def _on_measured(self, msg: MeasureDone) -> None:
        m = msg.measurement
        if m.status != "cancelled":
            self.measurements[msg.schedule] = m
            if m.ok and m.baseline_ms and "" not in self.measurements:
                self.measurements[""] = Measurement("ok", "", m.baseline_ms, m.baseline_ms, 1.0, True)
        if msg.schedule == self._measuring:
            self._measuring = None
        self._resolve_records(msg.schedule, m)
        self._refresh_status()
        self._refresh_plot()
        if m.status not in ("ok", "cancelled") and msg.schedule == self.schedule_text:
            self.notify(f"{m.status}: {m.error}", title="step failed", severity="error", timeout=6)

    @on(Worker.StateChanged)
    def _on_worker(self, event: Worker.StateChanged) -> None:
        """A worker that raised: one readable line in the status bar, the session goes on."""
        if event.state != WorkerState.ERROR:
            return
        err = event.worker.error
        line = " ".join(str(err).split()) or type(err).__name__
        if event.worker.group == "measure":
            self._measuring = None
        self.query_one(StatusBar).set_status("error", f"{event.worker.description}: {line}")

    # ------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="ir", description="transformed IR")
    def fetch_ir(self, schedules: list[str]) -> None:
        from engine import parse

        for text in schedules:
            if get_current_worker().is_cancelled:
                return
            if not text:
                self.post_message(IRReady(text, "ok", self.program.text))
                continue
            status, out = self.adapter.transformed_ir(self.program, parse(text))
            self.post_message(IRReady(text, status, out))

    @on(IRReady)
    def _on_ir(self, msg: IRReady) -> None:
        self.ir[msg.schedule] = (msg.status, msg.text)
        self._refresh_ir()

    @on(IRView.ModeChanged)
    def _on_mode(self, _: IRView.ModeChanged) -> None:
        self._refresh_ir()

    # ------------------------------------------------------------------------------------------
    def _open_trace(self, path: str) -> None:
        try:
            self.trace = TraceWriter(path)
            self.trace_path = path
            self.notify(f"recording to {path}", title="record on")
        except OSError as e:
            self.trace = None
            self.query_one(StatusBar).set_status("error", f"cannot record to {path}: {e.strerror}")

    def _resolve_records(self, schedule: str, m: Measurement | None = None) -> None:
        """Write the records of the path up to the step that made `schedule` (appended in step order)."""
        m = m or self.measurements.get(schedule)
        idx = next((k for k, st in enumerate(self.steps) if st.schedule == schedule), None)
        if idx is None:
            return
        for k in range(idx + 1):
            st = self.steps[k]
            if k == idx and m is not None:
                st.record["measurement"] = m.to_json()
            elif st.record.get("measurement") is None:
                known = self.measurements.get(st.schedule)
                st.record["measurement"] = known.to_json() if known else {"status": "cancelled",
                                                                           "schedule": st.schedule}
            if self.trace is not None and not st.written:
                self.trace.append(st.record)
                st.written = True

    def close_trace(self) -> None:
        """Flush what is still waiting for a measurement, then close."""
        if self.trace is None:
            return
        for st in self.steps:
            if not st.written:
                self.trace.append(st.record)
                st.written = True
        self.trace.close()
        self.trace = None

    # ------------------------------------------------------------------------------------------
    def action_pick(self, kind: str) -> None:
        self.query_one(ActionBar).pick(kind)
        self.query_one("#right", TabbedContent).active = "mask"

    def action_apply(self) -> None:
        self.query_one(ActionBar).request_apply()

    def action_vectorize(self) -> None:
        self.apply_action(Action("V"))

    def action_next_op(self) -> None:
        self.apply_action(Action("NT"))

    def action_undo(self) -> None:
        if not self.steps:
            self.query_one(StatusBar).set_status("idle", "nothing to undo")
            return
        st = self.steps.pop()
        self.session = self.session.undo()
        self.suggestion = None
        self.refresh_views()
        self.measure_current()
        self.notify(f"undid {st.action} on {st.op}" + (" (already in the trace)" if st.written else ""))

    def action_view(self, mode: str) -> None:
        self.query_one(IRView).select(mode)

    def action_panel(self, name: str) -> None:
        self.query_one("#right", TabbedContent).active = name

    def action_record(self) -> None:
        if self.trace is not None:
            path = self.trace_path
            self.close_trace()
            self.notify(f"trace closed: {path}", title="record off")
            return
        stem = os.path.splitext(os.path.basename(self.program.path or "program"))[0]
        path = self.trace_path or f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}.trace.jsonl"
        self._open_trace(path)

    def action_suggest(self) -> None:
        if self.session.done:
            self.query_one(SuggestView).show_error("every op is finished: nothing to suggest")
            return
        self.query_one("#right", TabbedContent).active = "suggest"
        self.query_one(SuggestView).show_waiting()
        self.ask_policy(self.session)

    @work(thread=True, exclusive=True, exit_on_error=False, group="suggest", description="suggest")
    def ask_policy(self, session: Session) -> None:
        text = to_text(session.schedule)
        try:
            sug = self.adapter.suggest(session)
        except NoPolicy as e:
            self.post_message(SuggestionReady(text, None, str(e)))
            return
        self.post_message(SuggestionReady(text, sug))

    @on(SuggestionReady)
    def _on_suggestion(self, msg: SuggestionReady) -> None:
        view = self.query_one(SuggestView)
        if msg.schedule != self.schedule_text:
            return
        if msg.suggestion is None:
            self.suggestion = None
            view.show_error(msg.error)
            self.query_one(StatusBar).set_status("no policy", msg.error)
            return
        assert isinstance(msg.suggestion, Suggestion)
        self.suggestion = msg.suggestion
        self.suggestion_for = msg.schedule
        view.show(str(msg.suggestion.action), msg.suggestion.top)

    def action_accept(self) -> None:
        if self.suggestion is None or self.suggestion_for != self.schedule_text:
            self.notify("no suggestion for this state: press s first", severity="warning")
            return
        self.apply_action(self.suggestion.action, source="policy")

    def action_export(self) -> None:
        from mlir_rl_tui.screens.export import ExportScreen

        stem = os.path.splitext(os.path.basename(self.program.path or "program"))[0]

        def done(folder: str | None) -> None:
            if folder:
                self.query_one(StatusBar).set_status("measuring", f"exporting to {folder}...")
                self.export(folder, self.session, [st.record for st in self.steps])

        self.app.push_screen(ExportScreen(f"{stem}-export"), done)

    @work(thread=True, exclusive=True, exit_on_error=False, group="export", description="export")
    def export(self, folder: str, session: Session, records: list[dict]) -> None:
        stem = os.path.splitext(os.path.basename(self.program.path or "program"))[0]
        files = []
        try:
            os.makedirs(folder, exist_ok=True)
            status, ir = self.adapter.transformed_ir(self.program, session.schedule)
            if status != "ok":
                self.post_message(ExportDone(folder, [], f"transformed IR failed: {status}: {ir}"))
                return
            outputs = {
                f"{stem}.transformed.mlir": ir,
                f"{stem}.transform.mlir": self.adapter.replayable(self.program, session.schedule),
                "schedule.txt": to_text(session.schedule) + "\n",
            }
            for name, text in outputs.items():
                with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                    f.write(text)
                files.append(name)
            with TraceWriter(os.path.join(folder, "trace.jsonl")) as tw:
                for r in records:
                    tw.append(r)
            files.append("trace.jsonl")
        except (OSError, EngineError) as e:
            self.post_message(ExportDone(folder, files, " ".join(str(e).split())))
            return
        self.post_message(ExportDone(folder, files))

    @on(ExportDone)
    def _on_export(self, msg: ExportDone) -> None:
        bar = self.query_one(StatusBar)
        if msg.error:
            bar.set_status("error", f"export to {msg.folder}: {msg.error}")
        else:
            bar.set_status("ok", f"exported {', '.join(msg.files)} to {msg.folder}/")
            self.notify(f"{len(msg.files)} files in {msg.folder}/", title="exported")

    # ------------------------------------------------------------------------------------------
    @on(ActionBar.Apply)
    def _on_apply(self, msg: ActionBar.Apply) -> None:
        self.apply_action(msg.action)

    @on(ActionBar.Invalid)
    def _on_invalid(self, msg: ActionBar.Invalid) -> None:
        self.query_one(StatusBar).set_status("invalid", msg.reason)

    @on(ActionBar.KindChanged)
    def _on_kind(self, _: ActionBar.KindChanged) -> None:
        self.call_after_refresh(self._refresh_mask)  # after the action bar's frame, as in refresh_views

    def _refresh_mask(self) -> None:
        self.query_one(MaskView).show(self.session, self.query_one(ActionBar).kind)

    def on_unmount(self) -> None:
        self._cancel.set()
        self.close_trace()
