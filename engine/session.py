"""State = (Program, Schedule, cursor on the current op) - cheap to copy, undo is free."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.rl.features import features
from mlir_rl_tui.engine.schedule.notation import Action, Schedule
from mlir_rl_tui.engine.schedule.state import ActionMask, OpState, action_mask, check_schedule


@dataclass
class Session:
    """Where scheduling stands: the op states follow from replaying the schedule.

    Ops are visited in traversal order (last consumer first); the current op is the first one not
    finished by V or NT. `pending` holds a level-pointer interchange in progress (paper App. B).
    """

    program: Program
    schedule: Schedule = field(default_factory=Schedule)
    limits: Limits = DEFAULT_LIMITS
    openmp: bool = True
    pending: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.states: dict[str, OpState] = check_schedule(self.program, self.schedule, self.limits, self.openmp)

    # ------------------------------------------------------------------------------------------
    @property
    def current(self) -> OpState | None:
        for o in self.program.ops:
            if not self.states[o.id].done:
                return self.states[o.id]
        return None

    @property
    def done(self) -> bool:
        return self.current is None

    def producer(self, st: OpState | None = None) -> OpState | None:
        st = st or self.current
        if st is None or st.op.fusion_producer is None:
            return None
        return self.states[st.op.fusion_producer]

    def mask(self) -> ActionMask | None:
        st = self.current
        if st is None:
            return None
        return action_mask(st, self.program, self.limits, self.openmp, self.pending)

    def observation(self) -> np.ndarray:
        """Consumer then producer feature vectors (paper Sec. V-A.1)."""
        st = self.current
        return np.concatenate([features(st, self.limits, self.pending), features(self.producer(st), self.limits)])

    # ------------------------------------------------------------------------------------------
    def apply(self, action: Action) -> Session:
        """A new session with `action` applied to the current op (ScheduleError if masked)."""
        st = self.current
        if st is None:
            raise ScheduleError("every op is already finished")
        if self.pending:
            raise ScheduleError("an interchange is in progress: choose the remaining levels first")
        sched = self.schedule.with_action(st.op.id, action)
        return Session(self.program, sched, self.limits, self.openmp)

    def point(self, loop: int) -> Session:
        """One level-pointer sub-step of interchange: place `loop` at the next position."""
        st = self.current
        if st is None:
            raise ScheduleError("every op is already finished")
        m = self.mask()
        assert m is not None
        if not m.transformation["I"].allowed:
            raise ScheduleError(f"I is not allowed: {m.transformation['I'].reason}")
        if loop >= st.n_loops or loop in self.pending:
            raise ScheduleError(f"loop {loop} cannot go to position {len(self.pending)}")
        pending = self.pending + [loop]
        if len(pending) == st.n_loops:
            return Session(self.program, self.schedule, self.limits, self.openmp).apply(Action("I", tuple(pending)))
        return Session(self.program, self.schedule, self.limits, self.openmp, pending)

    def undo(self) -> Session:
        """Drop the last action (or the last interchange sub-step)."""
        if self.pending:
            return Session(self.program, self.schedule, self.limits, self.openmp, self.pending[:-1])
        last = None
        for o in self.program.ops:
            if self.schedule.actions(o.id):
                last = o.id
        # the most recent action is on the last op (in traversal order) that has actions
        if last is None:
            return self
        return Session(self.program, self.schedule.without_last(last), self.limits, self.openmp)
