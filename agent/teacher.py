"""The imitation teacher: a measured search over per-op *recipes* (outer tiling, register tiling, V or NT).

Hill climbing (`engine.search`, the baseline the policy is compared with) wanders one tile size at a time
from T(32,...,32) V and returns whatever point it stopped at: a different-looking schedule for every
program, which is hard to imitate from a few hundred programs. This teacher searches a small family of
schedules that a compiler engineer would write, so that its answers are both fast and regular:

    [TP|T|TF](outer: s on parallel loops, r on reduction loops)  [T(register tile)]  V | NT

where the register tile is w on the innermost parallel loop (the vector lanes), h on the next parallel loop
out, 1 on every other loop (reductions become scalar loops around an outer-product update). Sizes are
clamped to what the action mask allows (`engine.search.base.fit_sizes`).

Ops are tuned one at a time (coordinate descent), the op with the most arithmetic first, every other op
keeping its current recipe (NT at the start, so an op that does not gain keeps the baseline): first a fixed
list of recipes (`starts`), then one-parameter moves around the best (`moves`) while budget remains. A
candidate replaces the current best only when it is faster by `min_gain` (3%), so timing noise does not
turn NT into arbitrary transformations on memory-bound ops. The budget counts measurements as in
`engine.search` (cache hits from earlier runs count too, repeats inside the search do not).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlir_rl_tui.engine import Engine, Program
from mlir_rl_tui.engine.mask import transformation_reasons
from mlir_rl_tui.engine.schedule import Action, Schedule
from mlir_rl_tui.engine.search.base import BudgetExhausted, Evaluator, SearchResult, fit_sizes, try_apply, tunable
from mlir_rl_tui.engine.session import Session

OUTER = (8, 16, 32, 64)
LANES = (8, 16, 32, 64)
ROWS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Recipe:
    """One op's schedule pattern. kind None: no outer tiling; h == w == 0: no register tiling."""

    kind: str | None = None
    s: int = 32  # outer tile of parallel loops
    r: int = 0  # outer tile of reduction loops (0: not tiled)
    h: int = 0  # register tile, next-to-innermost parallel loop
    w: int = 0  # register tile, innermost parallel loop
    vec: bool = False

    def text(self) -> str:
        parts = []
        if self.kind:
            parts.append(f"{self.kind}(s={self.s},r={self.r})")
        if self.w:
            parts.append(f"reg({self.h}x{self.w})")
        parts.append("V" if self.vec else "NT")
        return " ".join(parts)


NT = Recipe()


def op_actions(sess: Session, rec: Recipe) -> Session:
    """Apply one op's recipe (clamped to the mask) and finish the op; V falls back to NT when masked."""
    st = sess.current
    loops = st.op.loops
    par = [pos for pos in range(st.n_loops) if loops[st.loop_at(pos)].iterator == "parallel"]
    if rec.kind is not None:
        wanted = [rec.s if pos in par else rec.r for pos in range(st.n_loops)]
        sizes = fit_sizes(sess, rec.kind, wanted)
        if sizes is not None:
            sess = try_apply(sess, Action(rec.kind, sizes)) or sess
    if rec.w and not sess.done and sess.current.op.id == st.op.id:
        wanted = [1] * st.n_loops
        if par:
            wanted[par[-1]] = rec.w
        if len(par) > 1:
            wanted[par[-2]] = rec.h
        sizes = fit_sizes(sess, "T", wanted)
        if sizes is not None:
            sess = try_apply(sess, Action("T", sizes)) or sess
    if sess.done or sess.current.op.id != st.op.id:
        return sess
    m = sess.mask()
    end = "V" if rec.vec and m.transformation["V"].allowed else "NT"
    return sess.apply(Action(end))


def schedule_from(ev: Evaluator, recipes: dict[str, Recipe]) -> Schedule:
    sess = ev.session()
    while not sess.done:
        sess = op_actions(sess, recipes.get(sess.current.op.id, NT))
    return sess.schedule


