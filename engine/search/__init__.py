"""Search baselines over the env's action space and the engine's cache (papers: hill climbing, PolyGym
random and greedy, beam search, the 2024 paper's restricted exhaustive search).

```python
from mlir_rl_tui.engine.search import search
r = search(engine, program, "hill", budget=30, seed=0, trace="hill.jsonl", on_progress=print)
r = search(engine, program, "guided", budget=30, ranker=load_cost_model())   # mlir_rl_tui.agent.costmodel
r = search(engine, program, "hill", budget=15, start=parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V"))
r.best (Measurement), r.schedule (Schedule), r.evaluated, r.cache_hits, r.history [(spent, best speedup)]
```
Every method measures complete schedules built through engine.Session (legal by construction) with
`Engine.measure`, so the cache is shared with the app, the env and training. A search stops when its
budget of measurements is spent, when it converges, or when `cancel` is set; it returns its best so far.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.schedule.notation import Schedule
from mlir_rl_tui.engine.search.base import BudgetExhausted, Evaluator, SearchResult
from mlir_rl_tui.engine.search.beam import beam
from mlir_rl_tui.engine.search.exhaustive import exhaustive
from mlir_rl_tui.engine.search.greedy import greedy
from mlir_rl_tui.engine.search.guided import Ranker, guided
from mlir_rl_tui.engine.search.hill import hill_climb
from mlir_rl_tui.engine.search.random_search import random_search

METHODS: dict[str, Callable] = {
    "hill": hill_climb, "random": random_search, "greedy": greedy, "beam": beam, "exhaustive": exhaustive,
    "guided": guided,
}
#: Methods that rank candidates with a cost model (`ranker`) before measuring them.
NEEDS_RANKER = ("guided",)

__all__ = ["METHODS", "NEEDS_RANKER", "Ranker", "SearchResult", "search"]


def search(engine: Engine, program: Program, method: str, budget: int, seed: int = 0, trace: str | None = None,
           on_progress: Callable[[SearchResult], None] | None = None, cancel: threading.Event | None = None,
           free_cache_hits: bool = False, ranker: Ranker | None = None,
           start: Schedule | None = None) -> SearchResult:
    """Run one search method with a budget of measurements; the best schedule is written to `trace`.
    `ranker` is the cost model of the guided search (`mlir_rl_tui.agent.costmodel.load_cost_model()`);
    `start` a complete schedule hill climbing begins at instead of its own starting points."""
    if method not in METHODS:
        raise EngineError(f"unknown search method {method!r}; choose one of {', '.join(METHODS)}")
    if method in NEEDS_RANKER and ranker is None:
        raise EngineError(f"the {method} search needs a cost model: pass ranker=load_cost_model() "
                          "(mlir_rl_tui.agent.costmodel); `mlir-rl-tui costmodel train` makes one")
    if start is not None and method != "hill":
        raise EngineError(f"a starting schedule is for hill climbing, not {method}")
    ev = Evaluator(engine, program, budget, method, on_progress, cancel, free_cache_hits)
    ev.ranker = ranker
    try:
        METHODS[method](ev, np.random.default_rng(seed), **({"start": start} if start is not None else {}))
        ev.result.stopped = "budget" if ev.exhausted else "converged"
    except BudgetExhausted:
        ev.result.stopped = "cancelled" if cancel is not None and cancel.is_set() else "budget"
    if trace:
        from mlir_rl_tui.engine.rl.trace import write_schedule

        write_schedule(trace, program, ev.result.schedule, "search", ev.result.best, engine.limits, engine.openmp)
    return ev.result
