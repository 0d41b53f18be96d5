"""Random search (PolyGym-style: uniform over the legal-by-construction space of the mask)."""

from __future__ import annotations

from collections import deque

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
    """Seeded draws, measured in the order drawn. The draws do not depend on the figures, so on an engine
    that measures several at once (a Ray cluster) the next `width - 1` are drawn ahead and measured ahead:
    the same candidates in the same order as one by one."""
    drawn: deque = deque()
    for _ in range(MAX_DRAWS_PER_BUDGET * ev.budget):
        while len(drawn) < max(1, ev.width):
            drawn.append(random_schedule(ev.session(), rng).schedule)
        if len(drawn) > 1:
            ev.prefetch(list(drawn)[1:])
        ev.speedup(drawn.popleft())
