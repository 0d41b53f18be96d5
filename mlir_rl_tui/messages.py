"""Messages the workers post to the app; they never touch widgets themselves (toolong's habit)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from mlir_rl_tui.engine import Measurement


@dataclass
class MeasureProgress(Message):
    """A measurement moved on: phase ("baseline", "compile", "run"), i of n."""

    schedule: str
    phase: str
    i: int
    n: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MeasureProgress)


@dataclass
class MeasureDone(Message):
    """A measurement finished (or failed, or was cancelled) for the schedule text."""

    schedule: str
    measurement: Measurement


@dataclass
class IRReady(Message):
    """The transformed IR (or the one-line error) of a schedule is known."""

    schedule: str
    status: str
    text: str


@dataclass
class DiffReady(Message):
    """The unified diff of the IR between two schedules (prev -> schedule) is computed."""

    prev: str
    schedule: str
    text: str


@dataclass
class SuggestionReady(Message):
    """The policy answered for the schedule it was asked about (suggestion None: `error` says why)."""

    schedule: str
    suggestion: object | None
    error: str = ""


@dataclass
class ExportDone(Message):
    """An export finished: the folder, or the one-line error."""

    folder: str
    files: list[str]
    error: str = ""


@dataclass
class ProfileReady(Message):
    """The per-op profile of a schedule: [{"ops", "ms", "share"}], or the one-line error."""

    schedule: str
    groups: list[dict]
    error: str = ""
