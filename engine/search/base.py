"""What every search method shares: the budgeted evaluator, the result, and moves over engine.Session.

Candidates are always complete schedules (every op ends with V or NT), built action by action through
`Session`, so they are legal by construction and their text is a canonical cache key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import permutations

from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.measure.measurement import Measurement
from mlir_rl_tui.engine.schedule.notation import TILED, Action, Schedule, to_text
from mlir_rl_tui.engine.schedule.state import OpState
from mlir_rl_tui.engine.session import Session

#: Uniform tile sizes tried by greedy and beam moves (hill and exhaustive have their own spaces).
MOVE_SIZES = (8, 16, 32, 64)


@dataclass
class SearchResult:
    """Best schedule found, what it cost, and how the best speedup grew with the measurements made."""

    method: str
    best: Measurement
    schedule: Schedule
    evaluated: int = 0  # measurements really made (each consumes budget)
    cache_hits: int = 0  # candidates answered by the cache or seen earlier in this search
    budget: int = 0
    candidates: int = 0  # distinct candidate schedules looked at
    #: (budget spent, best speedup so far) after each candidate; spent == evaluated over a cold cache
    history: list[tuple[int, float]] = field(default_factory=list)
    stopped: str = ""  # why the search ended: "budget", "converged", "exhausted", "cancelled"

    @property
    def speedup(self) -> float:
        return self.best.speedup or 0.0

    def to_json(self) -> dict:
        return {**self.best.to_json(), "method": self.method, "evaluated": self.evaluated,
                "cache_hits": self.cache_hits, "budget": self.budget, "candidates": self.candidates,
                "stopped": self.stopped, "history": [list(h) for h in self.history]}


class BudgetExhausted(Exception):
    """No measurement left (or the caller cancelled): the method stops and returns its best."""


class Evaluator:
    """Measures candidate schedules through Engine.measure (shared cache), within a budget.

    A real measurement consumes one unit of budget. By default a cache hit is free only when it
    repeats a candidate of this search; `free_cache_hits=True` also makes hits from the persistent
    cache free (then a search over a warm cache goes further than over a cold one). Either way hits
    are counted in `cache_hits`.
    """

    def __init__(self, engine: Engine, program: Program, budget: int, method: str,
                 on_progress: Callable[[SearchResult], None] | None = None,
                 cancel: threading.Event | None = None, free_cache_hits: bool = False) -> None:
        if budget < 1:
            raise EngineError(f"the budget must be at least 1 measurement, not {budget}")
        self.engine, self.program, self.budget = engine, program, budget
        self.on_progress, self.cancel, self.free_cache_hits = on_progress, cancel, free_cache_hits
        base = engine.baseline(program, cancel=cancel)
        if base.status == "cancelled":
            raise EngineError("stopped before the untransformed program was measured (out of time, or interrupted)")
        if not base.ok:
            raise EngineError(f"the baseline does not run ({base.status}): {base.error}")
        self.memo: dict[str, Measurement] = {}
        self.spent = 0
        sched = Schedule({})
        self.result = SearchResult(method, base, sched, budget=budget)
        self.result.history.append((0, 1.0))
        self.openmp = engine.openmp
        self.ranker = None  # the cost model of a model-guided search (engine.search.guided.Ranker)

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.budget or (self.cancel is not None and self.cancel.is_set())

    def session(self) -> Session:
        return Session(self.program, limits=self.engine.limits, openmp=self.openmp)

    @staticmethod
    def better(new: Measurement, old: Measurement | None) -> bool:
        """A move is taken only when it beats the current point beyond the measurement noise."""
        return new.beats(old)

    def take(self, m: Measurement, schedule: Schedule) -> None:
        """Make `schedule` the best: a paired comparison (Engine.compare) found it faster than the best beyond
        the noise, where the two figures taken apart could not tell."""
        r = self.result
        r.best, r.schedule = m, schedule
        r.history.append((self.spent, r.best.speedup or 0.0))

    @property
    def width(self) -> int:
        """Candidates the engine measures at once (a Ray cluster's nodes: engine.cluster; 1 on one machine)."""
        return getattr(self.engine, "width", 1)

    def prefetch(self, schedules: list[Schedule], quick: bool = False) -> None:
        """The candidates this search will ask for next, in order: an engine that measures several at once
        starts them ahead (the search still takes each in its turn, so it decides as it would one by one)."""
        ahead = getattr(self.engine, "prefetch", None)
        if ahead is not None and not self.exhausted:
            todo = [s for s in schedules if to_text(s) not in self.memo]
            if todo:
                ahead(self.program, todo, quick)

    def speedup(self, schedule: Schedule) -> float:
        """Measure (or recall) a complete schedule: its speedup, 0 for a failure. BudgetExhausted at the end."""
        m = self.measure(schedule)
        return m.speedup if m.ok and m.speedup else 0.0

    def measure(self, schedule: Schedule, quick: bool = False) -> Measurement:
        """Measure (or recall) a complete schedule; `quick`: a figure to rank by (Engine.measure)."""
        text = to_text(schedule)
        r = self.result
        if text in self.memo:
            r.cache_hits += 1
            return self.memo[text]
        if self.exhausted:
            raise BudgetExhausted()
        m = self.engine.measure(self.program, schedule, cancel=self.cancel, quick=quick)
        if m.status == "cancelled":
            raise BudgetExhausted()
        self.memo[text] = m
        r.candidates += 1
        if m.cached:
            r.cache_hits += 1
            if not self.free_cache_hits:
                self.spent += 1
        else:
            r.evaluated += 1
            self.spent += 1
        if m.beats(r.best):  # within the noise, the schedule found first stays the best
            r.best, r.schedule = m, schedule
        r.history.append((self.spent, r.best.speedup or 0.0))
        if self.on_progress is not None:
            self.on_progress(r)
        return m


# ----------------------------------------------------------------------------------------------
def tunable(op_state: OpState) -> bool:
    """Ops worth measurements: fills are left to the default completion."""
    return op_state.op.name != "linalg.fill"


def finish_op(sess: Session) -> Session:
    """End the current op: V when the mask allows it, NT otherwise. An untouched fill whose only obstacle
    to V is its size is first tiled to a vector that fits (`vector_tile`): the untransformed fill of the
    maxpool sample's output took 40% of the time of the tuned pooling (0.115 vs 0.083 ms)."""
    m = sess.mask()
    assert m is not None
    st = sess.current
    if st.op.name == "linalg.fill" and not m.transformation["V"].allowed and not st.actions \
            and m.transformation["T"].allowed \
            and "vectorized extent" in m.transformation["V"].reason:
        sizes = vector_tile(sess)
        tiled = try_apply(sess, Action("T", sizes)) if sizes else None
        if tiled is not None and tiled.mask().transformation["V"].allowed:
            return tiled.apply(Action("V"))
    return sess.apply(Action("V" if m.transformation["V"].allowed else "NT"))


def vector_tile(sess: Session) -> tuple[int, ...] | None:
    """Tile sizes that keep the innermost loops whole as far as the vector limit allows, 1 outside."""
    st, m = sess.current, sess.mask()
    lim = sess.limits
    limit = lim.max_contraction_vector_elements if st.op.contraction or st.op.decompose_dims \
        else lim.max_vector_elements
    sizes = [1] * st.n_loops
    room = limit
    for pos in reversed(range(st.n_loops)):
        e = st.extents[st.loop_at(pos)]
        ok = [s for i, s in enumerate(lim.tile_sizes) if s and s <= room and m.tile["T"][pos][i].allowed]
        if e <= room:
            sizes[pos] = e
        elif ok:
            sizes[pos] = max(ok)
        room //= max(1, sizes[pos])
    return tuple(sizes) if any(s < st.extents[st.loop_at(p)] for p, s in enumerate(sizes)) else None


def complete(sess: Session) -> Session:
    """Finish every remaining op with V (when allowed) or NT: the default completion of a candidate."""
    while not sess.done:
        sess = finish_op(sess)
    return sess


def skip_untunable(sess: Session) -> Session:
    """Finish ops that are not tuned (fills) until the current op is tunable or the schedule is done."""
    while not sess.done and not tunable(sess.current):
        sess = finish_op(sess)
    return sess


def fit_sizes(sess: Session, kind: str, wanted: Iterable[int]) -> tuple[int, ...] | None:
    """Per loop position, the largest allowed tile size <= the wanted one (0 = not tiled); None if all 0."""
    m = sess.mask()
    st = sess.current
    if m is None or st is None or not m.transformation[kind].allowed:
        return None
    sizes = []
    cands = list(sess.limits.tile_sizes)
    for pos, w in zip(range(st.n_loops), wanted):
        best = 0
        for i, s in enumerate(cands):
            if s <= w and m.tile[kind][pos][i].allowed:
                best = max(best, s)
        sizes.append(best)
    if len(sizes) < st.n_loops or not any(sizes):
        return None
    return tuple(sizes)


def try_apply(sess: Session, action: Action) -> Session | None:
    try:
        return sess.apply(action)
    except ScheduleError:
        return None


def moves(sess: Session) -> list[Action]:
    """A small set of next actions for greedy and beam: uniform tilings, a few interchanges, V, NT."""
    st, m = sess.current, sess.mask()
    if st is None or m is None:
        return []
    out: list[Action] = []
    for kind in TILED:
        seen = set()
        for s in MOVE_SIZES:
            sizes = fit_sizes(sess, kind, [s] * st.n_loops)
            if sizes is not None and sizes not in seen:
                seen.add(sizes)
                out.append(Action(kind, sizes))
    if m.transformation["I"].allowed:
        n = st.n_loops
        if n <= 3:
            perms = [p for p in permutations(range(n)) if list(p) != list(range(n))]
        else:  # swap adjacent loops among the innermost three
            perms = []
            for i in range(max(0, n - 3), n - 1):
                p = list(range(n))
                p[i], p[i + 1] = p[i + 1], p[i]
                perms.append(tuple(p))
        out += [Action("I", tuple(p)) for p in perms]
    for kind in ("V", "NT"):
        if m.transformation[kind].allowed:
            out.append(Action(kind))
    return out
