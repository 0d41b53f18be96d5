"""Imitation data: search for good schedules, keep the best one per program as a trace.

Uses `engine.search.search(engine, program, "hill", budget)` when the engine has it; otherwise a
small hill climber over whole schedules built from the mask (`hill_climb` below): each op gets a
random "outer tiling (TP or TF) -> inner tiling -> V" pattern, and a step re-draws or nudges one
op's actions; a neighbour replaces the current schedule when it measures faster.
"""

from __future__ import annotations

import math
import random

from engine import Engine, Program, Schedule, Session, to_text
from engine.errors import ScheduleError
from engine.schedule import Action
from engine.trace import TraceWriter, make_record


def _sizes(sess: Session, kind: str, rnd: random.Random, small: bool) -> tuple[int, ...] | None:
    st = sess.current
    mask = sess.mask()
    if not mask.transformation[kind].allowed:
        return None
    out = []
    for pos in range(st.n_loops):
        ok = [s for s, c in zip(mask.tile_sizes, mask.tile[kind][pos]) if c.allowed]
        nz = [s for s in ok if s]
        if not nz or rnd.random() < 0.15:
            out.append(0)
        elif small:
            out.append(rnd.choice([s for s in nz if s <= 32] or nz[:1]))
        else:
            out.append(rnd.choice([s for s in nz if s >= 4] or nz))
    return tuple(out) if any(out) else None


def random_op_actions(sess: Session, rnd: random.Random) -> list[Action]:
    """A legal action list ending the current op: [TP|TF|T](outer) [T(inner)] [V|NT]."""
    for _ in range(30):
        s, acts = sess, []
        try:
            outer = rnd.choice(["TP", "TF", "TF", "T", None])
            if outer and (p := _sizes(s, outer, rnd, small=False)):
                a = Action(outer, p)
                s, acts = s.apply(a), acts + [a]
            if rnd.random() < 0.8 and (p := _sizes(s, "T", rnd, small=True)):
                a = Action("T", p)
                s, acts = s.apply(a), acts + [a]
            m = s.mask()
            if m.transformation["V"].allowed and rnd.random() < 0.95:
                return acts + [Action("V")]
            if rnd.random() < 0.5:
                continue  # try again for a vectorizable pattern
            return acts + [Action("NT")]
        except ScheduleError:
            continue
    return [Action("NT")]


def build(program: Program, per_op: dict[str, list[Action]], rnd: random.Random, redraw: str | None = None
          ) -> tuple[Schedule, dict[str, list[Action]]]:
    """Replay per-op action lists in traversal order; re-draw the ones that are no longer legal."""
    sess = Session(program)
    out: dict[str, list[Action]] = {}
    while not sess.done:
        op = sess.current.op.id
        acts = per_op.get(op)
        if acts is None or op == redraw:
            acts = random_op_actions(sess, rnd)
        try:
            s = sess
            for a in acts:
                s = s.apply(a)
        except ScheduleError:
            acts = random_op_actions(sess, rnd)
            s = sess
            for a in acts:
                s = s.apply(a)
        out[op] = acts
        sess = s
    return sess.schedule, out


