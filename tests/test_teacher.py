"""The imitation teacher (agent.teacher): recipes build legal schedules, and the search measures for real."""

from __future__ import annotations

import pytest
from conftest import SAMPLE_FILES

from mlir_rl_tui.engine import load_file, to_text
from mlir_rl_tui.engine.search.base import Evaluator


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_every_recipe_builds_a_legal_schedule_on_every_sample(path, engine):
    from mlir_rl_tui.agent.teacher import NT, moves, schedule_from, starts

    prog = load_file(str(path))
    ev = Evaluator(engine, prog, 1, "recipe")
    ops = [o.id for o in prog.ops]
    recipes = starts(["T", "TP", "TF"], major=True)
    recipes += [m for r in recipes for m in moves(r, ["T", "TP", "TF"])]
    texts = set()
    for rec in recipes:
        sched = schedule_from(ev, {op: rec for op in ops})  # raises ScheduleError if an action were illegal
        assert set(sched.ops) == set(ops)  # every op is finished (V or NT)
        texts.add(to_text(sched))
    assert to_text(schedule_from(ev, {op: NT for op in ops})) == to_text(schedule_from(ev, {}))
    assert len(texts) > 3  # the recipes really differ on every sample


def test_recipe_search_on_matmul_beats_the_baseline_within_budget(engine, matmul):
    from mlir_rl_tui.agent.teacher import recipe_search

    sched, speedup, recipes, res = recipe_search(engine, matmul, budget=6)
    assert res.evaluated + res.cache_hits >= 1 and res.evaluated <= 6
    m = engine.measure(matmul, sched)
    assert m.ok and m.validated
    # matmul is compute bound: the first recipe (parallel outer tiles, register tile, V) is far faster
    assert speedup > 3.0 and m.speedup > 3.0
    assert recipes and all(r.vec or r.kind for r in recipes.values())
    assert "V" in to_text(sched)
