"""Export dialog: the folder that receives the transformed .mlir, the transform script and the trace."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class ExportScreen(ModalScreen[str | None]):
    """Asks for a folder name; dismisses with it (None on cancel)."""

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 70; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    ExportScreen Horizontal { height: auto; align-horizontal: right; }
    ExportScreen Input { margin: 1 0; }
    """
    BINDINGS = [("escape", "cancel", "cancel")]

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Export into folder (created if missing):")
            yield Input(self.default, id="folder")
            yield Label("writes <name>.transformed.mlir, <name>.transform.mlir (mlir-opt --transform-interpreter), "
                        "schedule.txt, trace.jsonl", classes="hint")
            with Horizontal():
                yield Button("Export", variant="primary", id="ok")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        value = self.query_one(Input).value.strip()
        self.dismiss(value or None)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
