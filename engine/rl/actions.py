"""The multi-discrete action vector (paper Sec. IV-A.1) and its mask.

Vector layout: `[transformation, size_0, ..., size_{N-1}, loop]` with
- transformation: index into engine.config.TRANSFORMATIONS (T, TP, TF, I, V, NT);
- size_i: index into Limits.tile_sizes for loop position i (used by T, TP, TF; others ignore it);
- loop: level pointer - the loop placed at the next interchange position (used by I); with
  `interchange="enumerated"`, an index into `enumerated_candidates` (a whole swap in one step).

Sub-action masks do not depend on each other except through the transformation, so `flat_mask`
allows a tile size when any tiled transformation allows it; for TP and TF the env then treats a
reduction loop's size as 0 (not tiled), which keeps every masked sample legal. The per-head masks
(`head_masks`) keep T, TP and TF apart for agents with one head per tiled transformation (paper Sec. V).
"""

from __future__ import annotations

import numpy as np

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, TRANSFORMATIONS, Limits
from mlir_rl_tui.engine.schedule.notation import TILED, Action
from mlir_rl_tui.engine.schedule.state import ActionMask
from mlir_rl_tui.engine.session import Session


def nvec(limits: Limits = DEFAULT_LIMITS) -> list[int]:
    return [len(TRANSFORMATIONS)] + [limits.n_tile_sizes] * limits.n_loops + [limits.n_loops]


def head_masks(mask: ActionMask | None, limits: Limits = DEFAULT_LIMITS) -> dict[str, np.ndarray]:
    """Boolean masks per head: transformation (6), T/TP/TF (N x M), interchange (N). `mask` None: the
    episode is over, only NT is allowed."""
    if mask is None:
        t = np.array([k == "NT" for k in TRANSFORMATIONS], bool)
        out = {"transformation": t}
        out.update({k: np.zeros((limits.n_loops, limits.n_tile_sizes), bool) for k in TILED})
        out["I"] = np.zeros(limits.n_loops, bool)
        return out
    out = {"transformation": np.array([mask.transformation[k].allowed for k in TRANSFORMATIONS], bool)}
    for k in TILED:
        out[k] = np.array([[c.allowed for c in row] for row in mask.tile[k]], bool)
    out["I"] = np.array([c.allowed for c in mask.interchange], bool)
    return out


def flat_mask(mask: ActionMask | None, limits: Limits = DEFAULT_LIMITS) -> tuple[np.ndarray, ...]:
    """Per-dimension int8 masks in the form `MultiDiscrete.sample(mask=...)` accepts: the union of the
    allowed tiled kinds' size masks; a dimension with nothing allowed (ignored by the chosen
    transformation) allows its "no-op" index 0, so every dimension can be sampled."""
    h = head_masks(mask, limits)
    t = h["transformation"]
    tiled = [k for k in TILED if t[TRANSFORMATIONS.index(k)]] or ["T"]
    union = np.zeros((limits.n_loops, limits.n_tile_sizes), bool)
    for k in tiled:
        union |= h[k]
    union[:, 0] |= ~union.any(axis=1)
    inter = h["I"].copy()
    inter[0] |= not inter.any()
    return (t.astype(np.int8), *[row.astype(np.int8) for row in union], inter.astype(np.int8))


def enumerated_candidates(n: int) -> list[tuple[int, int]]:
    """The 3N-6 interchange candidates: swaps of loops 1, 2 and 3 levels apart (paper Sec. IV-A.1)."""
    return [(i, i + d) for d in (1, 2, 3) for i in range(n - d)]


def to_action(session: Session, vec, interchange: str = "pointers") -> tuple[str, Action | int]:
    """Decode a vector: ("action", Action) or ("point", loop) for a level-pointer sub-step. The one decoder
    of action vectors (env, PPO rollouts, suggestions); `interchange` is the policy's formulation."""
    limits = session.limits
    kind = TRANSFORMATIONS[int(vec[0])]
    st = session.current
    if kind == "I":
        if interchange == "pointers":
            return "point", int(vec[1 + limits.n_loops])
        assert st is not None
        i, j = enumerated_candidates(limits.n_loops)[int(vec[1 + limits.n_loops])]
        perm = list(range(st.n_loops))
        perm[i], perm[j] = perm[j], perm[i]
        return "action", Action("I", tuple(perm))
    if kind in TILED:
        assert st is not None
        sizes = []
        for pos in range(st.n_loops):
            s = limits.tile_sizes[int(vec[1 + pos])] if pos < limits.n_loops else 0
            if kind in ("TP", "TF") and st.op.loops[st.loop_at(pos)].iterator == "reduction":
                s = 0
            sizes.append(s)
        return "action", Action(kind, tuple(sizes))
    return "action", Action(kind)


def apply_vector(session: Session, vec, interchange: str = "pointers") -> Session:
    """Apply a multi-discrete action to the session (ScheduleError if masked)."""
    what, a = to_action(session, vec, interchange)
    if what == "point":
        return session.point(int(a))  # type: ignore[arg-type]
    return session.apply(a)  # type: ignore[arg-type]


def to_vectors(session: Session, action: Action) -> list[np.ndarray] | None:
    """The vector(s) that produce `action` now (N level-pointer steps for I); None if not encodable."""
    limits = session.limits
    base = np.zeros(len(nvec(limits)), np.int64)
    base[0] = TRANSFORMATIONS.index(action.kind)
    if action.kind in TILED:
        for pos, s in enumerate(action.params[: limits.n_loops]):
            if s not in limits.tile_sizes:
                return None
            base[1 + pos] = limits.tile_sizes.index(s)
        return [base]
    if action.kind == "I":
        out = []
        for loop in action.params:
            v = base.copy()
            v[1 + limits.n_loops] = loop
            out.append(v)
        return out
    return [base]