def starts(kinds: list[str], major: bool) -> list[Recipe]:
    """Recipes tried first on an op, most promising first. Minor ops (little arithmetic) get a short list."""
    par = "TP" if "TP" in kinds else "T"
    out = [
        Recipe(par, 32, 0, 8, 32, True),
        Recipe("T", 32, 0, 8, 32, True),
        Recipe(par, 32, 0, 0, 0, False),
        Recipe(None, vec=True),
    ]
    if major:
        out += [
            Recipe(par, 64, 0, 8, 32, True),
            Recipe(par, 16, 0, 4, 16, True),
            Recipe("T", 32, 32, 0, 0, False),
            Recipe(par, 32, 32, 8, 32, True),
            Recipe(par, 32, 0, 1, 32, True),
        ]
        if "TF" in kinds:
            out += [Recipe("TF", 32, 0, 8, 32, True), Recipe("TF", 64, 0, 8, 32, True)]
    return out


def _step(values: tuple[int, ...], v: int, d: int) -> int | None:
    i = values.index(v) + d if v in values else None
    return values[i] if i is not None and 0 <= i < len(values) else None


def moves(rec: Recipe, kinds: list[str]) -> list[Recipe]:
    """One-parameter neighbours of a recipe."""
    out = []
    for k in [None, *kinds]:
        if k != rec.kind:
            out.append(replace(rec, kind=k))
    if rec.kind is not None:
        for d in (-1, 1):
            if (x := _step(OUTER, rec.s, d)) is not None:
                out.append(replace(rec, s=x))
            if (x := _step((0, *OUTER), rec.r, d)) is not None:
                out.append(replace(rec, r=x))
    if rec.w:
        for d in (-1, 1):
            if (x := _step(LANES, rec.w, d)) is not None:
                out.append(replace(rec, w=x))
            if (x := _step(ROWS, rec.h, d)) is not None:
                out.append(replace(rec, h=x))
        out.append(replace(rec, h=0, w=0))
    else:
        out.append(replace(rec, h=8, w=32))
    out.append(replace(rec, vec=not rec.vec))
    return out


def recipe_search(engine: Engine, program: Program, budget: int = 40, min_gain: float = 1.03,
                  major_share: float = 0.05, log=None
                  ) -> tuple[Schedule, float, dict[str, Recipe], SearchResult]:
    """(schedule, its speedup, each op's recipe, the search's bookkeeping) within `budget` measurements.

    The schedule is the accepted point (every accepted move beat the previous one by `min_gain`), not
    necessarily the fastest measurement seen (`SearchResult.best`), which may be noise."""
    ev = Evaluator(engine, program, budget, "recipe")
    sess = ev.session()
    states = [st for st in sess.states.values() if tunable(st)]
    total = sum(st.op.flops for st in states) or 1
    order = sorted(states, key=lambda st: -st.op.flops)
    kinds = {st.op.id: [k for k in ("T", "TP", "TF")
                        if transformation_reasons(st, program, engine.limits, ev.openmp)[k].allowed]
             for st in states}
    point: dict[str, Recipe] = {}
    value = 1.0  # the baseline (every op NT)

    def consider(op_id: str, rec: Recipe) -> bool:
        nonlocal point, value
        cand = {**point, op_id: rec}
        v = ev.speedup(schedule_from(ev, cand))
        if v > value * min_gain:
            point, value = cand, v
            return True
        return False

    try:
        for st in order:
            major = st.op.flops >= major_share * total
            for rec in starts(kinds[st.op.id], major):
                consider(st.op.id, rec)
        # refine the ops that got a recipe, heaviest first, first improvement, until no move helps
        improved = True
        while improved:
            improved = False
            for st in order:
                rec = point.get(st.op.id)
                if rec is None:
                    continue
                for cand in moves(rec, kinds[st.op.id]):
                    if consider(st.op.id, cand):
                        improved = True
                        break
    except BudgetExhausted:
        pass
    if log:
        log(f"{program.path}: {value:.2f}x with " + "; ".join(f"{k}: {r.text()}" for k, r in point.items()))
    return schedule_from(ev, point), value, point, ev.result

