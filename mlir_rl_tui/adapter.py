"""The one small interface through which the app reaches the engine (harlequin's `adapter.py` habit).

The UI never imports `mlir`: it keeps a `Session` (plain data) and asks the adapter for everything that
needs a worker process: measurements, the transformed IR, scripts, exports, policy suggestions. UI tests
pass a fake adapter with fixed timings; integration tests pass `EngineAdapter(engine)` around a real Engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from mlir_rl_tui.engine import Action, Engine, Measurement, Program, Schedule, Session

if TYPE_CHECKING:
    from mlir_rl_tui.agent.explain import Explanation

Progress = Callable[[str, int, int], None]


@dataclass
class Suggestion:
    """What the policy proposes for the current op, the joint probabilities of its most probable actions,
    and why (agent.explain: the rule in words, the critic's value, the cost model's predictions)."""

    action: Action
    top: list[tuple[str, float]] = field(default_factory=list)
    explanation: Explanation | None = None


class NoPolicy(Exception):
    """No policy checkpoint can be used; str() is the one line to show."""


class Adapter(Protocol):
    """What the app needs from the engine; every method may block, so the app calls them from workers."""

    def measure(self, program: Program, schedule: Schedule, on_progress: Progress | None = None,
                cancel: threading.Event | None = None) -> Measurement: ...

    def transformed_ir(self, program: Program, schedule: Schedule) -> tuple[str, str]: ...

    def script(self, program: Program, schedule: Schedule) -> str: ...

    def replayable(self, program: Program, schedule: Schedule) -> str: ...

    def per_op(self, program: Program, schedule: Schedule) -> list[dict]: ...

    def suggest(self, session: Session, k: int = 3) -> Suggestion: ...

    def close(self) -> None: ...


class EngineAdapter:
    """The real engine. The Engine (and its worker processes) starts on first use, off the UI thread,
    so the first paint does not wait for MLIR to load in the workers."""

    def __init__(self, engine: Engine | None = None, policy: str | None = None) -> None:
        self._engine = engine
        self._owned = engine is None
        self._lock = threading.Lock()
        self._policy_path = policy
        self._policy = None
        self._cost_model = None

    @property
    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                from mlir_rl_tui.engine.config import MeasureConfig

                # niced workers: compiling on both cores must not starve the event loop
                self._engine = Engine(config=MeasureConfig(worker_nice=10))
            return self._engine

    def measure(self, program: Program, schedule: Schedule, on_progress: Progress | None = None,
                cancel: threading.Event | None = None) -> Measurement:
        return self.engine.measure(program, schedule, on_progress=on_progress, cancel=cancel)

    def transformed_ir(self, program: Program, schedule: Schedule) -> tuple[str, str]:
        return self.engine.transformed_ir(program, schedule)

    def script(self, program: Program, schedule: Schedule) -> str:
        from mlir_rl_tui.engine.schedule.transforms import script

        return script(program, schedule)

    def replayable(self, program: Program, schedule: Schedule) -> str:
        from mlir_rl_tui.engine.ir.export import replayable

        return replayable(program, schedule)

    def per_op(self, program: Program, schedule: Schedule) -> list[dict]:
        return self.engine.per_op(program, schedule)

    def suggest(self, session: Session, k: int = 3) -> Suggestion:
        if self._policy is None:
            try:
                from mlir_rl_tui.agent.suggest import load_policy
            except ImportError:
                raise NoPolicy("no policy checkpoint available (the agent package is not installed)") from None
            try:
                self._policy = load_policy(self._policy_path)
            except Exception as e:  # noqa: BLE001 - a broken checkpoint must not end the session
                raise NoPolicy(f"no policy checkpoint available: {' '.join(str(e).split())}") from None
            if self._policy is None:
                raise NoPolicy("no policy checkpoint available")
            self._cost_model = optional_cost_model()
        try:
            why = self._policy.explain(session, k=max(k, 5), cost_model=self._cost_model)
            action = self._policy.action_of(session, why)
        except Exception as e:  # noqa: BLE001
            raise NoPolicy(f"the policy failed: {' '.join(str(e).split())}") from None
        top = sorted(why.top, key=lambda c: -c.joint)[:k]
        return Suggestion(action, [(c.action, c.joint) for c in top], why)

    def close(self) -> None:
        if self._owned and self._engine is not None:
            self._engine.close()


def optional_cost_model():
    """The shipped cost model for the suggestion panel's predictions, or None (no agent package, none shipped,
    or a file that does not load): the panel then shows "-" instead of failing."""
    try:
        from mlir_rl_tui.agent.costmodel import load_cost_model
    except ImportError:
        return None
    try:
        return load_cost_model()
    except Exception:  # noqa: BLE001 - predictions are optional
        return None
