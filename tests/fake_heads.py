"""A policy's output without a network: masked log-probabilities per head, set by hand, for tests of
agent.explain and snapshots of the suggestion panel (the numbers stay fixed whatever checkpoint ships)."""

from __future__ import annotations

import math

import numpy as np

from mlir_rl_tui.engine.config import TRANSFORMATIONS
from mlir_rl_tui.engine.rl.actions import head_masks
from mlir_rl_tui.engine.schedule.notation import TILED

TINY = -30.0  # logit of an allowed choice the test does not name


def _log_softmax(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    x = np.where(mask, x, -1e8)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def fake_heads(session, kinds: dict[str, float], sizes: dict[str, list[dict[int, float]]] | None = None,
               pointers: dict[int, float] | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(logp, masks) of the session's state: `kinds` p(transformation), `sizes[kind][pos]` {tile size: p}
    per loop row, `pointers` {loop: p}; choices not named get a negligible probability."""
    masks = head_masks(session.mask(), session.limits)
    tiles = session.limits.tile_sizes
    t = np.array([math.log(kinds[k]) if kinds.get(k) else TINY for k in TRANSFORMATIONS])
    logp = {"transformation": _log_softmax(t, masks["transformation"])}
    for k in TILED:
        rows = np.full(masks[k].shape, TINY)
        for pos, row in enumerate((sizes or {}).get(k, [])):
            for s, p in row.items():
                rows[pos, tiles.index(s)] = math.log(p)
        logp[k] = _log_softmax(rows, masks[k])
    i = np.full(masks["I"].shape, TINY)
    for loop, p in (pointers or {}).items():
        i[loop] = math.log(p)
    logp["I"] = _log_softmax(i, masks["I"])
    return logp, masks


class FakeCostModel:
    """A fixed function of the schedule (`speedup`), so a test can tell which schedule each prediction is for;
    records the schedules it was asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    @staticmethod
    def speedup(schedule) -> tuple[float, float, float]:
        """(speedup, low, high): the interval widens with the number of actions."""
        acts = [a for acts in schedule.ops.values() for a in acts]
        sp = 1.0 + (3 * len(acts) + sum(sum(a.params) for a in acts)) / 100
        return sp, sp / (1 + 0.1 * len(acts)), sp * (1 + 0.1 * len(acts))

    def predict_interval(self, program, schedules) -> list[tuple[float, float, float]]:
        self.asked += [str(s) for s in schedules]
        return [self.speedup(s) for s in schedules]
