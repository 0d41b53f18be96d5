"""The cost model's input: one compact vector per linalg op of a (program, schedule) pair.

Built from the engine's view of the op after the whole schedule (engine.schedule.state.walk: the same `OpState` the
policy's observation comes from) and from the paper's feature vector of that state (engine.rl.features): the
op-type one-hot, loop bounds and iterator types, the vectorization flag and the arithmetic counts are
taken as they are (bounds and counts log-scaled); the two large sparse blocks are summarized, since a few
thousand samples cannot fit 4,000 mostly-zero inputs:

- access matrices (L*D*N) -> per loop position, how many operands it indexes at all and how many it
  indexes in their last (contiguous) dimension: what interchange changes;
- action history (3*tau*N*M + tau*N*N) -> per loop position and tiled kind (T, TP, TF), 1 + log2 of the
  last tile size (0: not tiled), and whether the loops were interchanged.

The schedule's effect on the op is added from the state: log2 of each loop's extent in the innermost tile,
log2 of its number of tiles, the number of parallel tiles, the vector size, and flags (parallelized,
fused, fused into a consumer, tiled, vectorized). `work` (log of the op's arithmetic operations) and the
op's share of the program's work let the model weigh the ops (agent.costmodel).
"""

from __future__ import annotations

import math

import numpy as np

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.rl.features import features, split
from mlir_rl_tui.engine.schedule.notation import TILED, Schedule
from mlir_rl_tui.engine.schedule.state import OpState, vector_elements, walk

#: Names of the scalar features after the per-loop blocks (in order).
SCALARS = ("parallelized", "fused", "fused_into", "tiled", "interchanged", "vectorized", "log_vector",
           "log_parallel_tiles", "log_inner_volume", "log_work", "work_share", "n_loops")
PER_LOOP = ("bounds", "iterators", "operands", "contiguous", "extent", "tiles", "T", "TP", "TF")


def op_vector_size(limits: Limits = DEFAULT_LIMITS) -> int:
    from mlir_rl_tui.engine.config import ARITH_KINDS, OP_TYPES

    return len(OP_TYPES) + 1 + len(ARITH_KINDS) + len(PER_LOOP) * limits.n_loops + len(SCALARS)


def final_states(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS) -> dict[str, OpState]:
    """Each op's state after the schedule. Unchecked when the mask refuses it now: a cached row of an older
    mask still describes code that really ran."""
    states: dict[str, OpState] = {}
    try:
        for _ in walk(program, schedule, limits, True, True, states):
            pass
    except ScheduleError:
        states = {}
        for _ in walk(program, schedule, limits, True, False, states):
            pass
    return states


def _log2(x: float) -> float:
    return math.log2(x) if x > 0 else 0.0


def op_vector(st: OpState, total_work: float, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """The vector of one op's final state (layout: module docstring)."""
    n = limits.n_loops
    op = st.op
    blocks = split(features(st, limits), limits)
    k = min(st.n_loops, n)
    per = {name: np.zeros(n, np.float32) for name in PER_LOOP}
    per["bounds"] = np.log2(1 + blocks["bounds"])
    per["iterators"] = blocks["iterators"]
    access = blocks["access"].reshape(limits.n_arrays, limits.max_rank, n)
    for a, rows in enumerate(op.access[: limits.n_arrays]):
        used = np.abs(access[a, : len(rows)]).sum(axis=0) > 0
        per["operands"] += used
        if rows:
            per["contiguous"] += np.abs(access[a, len(rows) - 1]) > 0
    for p in range(k):
        d = st.loop_at(p)
        per["extent"][p] = _log2(st.extents[d])
        per["tiles"][p] = _log2(op.loops[d].bound / max(1, st.extents[d]))
    par_tiles = 1.0
    for a in st.actions:
        if a.kind in TILED:
            for p, s in enumerate(a.params[:n]):
                if s:
                    per[a.kind][p] = 1 + _log2(s)  # 1 = tile size 1, 0 = not tiled
            if a.kind == "TP":
                par_tiles = 1.0
                for p, s in enumerate(a.params[:k]):
                    if s:
                        par_tiles *= max(1.0, op.loops[st.loop_at(p)].bound / s)
    inner = float(np.prod([max(1, e) for e in st.extents])) if st.extents else 1.0
    work = float(op.flops)
    scal = [st.parallelized, st.fused, st.fused_into is not None, st.tiled, st.interchanged, st.vectorized,
            _log2(vector_elements(st)) if st.vectorized else 0.0, _log2(par_tiles) if st.parallelized else 0.0,
            _log2(inner), _log2(work), work / total_work if total_work > 0 else 0.0, st.n_loops]
    return np.concatenate([blocks["op_type"], blocks["vectorizable"], np.log2(1 + blocks["op_counts"]),
                           *(per[name] for name in PER_LOOP), np.asarray(scal, np.float32)]).astype(np.float32)


def program_matrix(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """(ops, op_vector_size) for one schedule of the program, ops in the program's order."""
    states = final_states(program, schedule, limits)
    total = float(sum(o.flops for o in program.ops))
    return np.stack([op_vector(states[o.id], total, limits) for o in program.ops]) if program.ops \
        else np.zeros((0, op_vector_size(limits)), np.float32)
