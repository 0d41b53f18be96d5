"""Fixed-size feature vector of one op (paper Sec. IV-B and Appendix A).

Layout, with N loops, M tile sizes, L arrays, D rank, tau schedule length (engine.config.Limits):

| block | size | content |
|---|---|---|
| op type | 6 | one-hot over matmul, conv_2d, pooling, add, generic, unknown |
| loop bounds | N | upper bound of each loop in the current loop order (0 = no loop) |
| iterator types | N | 1 = reduction, 0 = parallel or no loop |
| vectorizable | 1 | vectorization pre-condition holds now (ignoring the 512-element rule) |
| access matrices | L*D*N | per operand, its D x N coefficient matrix (rows: tensor dims, cols: loops) |
| op counts | 5 | +, -, *, /, exp in the body |
| history T, TP, TF | 3*tau*N*M | one-hot tile-size index per loop, per step t < tau |
| history I | tau*N*N | one-hot loop placed at each position, per step t < tau |

Bounds and counts are raw numbers: the agent scales them (log1p).
"""

from __future__ import annotations

import numpy as np

from mlir_rl_tui.engine.config import ARITH_KINDS, DEFAULT_LIMITS, OP_TYPES, Limits
from mlir_rl_tui.engine.schedule.state import OpState, vectorizable


def feature_size(limits: Limits = DEFAULT_LIMITS) -> int:
    n, m, t = limits.n_loops, limits.n_tile_sizes, limits.tau
    return (len(OP_TYPES) + 2 * n + 1 + limits.n_arrays * limits.max_rank * n + len(ARITH_KINDS)
            + 3 * t * n * m + t * n * n)


def blocks(limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, int]]:
    """(name, size) of each block, in order: for labelled views and tests."""
    n, m, t = limits.n_loops, limits.n_tile_sizes, limits.tau
    return [("op_type", len(OP_TYPES)), ("bounds", n), ("iterators", n), ("vectorizable", 1),
            ("access", limits.n_arrays * limits.max_rank * n), ("op_counts", len(ARITH_KINDS)),
            ("history_T", t * n * m), ("history_TP", t * n * m), ("history_TF", t * n * m),
            ("history_I", t * n * n)]


def split(vec: np.ndarray, limits: Limits = DEFAULT_LIMITS) -> dict[str, np.ndarray]:
    """A feature vector cut into its named blocks (`blocks`): the one decoder of the layout."""
    out, pos = {}, 0
    for name, size in blocks(limits):
        out[name] = vec[pos: pos + size]
        pos += size
    return out


def features(st: OpState | None, limits: Limits = DEFAULT_LIMITS, pending: list[int] | None = None) -> np.ndarray:
    """The op's vector; all zeros for `None` (no producer)."""
    out = np.zeros(feature_size(limits), np.float32)
    if st is None:
        return out
    n, m, t = limits.n_loops, limits.n_tile_sizes, limits.tau
    op = st.op
    pos = 0
    out[pos + OP_TYPES.index(op.op_type)] = 1
    pos += len(OP_TYPES)
    k = min(st.n_loops, n)
    for p in range(k):
        d = st.loop_at(p)
        out[pos + p] = op.loops[d].bound
        out[pos + n + p] = 1.0 if op.loops[d].iterator == "reduction" else 0.0
    pos += 2 * n
    out[pos] = 1.0 if vectorizable(st, limits) else 0.0
    pos += 1
    acc = np.zeros((limits.n_arrays, limits.max_rank, n), np.float32)
    for a, rows in enumerate(op.access[: limits.n_arrays]):
        for r, row in enumerate(rows[: limits.max_rank]):
            for p in range(k):
                acc[a, r, p] = row[st.loop_at(p)]
    out[pos: pos + acc.size] = acc.ravel()
    pos += acc.size
    for i, kind in enumerate(ARITH_KINDS):
        out[pos + i] = op.arith.get(kind, 0)
    pos += len(ARITH_KINDS)
    hist = {kind: np.zeros((t, n, m), np.float32) for kind in ("T", "TP", "TF")}
    inter = np.zeros((t, n, n), np.float32)
    step = 0
    for a in st.actions:
        if a.terminal or step >= t:
            continue
        if a.kind in hist:
            for p, s in enumerate(a.params[:n]):
                idx = limits.tile_sizes.index(s) if s in limits.tile_sizes else 0
                hist[a.kind][step, p, idx] = 1
        elif a.kind == "I":
            for p, loop in enumerate(a.params[:n]):
                if loop < n:
                    inter[step, p, loop] = 1
        step += 1
    if pending and step < t:  # level pointers: partial interchange so far (paper App. B)
        for p, loop in enumerate(pending[:n]):
            inter[step, p, loop] = 1
    for kind in ("T", "TP", "TF"):
        out[pos: pos + hist[kind].size] = hist[kind].ravel()
        pos += hist[kind].size
    out[pos: pos + inter.size] = inter.ravel()
    return out
