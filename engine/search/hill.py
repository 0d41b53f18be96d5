"""Hill climbing (seed paper: hill-climbing-tiling-mlir.txt, Algorithm 1) plus the op-level actions.

Each tuned op has a recipe: a first tiling (T, TP or TF) with one size per loop, an optional second
tiling T, and V (when allowed) or NT at the end. The seed paper starts at tile size 32 on every loop; we
climb from the fastest of three starting points (`starts`), one of them register-tiled as the peak-code V
needs (reference/codegen-spike). A neighbour moves one loop's size
one step along `Limits.tile_sizes` (the seed paper steps by 8 through 8..128; our candidates are powers
of two, so a step is one candidate), switches the first tiling's kind, or toggles V/NT. Neighbours are
tried in a seeded random order and the first that beats the current point beyond the measurement noise
(`Measurement.beats`) is taken; at a local optimum the search restarts from a random perturbation of the
best point while budget remains.
With `start` (a complete schedule, e.g. a policy's one-pass schedule) the
climb begins at that schedule's recipes instead (`recipes_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from mlir_rl_tui.engine.schedule.notation import Action, Schedule
from mlir_rl_tui.engine.search.base import Evaluator, finish_op, fit_sizes, try_apply, tunable

T = TypeVar("T")
START_SIZE = 32
MAX_RESTARTS = 20


@dataclass(frozen=True)
class Recipe:
    """One op's point in the hill-climbing space (sizes are indexes into Limits.tile_sizes)."""

    kind: str
    outer: tuple[int, ...]
    inner: tuple[int, ...]
    vectorize: bool = True


def schedule_from(ev: Evaluator, recipes: dict[str, Recipe]) -> Schedule:
    """The complete schedule of a point: each recipe clamped to what the action mask allows. An op that
    is to be vectorized gets the inner tile V needs on its convolution/pooling window loops (1)."""
    ts = ev.engine.limits.tile_sizes
    sess = ev.session()
    while not sess.done:
        st = sess.current
        r = recipes.get(st.op.id)
        if r is not None:
            for kind, idx in ((r.kind, r.outer), ("T", r.inner)):
                wanted = [ts[i] for i in idx]
                if kind == "T" and r.vectorize and st.op.decompose_dims:
                    for d in st.op.decompose_dims:
                        wanted[st.order.index(d)] = 1
                sizes = fit_sizes(sess, kind, wanted)
                if sizes is not None:
                    sess = try_apply(sess, Action(kind, sizes)) or sess
            if not r.vectorize:
                sess = sess.apply(Action("NT"))
                continue
        sess = finish_op(sess)
    return sess.schedule


def starts(ev: Evaluator, allowed: dict[str, list[str]] | None = None) -> list[dict[str, Recipe]]:
    """Starting points; the climb begins at the fastest (the seed paper starts at 32 on every loop):

    - register tiles: an outer tiling of 32 on the parallel loops, in parallel (TP) where the op allows it,
      then a register tile of 8 x 32 on the two innermost parallel loops and 1 on every other loop
      (accumulators in registers, reductions as a scalar loop of outer products: the codegen spike's
      shape for contractions);
    - streams: outer tiles of 1 on the parallel loops but a vector's worth (64) on the innermost, in
      parallel, then vectors of 8 (memory-bound elementwise ops: many small tiles spread over the cores);
    - the seed paper's point: T(32, .., 32) V."""
    ts = ev.engine.limits.tile_sizes

    def idx(size: int) -> int:
        return ts.index(size) if size in ts else max(i for i, t in enumerate(ts) if t <= size)

    sess = ev.session()
    points: list[dict[str, Recipe]] = [{}, {}, {}]
    for st in sess.states.values():
        if not tunable(st):
            continue
        n = st.n_loops
        par = [p for p in range(n) if st.op.loops[st.loop_at(p)].iterator == "parallel"]
        kind = "TP" if allowed is None or "TP" in allowed.get(st.op.id, []) else "T"
        outer = tuple(idx(START_SIZE) if p in par else 0 for p in range(n))
        inner = [idx(1)] * n
        if par:
            inner[par[-1]] = idx(START_SIZE)
        if len(par) > 1:
            inner[par[-2]] = idx(8)
        points[0][st.op.id] = Recipe(kind, outer, tuple(inner))
        stream_outer = tuple((idx(64) if p == par[-1] else idx(1)) if p in par else 0 for p in range(n)) if par \
            else outer
        stream_inner = tuple(idx(8) if par and p == par[-1] else idx(1) for p in range(n))
        points[1][st.op.id] = Recipe(kind, stream_outer, stream_inner)
        points[2][st.op.id] = Recipe("T", (idx(START_SIZE),) * n, (0,) * n)
    return points


