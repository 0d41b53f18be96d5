"""Imitation targets: what of a search result is worth imitating (`mlir-rl-tui train --recipe default --teacher hill`, agent/recipes.py).

The search itself is `engine.search` (hill climbing and the others); its results go to traces through
`engine.trace.write_schedule`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from mlir_rl_tui.engine import Engine, Program, Schedule, Session, to_text
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.schedule import TILED, Action, parse


def to_candidates(sess: Session, a: Action) -> Action:
    """`a` with each tile size the policy cannot choose (the search's sizes are any divisor, e.g. 384) made
    one it can: a size at least the loop's extent (one tile: the loop as it is) becomes 0, any other the
    largest candidate below it."""
    if a.kind not in TILED or all(x in sess.limits.tile_sizes for x in a.params):
        return a
    st = sess.current
    out = []
    for pos, x in enumerate(a.params):
        if x in sess.limits.tile_sizes:
            out.append(x)
        elif pos < st.n_loops and x >= st.extents[st.loop_at(pos)]:
            out.append(0)
        else:
            out.append(max(c for c in sess.limits.tile_sizes if c <= x))
    return Action(a.kind, tuple(out))


def legal_schedule(program: Program, per_op: dict[str, list[Action]], openmp: bool = True,
                   fit: Callable[[Session, Action], Action] | None = None) -> Schedule:
    """The schedule of per-op action lists applied in traversal order, each op's legal prefix kept; an op
    without actions (or whose actions stopped being legal, e.g. after its consumer no longer fuses it) ends
    with NT there. `fit` rewrites each action in the state it applies to (e.g. `to_candidates`)."""
    sess = Session(program, openmp=openmp)
    while not sess.done:
        op = sess.current.op.id
        for a in per_op.get(op, []):
            if sess.done or sess.current.op.id != op:
                break
            a = fit(sess, a) if fit is not None else a
            try:
                sess = sess.apply(a)
            except ScheduleError:
                break
        if not sess.done and sess.current.op.id == op:
            sess = sess.apply(Action("NT"))
    return sess.schedule


def imitation_target(engine: Engine, program: Program, schedule: Schedule, measurement,
                     keep_baseline: float = 1.1, tolerance: float = 1.05, log=None):
    """The schedule to imitate from a search result: (Schedule, speedup, measurements made, why).

    - the search's best is not clearly better than the baseline (< keep_baseline, or it failed):
      NT on every op (the untransformed program);
    - otherwise, with tolerance <= 0, the search's schedule as it is;
    - otherwise each op, in traversal order, is set to NT when the whole schedule then still measures
      within `tolerance` of the search's best: only the ops whose actions help keep them. (For chains of
      memory-bound ops, most tiling/vectorization choices do not matter, and imitating them teaches the
      policy to transform ops for nothing.)
    """
    best = (measurement.speedup or 0.0) if measurement is not None and measurement.ok else 0.0
    if best < keep_baseline:
        return Schedule({}), 1.0, 0, f"best {best:.2f}x < {keep_baseline}x: keep the baseline"
    per_op = {k: list(v) for k, v in schedule.ops.items()}
    if tolerance <= 0:
        return legal_schedule(program, per_op, engine.openmp), best, 0, f"best {best:.2f}x kept"
    cur_text, cur_sp, made, dropped = to_text(schedule), best, 0, []
    for op in program.ops:
        acts = per_op.get(op.id, [])
        if not acts or [a.kind for a in acts] == ["NT"]:
            continue
        cand_ops = {**per_op, op.id: [Action("NT")]}
        cand = legal_schedule(program, cand_ops, engine.openmp)
        text = to_text(cand)
        if text == cur_text:
            continue
        m = engine.measure(program, cand)
        made += 0 if m.cached else 1
        if m.ok and (m.speedup or 0.0) * tolerance >= best:
            per_op, cur_text, cur_sp = cand_ops, text, m.speedup or 0.0
            dropped.append(op.id)
    final = legal_schedule(program, per_op, engine.openmp)
    why = f"best {best:.2f}x; NT on {', '.join(dropped)} ({cur_sp:.2f}x)" if dropped else f"best {best:.2f}x kept"
    return final, cur_sp, made, why


def demonstrations(engine: Engine, program: Program, best: Schedule, best_speedup: float, k: int = 1,
                   ratio: float = 0.9, temperature: float = 0.05) -> list[tuple[Schedule, float, float]]:
    """The search's best schedule and up to k-1 runners-up to imitate, as (schedule, speedup, weight).

    A search's single best is one draw among schedules whose timings overlap (two measurements of one
    schedule differ by 5-10%), and near-equal ops of other programs get other draws: imitated alone, the
    targets contradict each other. The runners-up are the other schedules of this program in the
    measurement cache (the search's own measurements) within `ratio` of the best, fastest first, each
    weighted exp(log(speedup / best) / temperature) in the cloning loss, advantage-weighted as in AWR
    (Peng et al. 2019): the best weighs 1, one 5% slower exp(-1) at the default temperature. k = 1: the
    best alone (plain behaviour cloning)."""
    out = [(best, best_speedup, 1.0)]
    if k <= 1 or engine.cache is None or best_speedup <= 0:
        return out
    seen = {to_text(best)}
    rows = []
    for _sha, text, _mach, rec in engine.cache.entries(engine.machine, {program.sha256}):
        sp = rec.get("speedup")
        if rec.get("status") == "ok" and isinstance(sp, int | float) and ratio * best_speedup <= sp \
                and text not in seen:
            rows.append((float(sp), text))
    for sp, text in sorted(rows, reverse=True):
        if len(out) >= k:
            break
        try:
            sched = parse(text)
        except ScheduleError:
            continue
        seen.add(text)
        sp = min(sp, best_speedup)  # the search's best is the fastest it kept; a faster row is its noise twin
        out.append((sched, sp, math.exp(math.log(sp / best_speedup) / temperature)))
    return out


def confirmed(engine: Engine, program: Program, schedules: list[Schedule],
              rounds: int = 3) -> list[tuple[Schedule, float, list[float]]]:
    """The schedules measured again, fresh (not from the cache), interleaved A B C ... for `rounds` rounds,
    each run the paired speedup over the untransformed program at that moment: (schedule, median, the
    runs), fastest median first.

    A search's best as found is the fastest of its noisy measurements (the winner's curse): one measured
    1.3x in the teacher's run and 0.8x when timed again, and a parallel schedule can measure at one level in
    one sitting and at another in the next (docs/agent-training.md). Timed side by side, its runners-up
    are compared at the same moment, so the choice is not a draw of the machine's state."""
    runs: dict[str, list[float]] = {to_text(s): [] for s in schedules}
    by_text = {to_text(s): s for s in schedules}
    for _ in range(rounds):
        for text, sched in by_text.items():
            m = engine.measure(program, sched, use_cache=False)
            runs[text].append((m.speedup or 0.0) if m.ok else 0.0)
    out = [(by_text[t], statistics.median(xs), xs) for t, xs in runs.items()]
    return sorted(out, key=lambda x: -x[1])