def _nudge(acts: list[Action], rnd: random.Random) -> list[Action]:
    tiled = [i for i, a in enumerate(acts) if a.kind in ("T", "TP", "TF")]
    if not tiled:
        return acts
    i = rnd.choice(tiled)
    a = acts[i]
    p = list(a.params)
    j = rnd.randrange(len(p))
    p[j] = max(0, p[j] * 2 if rnd.random() < 0.5 else p[j] // 2)
    if p[j] > 64:  # stay inside the policy's tile-size candidates (Limits.tile_sizes)
        return acts
    return acts[:i] + [Action(a.kind, tuple(p))] + acts[i + 1:]


def hill_climb(engine: Engine, program: Program, budget: int = 30, seed: int = 0):
    """Best (schedule, measurement) within `budget` measurements (the baseline counts as the start)."""
    rnd = random.Random(seed)
    base = engine.baseline(program)
    best_s, best_m, best_ops = Schedule({}), base, {op.id: [Action("NT")] for op in program.ops}
    best_v = 0.0 if base.ok else -math.inf
    seen = {""}
    for _ in range(budget * 3):
        if len(seen) > budget:
            break
        if best_v == 0.0 or rnd.random() < 0.3:
            sched, ops = build(program, {} if rnd.random() < 0.3 else best_ops, rnd,
                               redraw=rnd.choice([o.id for o in program.ops]))
        else:
            op = rnd.choice([o.id for o in program.ops])
            cand = dict(best_ops)
            cand[op] = _nudge(cand[op], rnd)
            sched, ops = build(program, cand, rnd)
        text = to_text(sched)
        if text in seen:
            continue
        seen.add(text)
        m = engine.measure(program, sched)
        v = m.log_speedup(-math.inf)
        if v > best_v:
            best_s, best_m, best_ops, best_v = sched, m, ops, v
    return best_s, best_m


def search_best(engine: Engine, program: Program, budget: int, seed: int = 0):
    """The engine's hill climbing if present, else `hill_climb`; returns (Schedule, Measurement)."""
    try:
        from engine.search import search
    except ImportError:
        return hill_climb(engine, program, budget, seed)
    res = search(engine, program, "hill", budget, seed=seed)
    sched = res.schedule
    if isinstance(sched, str):
        from engine import parse

        sched = parse(sched)
    return sched, res.best


def write_trace(path: str, program: Program, schedule: Schedule, measurement) -> None:
    """The schedule as a search trace (one record per action; the measurement on the last one)."""
    sess = Session(program)
    step = 0
    with TraceWriter(path) as w:
        for op in program.ops:
            acts = list(schedule.actions(op.id))
            if not acts or not acts[-1].terminal:
                acts.append(Action("NT"))
            for i, a in enumerate(acts):
                if sess.current is None or sess.current.op.id != op.id:
                    break
                last = op is program.ops[-1] and i == len(acts) - 1
                mjson = measurement.to_json() if (last and measurement is not None) else None
                w.append(make_record(program.path, program.sha256, op.id, step, a, sess.observation(),
                                     [], "search", mjson))
                sess = sess.apply(a)
                step += 1


# ----------------------------------------------------------------------------------------------
# Imitation targets: what of a search result is worth imitating
def replay(program: Program, per_op: dict[str, list[Action]], openmp: bool = True) -> Schedule:
    """The schedule of per-op action lists replayed in traversal order; an op without actions (or whose
    actions stopped being legal, e.g. after its consumer no longer fuses it) ends with NT there."""
    sess = Session(program, openmp=openmp)
    while not sess.done:
        op = sess.current.op.id
        for a in per_op.get(op, []):
            if sess.done or sess.current.op.id != op:
                break
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
    - otherwise each op, in traversal order, is set to NT when the whole schedule then still measures
      within `tolerance` of the search's best: only the ops whose actions help keep them. (For chains of
      memory-bound ops, most tiling/vectorization choices do not matter, and imitating them teaches the
      policy to transform ops for nothing.)
    """
    best = (measurement.speedup or 0.0) if measurement is not None and measurement.ok else 0.0
    if best < keep_baseline:
        return Schedule({}), 1.0, 0, f"best {best:.2f}x < {keep_baseline}x: keep the baseline"
    per_op = {k: list(v) for k, v in schedule.ops.items()}
    cur_text, cur_sp, made, dropped = to_text(schedule), best, 0, []
    for op in program.ops:
        acts = per_op.get(op.id, [])
        if not acts or [a.kind for a in acts] == ["NT"]:
            continue
        cand_ops = {**per_op, op.id: [Action("NT")]}
        cand = replay(program, cand_ops, engine.openmp)
        text = to_text(cand)
        if text == cur_text:
            continue
        m = engine.measure(program, cand)
        made += 0 if m.cached else 1
        if m.ok and (m.speedup or 0.0) * tolerance >= best:
            per_op, cur_text, cur_sp = cand_ops, text, m.speedup or 0.0
            dropped.append(op.id)
    final = replay(program, per_op, engine.openmp)
    why = f"best {best:.2f}x; NT on {', '.join(dropped)} ({cur_sp:.2f}x)" if dropped else f"best {best:.2f}x kept"
    return final, cur_sp, made, why
