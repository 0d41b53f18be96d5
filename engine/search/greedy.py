"""Greedy: measure every move from the current state (completed by default), keep the best, repeat.

When no move beats the current state the op is finished (V when allowed, else NT) and the next op
is tuned (PolyGym's greedy exploration over a legal-by-construction space).
"""

from __future__ import annotations

import numpy as np

from mlir_rl_tui.engine.search.base import Evaluator, complete, finish_op, moves, skip_untunable


def greedy(ev: Evaluator, rng: np.random.Generator) -> None:
    sess = skip_untunable(ev.session())
    value = ev.measure(complete(sess).schedule)
    while not sess.done:
        best, best_value = None, value
        for a in moves(sess):
            nxt = skip_untunable(sess.apply(a))
            v = ev.measure(complete(nxt).schedule)
            if ev.better(v, best_value):
                best, best_value = nxt, v
        if best is None:
            sess = skip_untunable(finish_op(sess))
        else:
            sess, value = best, best_value
