"""Action bar: pick a transformation and its parameters (tile size per loop, interchange order), apply."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button, Label, Select

from mlir_rl_tui.engine import Action, ScheduleError, Session
from mlir_rl_tui.engine.config import TRANSFORMATIONS
from mlir_rl_tui.engine.schedule.notation import TILED
from mlir_rl_tui.widgets.loopnest import loop_var

MAX_LOOPS = 12  # Limits.n_loops: the action space has no more loop positions

KIND_NAMES = {"T": "T tile", "TP": "TP parallel", "TF": "TF fuse", "I": "I interchange", "V": "V vectorize",
              "NT": "NT next op"}


def default_size(allowed: list[int], extent: int) -> int:
    """A reasonable first pick: the largest allowed tile <= 32 that leaves more than one tile, else 0."""
    good = [s for s in allowed if 0 < s <= 32 and s < extent]
    return max(good) if good else 0


class ActionBar(Horizontal):
    """`kind [sizes per loop | order per position] Apply`; Enter on a Select opens it, `x` applies."""

    DEFAULT_CSS = """
    ActionBar { height: 3; background: $boost; }
    ActionBar Label { padding: 1 0 0 1; width: auto; }
    ActionBar #kind { width: 20; }
    ActionBar #params { width: 1fr; height: 3; }
    ActionBar #params Select { width: 12; }
    ActionBar #params.-interchange Select { width: 14; }
    ActionBar #params Label { padding: 1 1 0 1; color: $text-muted; }
    ActionBar Button { min-width: 9; width: auto; }
    """

    @dataclass
    class Apply(Message):
        """The user asked to apply this action to the current op."""

        action: Action

    @dataclass
    class KindChanged(Message):
        """The picked transformation changed (the mask view follows it)."""

        kind: str

    @dataclass
    class Invalid(Message):
        """The picked parameters do not make an action (one-line reason)."""

        reason: str

    def __init__(self, max_loops: int = MAX_LOOPS, **kw) -> None:
        super().__init__(**kw)
        # one select per loop position of the program's deepest op: every Select is five widgets, and
        # each one makes every layout of the screen slower (12 of them were 40% of the screen's widgets)
        self.max_loops = max(1, min(max_loops, MAX_LOOPS))
        self.kind = "T"
        self._session: Session | None = None
        self._params: list[Select] = []
        self._pool: list[Select] = []
        self._want_focus = False
        self._note: str | None = None
        self._options: dict[int, list[tuple[str, int]]] = {}

    def compose(self) -> ComposeResult:
        yield Label("do")
        yield Select([(KIND_NAMES[k], k) for k in TRANSFORMATIONS], value="T", allow_blank=False, id="kind")
        with Horizontal(id="params"):
            yield Label("", id="params-note")
            # a fixed pool of selects, re-labelled on each change: no mount/unmount races, less layout work
            for pos in range(self.max_loops):
                yield Select([("0", 0)], value=0, allow_blank=False, classes="param", id=f"param-{pos}")
        yield Button("Apply", id="apply", variant="primary")
        yield Button("Undo", id="undo")

    # ------------------------------------------------------------------------------------------
    def show(self, session: Session) -> None:
        self._session = session
        self._rebuild()

    def pick(self, kind: str) -> None:
        """Select a transformation (from a key) and focus its first parameter once they are built."""
        self._want_focus = True
        sel = self.query_one("#kind", Select)
        if sel.value != kind:
            sel.value = kind  # its Select.Changed comes later and finds the kind set
        # now, not on the Changed message: an apply key typed right after (`p x`) must apply this kind
        self._set_kind(kind)

    @on(Select.Changed, "#kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        event.stop()
        # picked with the mouse; a late Changed of a kind picked by a key before (`t p x`) is not
        if isinstance(event.value, str) and event.value == event.select.value and event.value != self.kind:
            self._set_kind(event.value)

    def _set_kind(self, kind: str) -> None:
        self.kind = kind
        self._rebuild()
        self.post_message(self.KindChanged(kind))

    def _rebuild(self) -> None:
        box = self.query_one("#params", Horizontal)
        box.set_class(self.kind == "I", "-interchange")
        note = self.query_one("#params-note", Label)
        if not self._pool:  # queried once: the selects are a fixed pool
            self._pool = list(self.query(".param").results(Select))
        pool = self._pool
        s = self._session
        st = s.current if s else None
        mask = s.mask() if s else None
        rows: list[tuple[list[tuple[str, int]], int, str]] = []
        text = ""
        if st is None or mask is None:
            text = "every op is finished"
        elif self.kind in TILED:
            for pos in range(st.n_loops):
                d = st.loop_at(pos)
                row = mask.tile[self.kind][pos]
                allowed = [sz for sz, c in zip(mask.tile_sizes, row, strict=True) if c.allowed]
                rows.append(([(f"{loop_var(d)}:{sz}", sz) for sz in allowed], default_size(allowed, st.extents[d]),
                             f"tile size of loop {pos} ({loop_var(d)}, extent {st.extents[d]})"))
        elif self.kind == "I":
            done = list(s.pending) if s else []
            rest = [p for p in range(st.n_loops) if p not in done]
            for pos in range(st.n_loops):
                value = done[pos] if pos < len(done) else rest[pos - len(done)]
                opts = [(f"{pos}←{loop_var(st.loop_at(p))}{st.extents[st.loop_at(p)]}", p) for p in range(st.n_loops)]
                rows.append((opts, value, f"which loop goes to position {pos}"))
        else:
            c = mask.transformation[self.kind]
            text = "no parameters" if c.allowed else f"masked: {c.reason}"
        if text != self._note:
            self._note = text
            note.update(text)
        note.display = bool(text)
        self._params = []
        for pos, sel in enumerate(pool):
            if pos < len(rows):
                opts, value, tip = rows[pos]
                if self._options.get(pos) != opts:  # rebuilding a Select's overlay is not free
                    self._options[pos] = opts
                    sel.set_options(opts)
                if sel.value != value:
                    sel.value = value
                if sel.tooltip != tip:
                    sel.tooltip = tip
                sel.display = True
                self._params.append(sel)
            else:
                sel.display = False
        if self._want_focus:
            self._want_focus = False
            if self._params:
                self.call_after_refresh(self._params[0].focus)

    # ------------------------------------------------------------------------------------------
    def action(self) -> Action:
        """The action the bar shows now (ScheduleError if the parameters do not make one)."""
        s = self._session
        st = s.current if s else None
        if st is None:
            raise ScheduleError("every op is already finished")
        if self.kind in TILED or self.kind == "I":
            vals = []
            if len(self._params) != st.n_loops:
                raise ScheduleError("the parameters are not ready yet")
            for pos, sel in enumerate(self._params):
                v = sel.value
                if not isinstance(v, int):
                    raise ScheduleError(f"pick a value for loop {pos}")
                vals.append(v)
            if self.kind == "I" and sorted(vals) != list(range(st.n_loops)):
                raise ScheduleError(f"I{tuple(vals)} is not a permutation: each loop must appear once")
            return Action(self.kind, tuple(vals))
        return Action(self.kind)

    @on(Button.Pressed, "#apply")
    def request_apply(self, event: Button.Pressed | None = None) -> None:
        if event is not None:
            event.stop()
        try:
            self.post_message(self.Apply(self.action()))
        except ScheduleError as e:
            self.post_message(self.Invalid(str(e)))

    @on(Button.Pressed, "#undo")
    def _undo(self, event: Button.Pressed) -> None:
        event.stop()
        self.screen.run_action("undo")  # type: ignore[union-attr]
