"""The Textual app: `mlir-rl-tui FILE` opens it on a loaded Program (the CLI loads the file first)."""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.binding import Binding

from engine import Program
from mlir_rl_tui.adapter import Adapter, EngineAdapter
from mlir_rl_tui.commands import ScheduleCommands
from mlir_rl_tui.idle_gc import IdleCollector
from mlir_rl_tui.screens.main import MainScreen


class ScheduleApp(App[int]):
    """Schedule explorer for one program; the engine is reached only through `adapter`."""

    CSS_PATH = "app.tcss"
    TITLE = "mlir-rl-tui"
    COMMANDS = App.COMMANDS | {ScheduleCommands}
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "help", "help", key_display="?"),
    ]

    def __init__(self, program: Program, adapter: Adapter, record: str | None = None) -> None:
        super().__init__()
        self.program = program
        self.adapter = adapter
        self.record = record
        self.idle_gc = IdleCollector()  # started by the main screen after its first paint

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.program, self.adapter, self.record))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown):
            self.idle_gc.touched()
        await super().on_event(event)

    def on_unmount(self) -> None:
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


def make_app(program: Program, adapter: Adapter | None = None, policy: str | None = None,
             record: str | None = None) -> ScheduleApp:
    """One factory for the CLI and the tests (tests inject a fake or shared-engine adapter)."""
    return ScheduleApp(program, adapter or EngineAdapter(policy=policy), record)


def run_app(program: Program, policy: str | None = None, record: str | None = None) -> int:
    """Run until the user quits; the engine's workers are closed on the way out."""
    app = make_app(program, policy=policy, record=record)
    try:
        app.run()
    finally:
        app.adapter.close()
    return app.return_code or 0
