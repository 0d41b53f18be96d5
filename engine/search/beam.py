"""Beam search: expand every state of the beam by the common moves, keep the `width` best completions."""

from __future__ import annotations

import numpy as np

from mlir_rl_tui.engine.schedule.notation import to_text
from mlir_rl_tui.engine.search.base import Evaluator, complete, moves, skip_untunable

WIDTH = 3


def beam(ev: Evaluator, rng: np.random.Generator, width: int = WIDTH) -> None:
    root = skip_untunable(ev.session())
    states = [(ev.speedup(complete(root).schedule), root)]
    while not all(s.done for _, s in states):
        children, seen = [], set()
        for v, s in states:
            if s.done:
                children.append((v, s))
                seen.add(to_text(s.schedule))
                continue
            for a in moves(s):
                n = skip_untunable(s.apply(a))
                key = to_text(n.schedule)
                if key in seen:
                    continue
                seen.add(key)
                children.append((ev.speedup(complete(n).schedule), n))
        children.sort(key=lambda c: -c[0])  # stable: ties keep expansion order
        states = children[:width]
