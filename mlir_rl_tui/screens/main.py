"""The main screen: op tree and plot, IR view, mask / features / suggestion / lesson, action bar, status bar.

It composes widgets and routes messages; the scheduling state and every decision about it live in the
`Workspace` (mlir_rl_tui/workspace.py, no Textual). Slow work (measure, transformed IR, diff, suggestion,
export, per-op profile) runs in thread workers that report by posting messages, never touching widgets.
"""

from __future__ import annotations

import threading

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, TabbedContent, TabPane
from textual.worker import Worker, WorkerState, get_current_worker

from mlir_rl_tui.adapter import Adapter, NoPolicy, Suggestion
from mlir_rl_tui.engine import Action, EngineError, Program, Session, to_text
from mlir_rl_tui.engine.schedule.state import tiles_nothing
from mlir_rl_tui.messages import (
    DiffReady,
    ExportDone,
    IRReady,
    MeasureDone,
    MeasureProgress,
    ProfileReady,
    SuggestionReady,
)
from mlir_rl_tui.widgets.action_bar import ActionBar
from mlir_rl_tui.widgets.features import FeaturesView
from mlir_rl_tui.widgets.ir_view import IRView
from mlir_rl_tui.widgets.lesson import LessonView
from mlir_rl_tui.widgets.loopnest import loop_nest
from mlir_rl_tui.widgets.mask import MaskView
from mlir_rl_tui.widgets.op_tree import OpTree
from mlir_rl_tui.widgets.plot import Point, SpeedupPlot
from mlir_rl_tui.widgets.status_bar import StatusBar
from mlir_rl_tui.widgets.suggest import SuggestView
from mlir_rl_tui.workspace import Workspace


