"""The Textual app: `mlir-rl-tui FILE` opens it on a loaded Program (the CLI loads the file first), or
on an EntryChoice when the file has several candidate functions and no --entry (a picker asks)."""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.binding import Binding

from mlir_rl_tui import workarounds
from mlir_rl_tui.adapter import Adapter, EngineAdapter
from mlir_rl_tui.engine import LoadError, Program
from mlir_rl_tui.idle_gc import IdleCollector
from mlir_rl_tui.palette import ScheduleCommands
from mlir_rl_tui.screens.entry import EntryChoice, EntryPicker
from mlir_rl_tui.screens.main import MainScreen

__all__ = ["EntryChoice", "ScheduleApp", "make_app", "run_app"]


class ScheduleApp(App[int]):
    """Schedule explorer for one program; the engine is reached only through `adapter`."""

    CSS_PATH = "app.tcss"
    TITLE = "mlir-rl-tui"
    COMMANDS = App.COMMANDS | {ScheduleCommands}
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help", key_display="?"),
    ]

    def __init__(self, program: Program | EntryChoice, adapter: Adapter, record: str | None = None,
                 note: str | None = None, lesson=None) -> None:
        super().__init__()
        self.lesson = lesson  # mlir_rl_tui.lessons.Lesson: the main screen runs it
        self.choice = program if isinstance(program, EntryChoice) else None
        self.program: Program | None = None if self.choice else program
        self.adapter = adapter
        self.record = record
        self.note = note
        #: One line for the command line to print after the app closed (the user quit the entry picker).
        self.exit_error: str | None = None
        #: started by the main screen after its first paint (None: switched off, mlir_rl_tui/workarounds.py)
        self.idle_gc = IdleCollector() if workarounds.on("idle_gc") else None

    def on_mount(self) -> None:
        if self.choice is not None:
            self.push_screen(EntryPicker(self.choice), self._entry_picked)
        else:
            self._open(self.note)

    def _entry_picked(self, picked: tuple[Program, str | None] | None) -> None:
        if picked is None:
            assert self.choice is not None
            self.exit_error = self.choice.message
            self.exit(return_code=2)
            return
        self.program = picked[0]
        self._open(picked[1])

    def _open(self, note: str | None) -> None:
        assert self.program is not None
        self.push_screen(MainScreen(self.program, self.adapter, self.record, self.lesson))
        if note:
            self.notify(note, title="measuring will take a while", timeout=15, markup=False)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown):
            if self.idle_gc is not None:
                self.idle_gc.touched()
        await super().on_event(event)

    def on_unmount(self) -> None:
        if self.idle_gc is not None:
            self.idle_gc.stop()

    def action_help(self) -> None:
        from mlir_rl_tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    @property
    def main(self) -> MainScreen:
        for s in self.screen_stack:
            if isinstance(s, MainScreen):
                return s
        raise LookupError("the main screen is not open")


def make_app(program: Program | EntryChoice, adapter: Adapter | None = None, policy: str | None = None,
             record: str | None = None, note: str | None = None, lesson=None) -> ScheduleApp:
    """One factory for the CLI and the tests (tests inject a fake or shared-engine adapter)."""
    return ScheduleApp(program, adapter or EngineAdapter(policy=policy), record, note, lesson)


def run_app(program: Program | EntryChoice, policy: str | None = None, record: str | None = None,
            note: str | None = None, lesson=None) -> int:
    """Run until the user quits; the engine's workers are closed on the way out. Quitting the entry
    picker raises the LoadError the command line prints (one line, status 2)."""
    app = make_app(program, policy=policy, record=record, note=note, lesson=lesson)
    try:
        app.run()
    finally:
        app.adapter.close()
    if app.exit_error:
        raise LoadError(app.exit_error)
    return app.return_code or 0
