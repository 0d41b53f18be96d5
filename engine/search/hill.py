"""Hill climbing (seed paper: hill-climbing-tiling-mlir.txt, Algorithm 1) plus the op-level actions.

Each tuned op has a recipe: a first tiling (T, TP or TF) with one size per loop, an optional second
tiling T, and V (when allowed) or NT at the end. The search starts at tile size 32 on every loop; a
neighbour moves one loop's size one step along `Limits.tile_sizes` (the seed paper steps by 8 through
8..128; our candidates are powers of two, so a step is one candidate), switches the first tiling's kind,
or toggles V/NT. Neighbours are tried in a seeded random order and the first improvement is taken; at a
local optimum the search restarts from a random perturbation of the best point while budget remains.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.schedule import Action, Schedule
from engine.search.base import Evaluator, finish_op, fit_sizes, try_apply, tunable

START_SIZE = 32
MAX_RESTARTS = 20


@dataclass(frozen=True)
class Recipe:
    """One op's point in the hill-climbing space (sizes are indexes into Limits.tile_sizes)."""

    kind: str
    outer: tuple[int, ...]
    inner: tuple[int, ...]
    vectorize: bool = True


def build(ev: Evaluator, recipes: dict[str, Recipe]) -> Schedule:
    """The complete schedule of a point: each recipe clamped to what the mask allows."""
    ts = ev.engine.limits.tile_sizes
    sess = ev.session()
    while not sess.done:
        r = recipes.get(sess.current.op.id)
        if r is not None:
            for kind, idx in ((r.kind, r.outer), ("T", r.inner)):
                sizes = fit_sizes(sess, kind, [ts[i] for i in idx])
                if sizes is not None:
                    sess = try_apply(sess, Action(kind, sizes)) or sess
            if not r.vectorize:
                sess = sess.apply(Action("NT"))
                continue
        sess = finish_op(sess)
    return sess.schedule


def start(ev: Evaluator) -> dict[str, Recipe]:
    ts = ev.engine.limits.tile_sizes
    i32 = ts.index(START_SIZE) if START_SIZE in ts else len(ts) - 1
    sess = ev.session()
    return {st.op.id: Recipe("T", (i32,) * st.n_loops, (0,) * st.n_loops)
            for st in sess.states.values() if tunable(st)}


def kinds(ev: Evaluator, op_id: str) -> list[str]:
    """First-tiling kinds the op allows before any action (TF needs a producer, TP needs OpenMP)."""
    from engine.state import transformation_reasons

    sess = ev.session()
    allowed = transformation_reasons(sess.states[op_id], ev.program, ev.engine.limits, ev.openmp)
    return [k for k in ("T", "TP", "TF") if allowed[k].allowed]


def neighbours(ev: Evaluator, point: dict[str, Recipe], allowed: dict[str, list[str]]) -> list[dict[str, Recipe]]:
    top = len(ev.engine.limits.tile_sizes) - 1
    out = []
    for op_id, r in point.items():
        for field in ("outer", "inner"):
            sizes = getattr(r, field)
            for pos in range(len(sizes)):
                for step in (-1, 1):
                    i = sizes[pos] + step
                    if 0 <= i <= top:
                        new = sizes[:pos] + (i,) + sizes[pos + 1:]
                        out.append({**point, op_id: replace(r, **{field: new})})
        for k in allowed[op_id]:
            if k != r.kind:
                out.append({**point, op_id: replace(r, kind=k)})
        out.append({**point, op_id: replace(r, vectorize=not r.vectorize)})
    return out


def hill_climb(ev: Evaluator, rng: np.random.Generator) -> None:
    allowed = {op_id: kinds(ev, op_id) for op_id in start(ev)}
    point = start(ev)
    if not point:
        return
    value = ev.speedup(build(ev, point))
    best_point, best_value = point, value
    for _ in range(MAX_RESTARTS):
        improved = True
        while improved:
            improved = False
            cands = neighbours(ev, point, allowed)
            for i in rng.permutation(len(cands)):
                v = ev.speedup(build(ev, cands[i]))
                if v > value:
                    point, value, improved = cands[i], v, True
                    break
        if value > best_value:
            best_point, best_value = point, value
        # local optimum: restart from the best point moved by two random steps
        point = best_point
        for _ in range(2):
            cands = neighbours(ev, point, allowed)
            point = cands[int(rng.integers(len(cands)))]
        value = ev.speedup(build(ev, point))