class MainScreen(Screen):
    """Keyboard first: every binding is also a command in the palette."""

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
        Binding("o", "profile", "per op", show=False),
        Binding("1", "view('original')", "original", show=False),
        Binding("2", "view('transformed')", "transformed", show=False),
        Binding("3", "view('diff')", "diff", show=False),
        Binding("4", "view('loops')", "loop nest", show=False),
        Binding("5", "view('script')", "script", show=False),
        Binding("m", "panel('mask')", "mask", show=False),
        Binding("F", "panel('features')", "features", show=False),
        Binding("right_square_bracket", "lesson_step(1)", "next step", show=False, key_display="]"),
        Binding("left_square_bracket", "lesson_step(-1)", "step back", show=False, key_display="["),
        Binding("l", "lesson_step(0)", "back to the lesson", show=False),
    ]

    def __init__(self, program: Program, adapter: Adapter, record: str | None = None, lesson=None) -> None:
        super().__init__()
        self.program = program
        self.workspace = Workspace(program, adapter, record)
        self.lesson = lesson  # mlir_rl_tui.lessons.Lesson, or None
        self.lesson_at = -1  # the lesson's step shown last (-1: its summary)
        self._cancel = threading.Event()
        self._measuring: str | None = None
        self._diffing: tuple[str, str] | None = None
        self._panels_pending = False
        self._features_for: Session | None = None

    # -- convenience for tests and the palette --------------------------------------------------
    @property
    def session(self) -> Session:
        return self.workspace.session

    @property
    def schedule_text(self) -> str:
        return self.workspace.schedule_text

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
        with TabbedContent(id="right", initial="lesson" if self.lesson else "mask"):
            with TabPane("mask", id="mask"):
                yield MaskView(id="mask-view")
            with TabPane("features", id="features"):
                yield FeaturesView(id="features-view")
            with TabPane("suggest", id="suggest"):
                yield SuggestView(id="suggest-view")
            if self.lesson is not None:
                with TabPane("lesson", id="lesson"):
                    yield LessonView(self.lesson, id="lesson-view")
        yield ActionBar(max_loops=max(len(o.loops) for o in self.program.ops), id="actions")
        yield StatusBar(flops=self.program.flops, id="statusbar")
        yield Footer()

    def on_mount(self) -> None:
        import os

        name = os.path.basename(self.program.path or "program")
        self.title = "mlir-rl-tui" + (f" — lesson: {self.lesson.title}" if self.lesson else "")
        entry = f" @{self.program.func_name}" if len(self.program.functions) > 1 else ""
        self.sub_title = f"{name}{entry}  ({len(self.program.ops)} ops, {self.program.flops / 1e6:.1f} MFLOP)"
        self.query_one(IRView).set_text("original", self.program.text)
        if self.workspace.trace_path:
            self._start_recording(self.workspace.trace_path)
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
        if self._measuring is None and self.workspace.needs_measurement():
            self.measure_current()

    # ------------------------------------------------------------------------------------------
    def refresh_views(self) -> None:
        """Every view that follows the session (cheap: no worker involved).

        The side panels (mask, features, plot) follow one frame later: two shorter frames, and the event
        loop runs in between, instead of one long one (benchmarks/app_responsiveness.py)."""
        ws = self.workspace
        self.query_one(OpTree).show(ws.session, ws.shares())
        self.query_one(ActionBar).show(ws.session)
        ir = self.query_one(IRView)
        ir.set_text("loops", self._loop_text())
        ir.set_text("script", ws.script_text())
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
        s = self.workspace.session
        if self._features_for is s or self.query_one("#right", TabbedContent).active != "features":
            return
        self._features_for = s
        self.query_one(FeaturesView).show(s)

    @on(TabbedContent.TabActivated, "#right")
    def _on_panel(self, _: TabbedContent.TabActivated) -> None:
        self._refresh_features()

    def _loop_text(self) -> str:
        s = self.workspace.session
        st = s.current
        if st is None:
            return "\n\n".join(loop_nest(s.states[o.id], o.fusion_producer) for o in self.program.ops)
        return loop_nest(st, st.op.fusion_producer, s.pending)

    def _refresh_ir(self) -> None:
        """Fill the transformed and diff views from what the workspace knows; fetch what is missing if shown."""
        ws, ir = self.workspace, self.query_one(IRView)
        cur, prev = ws.schedule_text, ws.previous_schedule
        if cur in ws.ir:
            status, text = ws.ir[cur]
            ir.set_text("transformed", text if status == "ok" else f"// {status}: {text}")
        else:
            ir.set_text("transformed", "// computing the transformed IR...")
        if not ws.steps:
            ir.set_text("diff", "")
        elif (prev, cur) in ws.diffs:
            ir.set_text("diff", ws.diffs[(prev, cur)])
        else:
            ir.set_text("diff", "computing the diff...")
            if ir.mode == "diff" and cur in ws.ir and prev in ws.ir and self._diffing != (prev, cur):
                self._diffing = (prev, cur)
                self.make_diff(prev, cur, ws.ir[prev][1], ws.ir[cur][1])
        need = []
        if ir.mode in ("transformed", "diff") and cur not in ws.ir:
            need.append(cur)
        if ir.mode == "diff" and ws.steps and prev not in ws.ir:
            need.append(prev)
        if need:
            self.fetch_ir(need)

    @work(thread=True, exclusive=True, exit_on_error=False, group="diff", description="diff")
    def make_diff(self, prev: str, cur: str, a: str, b: str) -> None:
        self.post_message(DiffReady(prev, cur, Workspace.make_diff(prev, cur, a, b)))

    @on(DiffReady)
    def _on_diff(self, msg: DiffReady) -> None:
        self.workspace.diffs[(msg.prev, msg.schedule)] = msg.text
        if self._diffing == (msg.prev, msg.schedule):
            self._diffing = None
        self._refresh_ir()

    def _refresh_plot(self) -> None:
        self.query_one(SpeedupPlot).set_points([Point(*p) for p in self.workspace.plot_points()])

    def _refresh_status(self) -> None:
        ws, bar = self.workspace, self.query_one(StatusBar)
        m = ws.measurement()
        if ws.baseline is not None and ws.baseline.ok:
            bar.set_baseline(ws.baseline.time_ms)
        bar.set_measurement(m)
        if self._measuring == ws.schedule_text:
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
        st = self.workspace.session.current
        try:
            self.workspace.apply(action, source)
        except EngineError as e:
            self.query_one(StatusBar).set_status("masked", str(e))
            self.notify(str(e), title="not applied", severity="warning")
            return False
        if st is not None and tiles_nothing(st, action):
            extents = "x".join(str(st.extents[st.loop_at(p)]) for p in range(st.n_loops))
            self.notify(f"{action} tiles no loop of {st.op.id} (its tile is {extents}): no code, the schedule "
                        "measures as without it; it counts against tau", title="tiles nothing", markup=False)
        self._stepped()
        return True

    def _stepped(self) -> None:
        self.refresh_views()
        self.measure_current()

    def measure_current(self) -> None:
        ws = self.workspace
        if not ws.needs_measurement():
            self._measuring = None
            self._refresh_status()
            ws.resolve_records(ws.schedule_text)
            return
        self._cancel.set()
        self._cancel = threading.Event()
        self._measuring = ws.schedule_text
        self.query_one(StatusBar).set_progress("queued", 0, 0)
        self.measure(ws.session, self._cancel)

    @work(thread=True, exclusive=True, exit_on_error=False, group="measure", description="measure")
    def measure(self, session: Session, cancel: threading.Event) -> None:
        text = to_text(session.schedule)
        worker = get_current_worker()

        def progress(phase: str, i: int, n: int) -> None:
            if not worker.is_cancelled:
                self.post_message(MeasureProgress(text, phase, i, n))

        self.post_message(MeasureDone(text, self.workspace.measure(session, progress, cancel)))

    @on(MeasureProgress)
    def _on_progress(self, msg: MeasureProgress) -> None:
        if msg.schedule == self._measuring:
            self.query_one(StatusBar).set_progress(msg.phase, msg.i, msg.n)

    @on(MeasureDone)
    def _on_measured(self, msg: MeasureDone) -> None:
        m = msg.measurement
        self.workspace.measured(msg.schedule, m)
        if msg.schedule == self._measuring:
            self._measuring = None
        self._refresh_status()
        self._refresh_plot()
        if self.lesson is not None:
            self.query_one(LessonView).measured(msg.schedule, m, self.workspace)
        if m.status not in ("ok", "cancelled") and msg.schedule == self.workspace.schedule_text:
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
        for text in schedules:
            if get_current_worker().is_cancelled:
                return
            status, out = self.workspace.fetch_ir(text)
            self.post_message(IRReady(text, status, out))

    @on(IRReady)
    def _on_ir(self, _: IRReady) -> None:
        self._refresh_ir()

    @on(IRView.ModeChanged)
    def _on_mode(self, _: IRView.ModeChanged) -> None:
        self._refresh_ir()

    # ------------------------------------------------------------------------------------------
    def action_profile(self) -> None:
        """Each op's share of the current schedule's time, shown in the op tree (apply --per-op)."""
        self.query_one(StatusBar).set_status("measuring", "profiling op by op...")
        self.profile(self.workspace.session)

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile", description="per-op profile")
    def profile(self, session: Session) -> None:
        try:
            groups = self.workspace.profile(session)
        except EngineError as e:
            self.post_message(ProfileReady(to_text(session.schedule), [], str(e)))
            return
        self.post_message(ProfileReady(to_text(session.schedule), groups))

    @on(ProfileReady)
    def _on_profile(self, msg: ProfileReady) -> None:
        bar = self.query_one(StatusBar)
        if msg.error:
            bar.set_status("error", f"per-op profile: {msg.error}")
            return
        top = max(msg.groups, key=lambda g: g["share"], default=None)
        if top is not None:
            bar.set_status("ok", f"per op: {' + '.join(top['ops'])} takes {100 * top['share']:.0f}% of the time")
        self.query_one(OpTree).show(self.workspace.session, self.workspace.shares())

    # ------------------------------------------------------------------------------------------
    def _start_recording(self, path: str | None) -> None:
        try:
            path = self.workspace.start_recording(path)
            self.notify(f"recording to {path}", title="record on")
        except OSError as e:
            self.query_one(StatusBar).set_status("error", f"cannot record to {path}: {e.strerror}")

    def close_trace(self) -> None:
        self.workspace.stop_recording()

    def action_record(self) -> None:
        if self.workspace.recording:
            path = self.workspace.stop_recording()
            self.notify(f"trace closed: {path}", title="record off")
            return
        self._start_recording(None)

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
        step = self.workspace.undo()
        if step is None:
            self.query_one(StatusBar).set_status("idle", "nothing to undo")
            return
        self._stepped()
        self.notify(f"undid {step.label}" + (" (already in the trace)" if step.written else ""))

    def action_view(self, mode: str) -> None:
        self.query_one(IRView).select(mode)

    def action_panel(self, name: str) -> None:
        self.query_one("#right", TabbedContent).active = name

    # -- lessons ------------------------------------------------------------------------------
    def action_lesson_step(self, delta: int) -> None:
        """Next (1) / previous (-1) step of the lesson, or back to the step shown (0) after trying one's own."""
        if self.lesson is None:
            self.notify("no lesson open: `mlir-rl-tui lesson` lists them", severity="warning")
            return
        k = max(0, min(len(self.lesson.steps) - 1, self.lesson_at + delta if delta else max(self.lesson_at, 0)))
        self.lesson_at = k
        step = self.lesson.steps[k]
        if step.schedule != self.workspace.schedule_text:
            self.workspace.jump(step.schedule, "lesson", f"lesson step {k + 1}")
            self._stepped()
        self.query_one(LessonView).show_step(k, self.workspace)
        self.query_one("#right", TabbedContent).active = "lesson"
        self.query_one(IRView).select(step.look)

    # -- agent --------------------------------------------------------------------------------
    def action_suggest(self) -> None:
        if self.workspace.session.done:
            self.query_one(SuggestView).show_error("every op is finished: nothing to suggest")
            return
        self.query_one("#right", TabbedContent).active = "suggest"
        self.query_one(SuggestView).show_waiting()
        self.ask_policy(self.workspace.session)

    @work(thread=True, exclusive=True, exit_on_error=False, group="suggest", description="suggest")
    def ask_policy(self, session: Session) -> None:
        text = to_text(session.schedule)
        try:
            sug = self.workspace.adapter.suggest(session)
        except NoPolicy as e:
            self.post_message(SuggestionReady(text, None, str(e)))
            return
        self.post_message(SuggestionReady(text, sug))

    @on(SuggestionReady)
    def _on_suggestion(self, msg: SuggestionReady) -> None:
        ws, view = self.workspace, self.query_one(SuggestView)
        if msg.schedule != ws.schedule_text:
            return
        if msg.suggestion is None:
            ws.suggestion = None
            view.show_error(msg.error)
            self.query_one(StatusBar).set_status("no policy", msg.error)
            return
        assert isinstance(msg.suggestion, Suggestion)
        ws.suggestion, ws.suggestion_for = msg.suggestion, msg.schedule
        view.show(str(msg.suggestion.action), msg.suggestion.top, msg.suggestion.explanation)

    def action_accept(self) -> None:
        ws = self.workspace
        if ws.suggestion is None or ws.suggestion_for != ws.schedule_text:
            self.notify("no suggestion for this state: press s first", severity="warning")
            return
        self.apply_action(ws.suggestion.action, source="policy")

    # -- export -------------------------------------------------------------------------------
    def action_export(self) -> None:
        from mlir_rl_tui.screens.export import ExportScreen

        def done(folder: str | None) -> None:
            if folder:
                self.query_one(StatusBar).set_status("measuring", f"exporting to {folder}...")
                self.export(folder, self.workspace.session)

        self.app.push_screen(ExportScreen(f"{self.workspace.stem}-export"), done)

    @work(thread=True, exclusive=True, exit_on_error=False, group="export", description="export")
    def export(self, folder: str, session: Session) -> None:
        try:
            files = self.workspace.export(folder, session)
        except (OSError, EngineError) as e:
            self.post_message(ExportDone(folder, [], " ".join(str(e).split())))
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
        self.query_one(MaskView).show(self.workspace.session, self.query_one(ActionBar).kind)

    def on_unmount(self) -> None:
        self._cancel.set()
        self.workspace.stop_recording()
