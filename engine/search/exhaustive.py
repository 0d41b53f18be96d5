"""The 2024 paper's baseline auto-scheduler: exhaustive search over a restricted space (Sec. 5.1.4).

Per tuned op: one tiling (TP, then T) with sizes from {32, 16, 64, 8, 0} (at most 64, at least two
tiled loops), then V when allowed, else NT. Ops are searched one after the other in traversal order
(earlier ops keep their best configuration), each with an equal share of the budget; the space is
enumerated in a fixed order, so a budget smaller than the space sees its first candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

import numpy as np

from mlir_rl_tui.engine.schedule.notation import Action, Schedule
from mlir_rl_tui.engine.schedule.state import action_mask
from mlir_rl_tui.engine.search.base import Evaluator, finish_op, try_apply, tunable
from mlir_rl_tui.engine.session import Session

SIZES = (32, 16, 64, 8, 0)


def space(sess: Session, op_id: str) -> Iterator[tuple[Action, ...]]:
    """Configurations of one op, legal at the op's initial state."""
    st = sess.states[op_id]
    m = action_mask(st, sess.program, sess.limits, sess.openmp)
    ts = sess.limits.tile_sizes
    kinds = [k for k in ("TP", "T") if m.transformation[k].allowed]
    need = min(2, st.n_loops)
    per_loop = [[s for s in SIZES if s in ts and m.tile["T"][pos][ts.index(s)].allowed] for pos in range(st.n_loops)]
    seen = set()
    for sizes in product(*per_loop):
        if sum(1 for s in sizes if s) < need:
            continue
        for k in kinds:
            cfg = tuple(0 if k != "T" and not m.tile[k][p][ts.index(s)].allowed else s for p, s in enumerate(sizes))
            if sum(1 for s in cfg if s) < need or (k, cfg) in seen:
                continue
            seen.add((k, cfg))
            yield (Action(k, cfg),)


def schedule_from(ev: Evaluator, chosen: dict[str, tuple[Action, ...]]) -> Schedule | None:
    sess = ev.session()
    while not sess.done:
        for a in chosen.get(sess.current.op.id, ()):
            nxt = try_apply(sess, a)
            if nxt is None:
                return None
            sess = nxt
        sess = finish_op(sess)
    return sess.schedule


def exhaustive(ev: Evaluator, rng: np.random.Generator) -> None:
    sess = ev.session()
    ops = [o.id for o in ev.program.ops if tunable(sess.states[o.id])]
    chosen: dict[str, tuple[Action, ...]] = {}
    for i, op_id in enumerate(ops):
        share = (ev.budget - ev.spent) // (len(ops) - i)
        stop_at = ev.spent + max(1, share)
        best_cfg, best_v = (), ev.measure(schedule_from(ev, chosen))
        for cfg in space(sess, op_id):
            if ev.spent >= stop_at:
                break
            sched = schedule_from(ev, {**chosen, op_id: cfg})
            if sched is not None:
                v = ev.measure(sched)
                if ev.better(v, best_v):
                    best_cfg, best_v = cfg, v
        chosen[op_id] = best_cfg
