"""Model-guided hill climbing: many candidates per round, ranked by a cost model, only the top few measured
(Ansor / MetaSchedule style; issue 14).

The space is hill climbing's (engine.search.hill: per op a first tiling, a second tiling, V or NT). Each
round the pool of unmeasured candidates grows by the neighbours of the best measured point and by random
walks of a few steps from it; the cost model predicts every new candidate's speedup with its error bar,
and the `TOP_K` with the highest optimistic score (prediction + `KAPPA` standard deviations) are measured.
The cost model is anything with `predict(program, schedules) -> [(speedup, std), ...]` (the engine does not
import the agent: the caller passes `mlir_rl_tui.agent.costmodel.load_cost_model()`).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.measure.measurement import Measurement
from mlir_rl_tui.engine.schedule.notation import Schedule, to_text
from mlir_rl_tui.engine.search.base import Evaluator
from mlir_rl_tui.engine.search.hill import Recipe, kicked, kinds, neighbours, schedule_from, starts

TOP_K = 3  # measured per round
FIRST_K = 4  # measured in the first round (the starting points compete with their neighbours)
WALKS = 40  # random walks added to the pool per round
WALK_STEPS = (2, 3, 4)
KAPPA = 0.5  # optimism: standard deviations added to the predicted log speedup


class Ranker(Protocol):
    """A cost model: predicted speedup and its standard deviation per schedule."""

    def predict(self, program: Program, schedules: list[Schedule]) -> list[tuple[float, float]]: ...


Point = dict[str, Recipe]


def guided(ev: Evaluator, rng: np.random.Generator) -> None:
    ranker: Ranker | None = ev.ranker
    if ranker is None:
        raise EngineError("the guided search needs a cost model (ranker)")
    first = starts(ev)
    if not first[0]:
        return
    allowed = {op_id: kinds(ev, op_id) for op_id in first[0]}
    pool: dict[str, tuple[Point, Schedule, float]] = {}  # text -> (point, schedule, optimistic log score)
    measured: dict[str, tuple[Point, Measurement]] = {}

    def add(points: list[Point]) -> None:
        new: dict[str, tuple[Point, Schedule]] = {}
        for p in points:
            s = schedule_from(ev, p)
            text = to_text(s)
            if text not in pool and text not in measured and text not in new:
                new[text] = (p, s)
        if not new:
            return
        preds = ranker.predict(ev.program, [s for _, s in new.values()])
        for (text, (p, s)), (mu, sd) in zip(new.items(), preds):
            log_mu = math.log(max(mu, 1e-9))
            pool[text] = (p, s, log_mu + KAPPA * (sd / max(mu, 1e-9)))

    def walks(point: Point, n: int) -> list[Point]:
        out = []
        for _ in range(n):
            out.append(kicked(ev, point, allowed, rng, int(rng.choice(WALK_STEPS))))
        return out

    def best() -> Point:
        top: tuple[Point, Measurement] | None = None
        for p, m in measured.values():
            if top is None or m.beats(top[1]):
                top = (p, m)
        assert top is not None
        return top[0]

    seeds = starts(ev, allowed)
    add(seeds)
    for p in seeds:
        add(neighbours(ev, p, allowed) + walks(p, WALKS // len(seeds)))
    k = FIRST_K
    while pool:
        for text in sorted(pool, key=lambda t: -pool[t][2])[:k]:
            p, s, _ = pool.pop(text)
            measured[text] = (p, ev.measure(s))  # BudgetExhausted ends the search
        k = TOP_K
        centre = best()
        add(neighbours(ev, centre, allowed) + walks(centre, WALKS))
