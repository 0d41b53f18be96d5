"""Random search (PolyGym-style: uniform over the legal-by-construction space of the mask)."""

from __future__ import annotations

import numpy as np

from mlir_rl_tui.engine.schedule.notation import TILED, Action
from mlir_rl_tui.engine.search.base import Evaluator, skip_untunable
from mlir_rl_tui.engine.session import Session

MAX_DRAWS_PER_BUDGET = 50  # ends a search whose draws keep repeating (a tiny space)


def random_action(sess: Session, rng: np.random.Generator) -> Action:
    """A uniformly random allowed transformation, then uniformly random allowed parameters."""
    m, st = sess.mask(), sess.current
    assert m is not None and st is not None
    kind = str(rng.choice(m.allowed_kinds()))
    if kind in TILED:
        sizes = []
        for pos in range(st.n_loops):
            ok = [s for s, c in zip(sess.limits.tile_sizes, m.tile[kind][pos]) if c.allowed]
            sizes.append(int(rng.choice(ok)))
        return Action(kind, tuple(sizes))
    if kind == "I":
        return Action("I", tuple(int(x) for x in rng.permutation(st.n_loops)))
    return Action(kind)


def random_schedule(sess: Session, rng: np.random.Generator) -> Session:
    sess = skip_untunable(sess)
    while not sess.done:
        sess = skip_untunable(sess.apply(random_action(sess, rng)))
    return sess


def random_search(ev: Evaluator, rng: np.random.Generator) -> None:
    for _ in range(MAX_DRAWS_PER_BUDGET * ev.budget):
        ev.speedup(random_schedule(ev.session(), rng).schedule)