def recipes_of(ev: Evaluator, schedule: Schedule, fallback: dict[str, Recipe] | None = None
               ) -> dict[str, Recipe]:
    """The hill-climbing point nearest a complete schedule: per tunable op its first tiling (kind and sizes),
    its second tiling T (none: 0 on every loop) and its end (V or NT); a size that is not a candidate becomes
    the largest candidate below it. An op untiled in `schedule` gets an untiled recipe (T with all sizes 0,
    which `schedule_from` skips); an op whose actions include an interchange, which recipes cannot express,
    gets the register-tile start (`fallback`, computed by `starts` when not given)."""
    ts = ev.engine.limits.tile_sizes

    def idx(size: int) -> int:
        return max(i for i, t in enumerate(ts) if t <= size)

    default = fallback or {}
    out: dict[str, Recipe] = {}
    for st in ev.session().states.values():
        if not tunable(st):
            continue
        acts = schedule.actions(st.op.id)
        tilings = [a for a in acts if a.kind in ("T", "TP", "TF")]
        if any(a.kind == "I" for a in acts):
            default = default or starts(ev)[0]
            out[st.op.id] = default[st.op.id]
            continue
        n = st.n_loops
        untiled = (0,) * n
        sizes = [tuple(idx(x) for x in (*a.params, *untiled)[:n]) for a in tilings[:2]]
        outer, inner = sizes + [untiled] * (2 - len(sizes))
        out[st.op.id] = Recipe(tilings[0].kind if tilings else "T", outer, inner,
                               vectorize=any(a.kind == "V" for a in acts))
    return out


def kinds(ev: Evaluator, op_id: str) -> list[str]:
    """First-tiling kinds the op allows before any action (TF needs a producer, TP needs OpenMP)."""
    from mlir_rl_tui.engine.schedule.state import transformation_reasons

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


def hill_step(cands: list[T], rng: np.random.Generator, improves: Callable[[T], bool],
              stop: Callable[[], bool] = lambda: False, ahead: Callable[[list[T]], None] | None = None,
              width: int = 1) -> T | None:
    """One first-improvement hill step: `cands` (a point's neighbours) in a seeded random order, the first
    that `improves` accepts (it measures the candidate and says whether it beats the current point beyond
    the noise); None at a local optimum, or when `stop()` before a candidate. With `ahead` and a `width`
    over 1 (an engine measuring several at once), the next `width - 1` candidates in that order are handed
    to `ahead` before each one is tried: measured ahead, taken in turn."""
    order = rng.permutation(len(cands))
    for j, i in enumerate(order):
        if stop():
            return None
        if ahead is not None and width > 1:
            ahead([cands[k] for k in order[j + 1:j + width]])
        if improves(cands[i]):
            return cands[i]
    return None


def kicked(ev: Evaluator, point: dict[str, Recipe], allowed: dict[str, list[str]], rng: np.random.Generator,
           steps: int) -> dict[str, Recipe]:
    """`point` moved by `steps` random neighbour steps: where a climb restarts from a local optimum."""
    for _ in range(steps):
        cands = neighbours(ev, point, allowed)
        point = cands[int(rng.integers(len(cands)))]
    return point


def hill_climb(ev: Evaluator, rng: np.random.Generator, start: Schedule | None = None) -> None:
    points = starts(ev)
    if not points[0]:
        return
    allowed = {op_id: kinds(ev, op_id) for op_id in points[0]}
    point, value = None, None
    first = [recipes_of(ev, start, points[0])] if start is not None else starts(ev, allowed)
    if ev.width > 1:
        ev.prefetch([schedule_from(ev, p) for p in first])
    for p in first:
        v = ev.measure(schedule_from(ev, p))
        if point is None or ev.better(v, value):
            point, value = p, v
    best_point, best_value = point, value

    def improves(cand: dict[str, Recipe]) -> bool:
        nonlocal value
        v = ev.measure(schedule_from(ev, cand))
        if ev.better(v, value):  # a move within the noise is no improvement
            value = v
            return True
        return False

    def ahead(cands: list[dict[str, Recipe]]) -> None:
        ev.prefetch([schedule_from(ev, c) for c in cands])

    for _ in range(MAX_RESTARTS):
        while (taken := hill_step(neighbours(ev, point, allowed), rng, improves, ahead=ahead,
                                  width=ev.width)) is not None:
            point = taken
        if ev.better(value, best_value):
            best_point, best_value = point, value
        # local optimum: restart from the best point moved by two random steps
        point = kicked(ev, best_point, allowed, rng, 2)
        value = ev.measure(schedule_from(ev, point))
