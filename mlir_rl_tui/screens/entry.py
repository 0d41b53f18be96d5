"""Entry picker: the file has several functions that could be the entry and no --entry was given."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from mlir_rl_tui.engine import EngineError, Program


@dataclass
class EntryChoice:
    """What the app opens on instead of a Program: the candidates, and how to load one of them."""

    path: str
    candidates: list[str]
    message: str  # the one-line error the command line would have printed (shown when the user quits)
    load: Callable[[str], Program]  # guarded load of the file with that entry (engine.ir.loader)
    #: One line before measuring (engine.ir.program.measurement_note); raises for a program too slow to measure.
    check: Callable[[Program], str | None] | None = None


class EntryPicker(ModalScreen[tuple[Program, str | None] | None]):
    """Lists the functions; enter loads the chosen one (in a thread) and dismisses with (program, note).
    A function that cannot be loaded shows its one-line error and the list stays open; escape or q
    dismisses with None."""

    DEFAULT_CSS = """
    EntryPicker { align: center middle; }
    EntryPicker > Vertical { width: 72; height: auto; max-height: 80%; border: thick $accent;
                             background: $surface; padding: 1 2; }
    EntryPicker OptionList { height: auto; max-height: 20; margin: 1 0; }
    EntryPicker #entry-error { color: $error; }
    EntryPicker .hint { color: $text-muted; }
    """
    BINDINGS = [("escape,q", "cancel", "cancel")]

    def __init__(self, choice: EntryChoice) -> None:
        super().__init__()
        self.choice = choice
        self.loading: str | None = None
        self.error = ""  # the last function's one-line error, as shown

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"{self.choice.path} has several functions: which one is scheduled and timed?")
            yield OptionList(*[Option("@" + n, id=n) for n in self.choice.candidates], id="entries")
            yield Label("", id="entry-error")
            yield Label("enter: open   esc: quit   (or start with --entry NAME)", classes="hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if self.loading is None and event.option.id:
            self.loading = event.option.id
            self.query_one("#entry-error", Label).update(f"loading @{event.option.id} ...")
            self._load(event.option.id)

    @work(thread=True, exclusive=True, exit_on_error=False, group="entry", description="load the entry")
    def _load(self, name: str) -> None:
        try:
            prog = self.choice.load(name)
            note = self.choice.check(prog) if self.choice.check else None
        except EngineError as e:
            self.app.call_from_thread(self._failed, str(e))
            return
        self.app.call_from_thread(self.dismiss, (prog, note))

    def _failed(self, message: str) -> None:
        self.loading = None
        self.error = message
        self.query_one("#entry-error", Label).update(message)
        self.query_one(OptionList).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)
