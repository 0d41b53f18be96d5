"""Per-op scheduling state and the action mask with a readable reason for every masked choice.

The state follows what the transforms really do to the op: tiling shrinks the extents of the
innermost (tiled) op, interchange permutes its loops, tiled fusion shrinks the fused producer, and
V / NT end the op (paper Sec. IV-A and App. A; failure study in the spike README).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, TRANSFORMATIONS, Limits
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.ir.program import LinalgOp, Program
from mlir_rl_tui.engine.schedule.notation import TILED, Action, Schedule


@dataclass
class OpState:
    """Where one op stands in its schedule."""

    op: LinalgOp
    order: list[int]  # position -> original loop index (interchange permutes it)
    extents: list[int]  # per original loop: extent of the innermost tiled op
    actions: list[Action] = field(default_factory=list)
    parallelized: bool = False
    fused: bool = False  # TF done on this op (it fused its producer)
    fused_into: str | None = None  # this op was fused into that consumer
    tiled: bool = False
    interchanged: bool = False
    vectorized: bool = False
    done: bool = False

    @property
    def n_loops(self) -> int:
        return len(self.order)

    def loop_at(self, pos: int) -> int:
        return self.order[pos]

    @property
    def n_transforms(self) -> int:
        """Non-terminal actions so far (counted against tau)."""
        return sum(1 for a in self.actions if not a.terminal)

    @property
    def status(self) -> str:
        if self.vectorized:
            return "vectorized"
        if self.done:
            return "done"
        if self.actions or self.fused_into:
            return "scheduled"
        return "untouched"

    def copy(self) -> OpState:
        return OpState(self.op, list(self.order), list(self.extents), list(self.actions), self.parallelized,
                       self.fused, self.fused_into, self.tiled, self.interchanged, self.vectorized, self.done)


def initial_state(op: LinalgOp) -> OpState:
    n = len(op.loops)
    return OpState(op, list(range(n)), [lp.bound for lp in op.loops])


@dataclass
class Choice:
    """One choice in the mask: allowed or not, and why not."""

    allowed: bool
    reason: str = ""


@dataclass
class ActionMask:
    """Mask of the multi-discrete action space for one op state (paper Sec. IV-A.2)."""

    transformation: dict[str, Choice]
    #: kind -> loop position -> candidate index -> Choice (for T, TP, TF).
    tile: dict[str, list[list[Choice]]]
    #: Level pointers: loop index -> Choice for the next interchange position.
    interchange: list[Choice]
    tile_sizes: tuple[int, ...] = ()

    def allowed_kinds(self) -> list[str]:
        return [k for k, c in self.transformation.items() if c.allowed]

    def to_json(self) -> dict:
        return {
            "transformation": {k: {"allowed": c.allowed, "reason": c.reason} for k, c in self.transformation.items()},
            "tile_sizes": list(self.tile_sizes),
            "tile": {k: [[c.allowed for c in pos] for pos in v] for k, v in self.tile.items()},
            "tile_reasons": {k: [[c.reason for c in pos] for pos in v] for k, v in self.tile.items()},
            "interchange": [c.allowed for c in self.interchange],
        }


# ----------------------------------------------------------------------------------------------
def transformation_reasons(st: OpState, program: Program, limits: Limits = DEFAULT_LIMITS,
                           openmp: bool = True, pending: list[int] | None = None) -> dict[str, Choice]:
    """Whether each of the six transformations is allowed now, with the reason when it is not."""
    out: dict[str, Choice] = {}
    if st.done:
        done = Choice(False, f"{st.op.id} is finished ({st.status})")
        return {k: done for k in TRANSFORMATIONS}
    if st.op.pad_fill:
        pad = Choice(False, f"{st.op.id} fills a padded buffer: left alone, the padded tensor's producer writes "
                            "straight into it; transformed, a strided copy (memrefCopy) does, up to 3.6x slower")
        return {k: (Choice(True) if k == "NT" else pad) for k in TRANSFORMATIONS}
    if pending:
        busy = Choice(False, f"interchange in progress ({len(pending)} of {st.n_loops} levels chosen): complete it")
        return {k: (Choice(True) if k == "I" else busy) for k in TRANSFORMATIONS}
    over = st.n_transforms >= limits.tau
    tau_reason = Choice(False, f"schedule length tau={limits.tau} reached: only V or NT")
    if st.n_loops > limits.n_loops:
        big = Choice(False, f"{st.op.name} has {st.n_loops} loops, more than N={limits.n_loops}")
        out.update({k: big for k in ("T", "TP", "TF", "I")})
    par = [st.op.loops[i].iterator == "parallel" for i in range(st.n_loops)]
    for k in ("T", "TP", "TF"):
        if k in out:
            continue
        if over:
            out[k] = tau_reason
        elif k == "T" and not any(e > 1 for e in st.extents):
            out[k] = Choice(False, "every loop already has extent 1")
        elif k == "TP" and st.parallelized:
            out[k] = Choice(False, "TP at most once per op")
        elif k == "TP" and not openmp:
            out[k] = Choice(False, "no parallel runtime (MLIR_RL_PARALLEL=none, or neither OpenMP nor MLIR's async runtime found)")
        elif k in ("TP", "TF") and not any(p and st.extents[i] > 1 for i, p in enumerate(par)):
            out[k] = Choice(False, "no parallel loop with extent > 1 to tile in parallel")
        elif k == "TF" and st.op.fusion_producer is None:
            out[k] = Choice(False, f"{st.op.id} has no linalg producer to fuse")
        elif k == "TF" and (why := unfusable(program.op(st.op.fusion_producer))):
            out[k] = Choice(False, why)
        elif k == "TF" and (why := shared_init(st, program)):
            out[k] = Choice(False, why)
        elif k == "TF" and st.fused:
            out[k] = Choice(False, "TF at most once per op: the producer is already fused")
        elif k == "TF" and st.tiled:
            out[k] = Choice(False, "TF must be the first tiling: fusion happens at the outermost tile loop")
        else:
            out[k] = Choice(True)
    if "I" not in out:
        if over:
            out["I"] = tau_reason
        elif st.n_loops < 2:
            out["I"] = Choice(False, "a single loop cannot be interchanged")
        else:
            out["I"] = Choice(True)
    out["V"] = vectorize_choice(st, limits)
    out["NT"] = Choice(True)
    return {k: out[k] for k in TRANSFORMATIONS}


def unfusable(producer: LinalgOp) -> str:
    """Why TF cannot fuse a tile of `producer` into a tile of its consumer ("" if it can): the producer's
    tile follows from a tile of its result only when each result dimension is one loop. Otherwise MLIR
    copies the whole producer into every tile (all its work, once per tile), which the state here (a
    fused producer has the tile's extents) does not describe either."""
    for rows in producer.access[producer.n_inputs:]:
        for dim, row in enumerate(rows):
            if sum(1 for c in row if c) != 1 or max(row) != 1:
                return (f"{producer.id} writes dimension {dim} of its result at a constant or combined index: no "
                        f"tile of it follows from a tile of its consumer, so TF would copy all of {producer.id} "
                        "into every tile")
    return ""


def shared_init(st: OpState, program: Program) -> str:
    """Why TF cannot fuse the producer because of what it writes into ("" if it can): the producer writes into
    the result of an op (a linalg.fill) that the loop it would be fused into also writes into: the consumer
    itself, or the op whose tiles the consumer was fused into. MLIR then fuses the producer onto the loop's own
    output buffer, where it reads the loop's partial results instead of the fill: a wrong result (two matmuls
    of an MLP sharing one zero fill, the second tiled and fused with the first: 8146 of 8192 elements wrong)."""
    producer = program.op(st.op.fusion_producer)
    owners = [st.op] + ([program.op(st.fused_into)] if st.fused_into else [])
    for owner in owners:
        shared = set(producer.init_producers) & set(owner.init_producers)
        if shared:
            f = sorted(shared)[0]
            return (f"{producer.id} and {owner.id} both write into {f}'s result: fused into {owner.id}'s tiles, "
                    f"{producer.id} would read {owner.id}'s partial results instead of {f}'s")
    return ""


def vector_elements(st: OpState) -> int:
    dims = range(st.n_loops)
    if st.op.decompose_dims:
        dims = [d for d in dims if d not in st.op.decompose_dims]
    n = 1
    for d in dims:
        n *= st.extents[d]
    return n


#: 2-D convolutions and poolings that `structured.decompose` turns into 1-D ones the vectorizer takes
#: (linalg::populateDecomposeConvolutionPatterns); depthwise_conv_2d_nchw_chw, for one, is not among them.
DECOMPOSABLE = frozenset(f"linalg.{n}" for n in (
    "conv_2d", "conv_2d_nhwc_hwcf", "conv_2d_nchw_fchw", "depthwise_conv_2d_nhwc_hwc", "pooling_nhwc_sum",
    "pooling_nchw_sum", "pooling_nhwc_max", "pooling_nhwc_max_unsigned", "pooling_nhwc_min",
    "pooling_nhwc_min_unsigned", "pooling_nchw_max"))
#: 1-D convolutions and poolings MLIR's vectorizer takes as they are (the forms 2-D ones decompose into)
ONE_D = frozenset(f"linalg.{n}" for n in (
    "conv_1d_nwc_wcf", "conv_1d_ncw_fcw", "depthwise_conv_1d_nwc_wc", "depthwise_conv_1d_ncw_cw", "pooling_nwc_sum",
    "pooling_ncw_sum", "pooling_nwc_max", "pooling_nwc_max_unsigned", "pooling_nwc_min", "pooling_nwc_min_unsigned",
    "pooling_ncw_max"))


def vectorize_choice(st: OpState, limits: Limits = DEFAULT_LIMITS) -> Choice:
    """Vectorization pre-condition (paper Sec. IV-B) and the 512-element rule (Sec. IV-A.2)."""
    op = st.op
    if op.unvectorizable_body:
        return Choice(False, f"the body has {', '.join(op.unvectorizable_body)}, which the vectorizer rejects")
    if op.unvectorizable_reduction:
        return Choice(False, f"not a reduction the vectorizer knows: {op.unvectorizable_reduction}")
    if op.decompose_dims is not None and op.name not in DECOMPOSABLE:
        return Choice(False, f"MLIR has no 1-D form to decompose {op.name} into, so it cannot be vectorized")
    if op.decompose_dims is not None:
        if st.interchanged:
            return Choice(False, "an interchanged convolution is a linalg.generic the vectorizer rejects")
        oh, kh = op.decompose_dims
        if st.extents[oh] != 1 or st.extents[kh] != 1:
            return Choice(False, f"2-D {op.op_type} vectorizes only after tiling loops {st.order.index(oh)} "
                                 f"(output height) and {st.order.index(kh)} (kernel height) to 1")
    elif op.name in ONE_D:
        if st.interchanged:
            return Choice(False, "an interchanged convolution is a linalg.generic the vectorizer rejects")
    elif op.op_type == "conv_2d" or op.op_type == "pooling":
        return Choice(False, f"{op.name} cannot be decomposed to a 1-D op for vectorization")
    elif not _projected_permutations(op):
        return Choice(False, "an access is not a projected permutation (the vectorizer rejects it)")
    n = vector_elements(st)
    big = limits.max_contraction_vector_elements if op.contraction or op.decompose_dims else limits.max_vector_elements
    if n > big:
        return Choice(False, f"vectorized extent {n} > {big}: tile first (large vectors make compilation explode)")
    return Choice(True)


def vectorizable(st: OpState, limits: Limits = DEFAULT_LIMITS) -> bool:
    """The paper's vectorization pre-condition flag, ignoring the size rule."""
    return vectorize_choice(st, Limits(**{**limits.__dict__, "max_vector_elements": 1 << 62,
                                          "max_contraction_vector_elements": 1 << 62})).allowed


def _projected_permutations(op: LinalgOp) -> bool:
    for rows in op.access:
        for row in rows:
            nz = [c for c in row if c != 0]
            if len(nz) > 1 or (nz and nz[0] != 1):
                return False
    return True


def tile_size_choice(st: OpState, kind: str, pos: int, s: int) -> Choice:
    """Whether tile size `s` at loop position `pos` is legal for a `kind` tiling of the op now: the one
    rule the mask shows and `step` enforces."""
    if s == 0:
        return Choice(True)
    if s < 0:
        return Choice(False, f"tile size {s} is negative")
    if pos >= st.n_loops:
        return Choice(False, f"the op has only {st.n_loops} loops")
    d = st.loop_at(pos)
    e = st.extents[d]
    if kind in ("TP", "TF") and st.op.loops[d].iterator == "reduction":
        return Choice(False, f"loop {pos} is a reduction: tiling it in parallel races")
    if s > e:
        return Choice(False, f"tile {s} > extent {e} of loop {pos}")
    if e % s:
        return Choice(False, f"tile {s} does not divide extent {e} of loop {pos}")
    return Choice(True)


def tile_choices(st: OpState, kind: str, limits: Limits = DEFAULT_LIMITS) -> list[list[Choice]]:
    """For each loop position (N of them) and candidate tile size (M), whether it is allowed."""
    return [[tile_size_choice(st, kind, pos, s) for s in limits.tile_sizes] for pos in range(limits.n_loops)]


def interchange_choices(st: OpState, pending: list[int], limits: Limits = DEFAULT_LIMITS) -> list[Choice]:
    """Level pointers: which loop can go to the next position (chosen loops are masked)."""
    out = []
    for n in range(limits.n_loops):
        if n >= st.n_loops:
            out.append(Choice(False, f"the op has only {st.n_loops} loops"))
        elif n in pending:
            out.append(Choice(False, f"loop {n} already placed"))
        else:
            out.append(Choice(True))
    return out


def action_mask(st: OpState, program: Program, limits: Limits = DEFAULT_LIMITS, openmp: bool = True,
                pending: list[int] | None = None) -> ActionMask:
    pending = pending or []
    return ActionMask(
        transformation=transformation_reasons(st, program, limits, openmp, pending),
        tile={k: tile_choices(st, k, limits) for k in TILED},
        interchange=interchange_choices(st, pending, limits),
        tile_sizes=limits.tile_sizes,
    )


# ----------------------------------------------------------------------------------------------
def step(st: OpState, action: Action, program: Program, limits: Limits = DEFAULT_LIMITS,
         openmp: bool = True) -> OpState:
    """Apply one action to an op state; ScheduleError names the reason if the action is masked."""
    op = st.op
    kinds = transformation_reasons(st, program, limits, openmp)
    if action.kind not in kinds:
        raise ScheduleError(f"unknown transformation {action.kind}")
    if not kinds[action.kind].allowed:
        raise ScheduleError(f"{op.id}: {action} is not allowed: {kinds[action.kind].reason}")
    if action.kind in TILED:
        sizes = action.params
        if len(sizes) != st.n_loops:
            raise ScheduleError(f"{op.id}: {action} needs {st.n_loops} tile sizes ({op.name} has {st.n_loops} loops)")
        for pos, s in enumerate(sizes):
            if not (c := tile_size_choice(st, action.kind, pos, s)).allowed:
                raise ScheduleError(f"{op.id}: {action}: {c.reason}")
    elif action.kind == "I":
        if sorted(action.params) != list(range(st.n_loops)):
            raise ScheduleError(f"{op.id}: {action} is not a permutation of 0..{st.n_loops - 1}")
    elif action.params:
        raise ScheduleError(f"{op.id}: {action} has the wrong number of parameters")
    return advance(st, action)


def advance(st: OpState, action: Action) -> OpState:
    """The state after `action`, without checking it (`step` checks first; scripts built for crash tests
    do not)."""
    new = st.copy()
    new.actions.append(action)
    if action.kind in TILED:
        if any(action.params):
            for pos, s in enumerate(action.params):
                if s and pos < st.n_loops:
                    new.extents[st.loop_at(pos)] = s
            new.tiled = True
        if action.kind == "TP":
            new.parallelized = True
        if action.kind == "TF":
            new.fused = True
    elif action.kind == "I":
        new.order = [st.order[p] for p in action.params]
        new.interchanged = True
    elif action.kind == "V":
        new.vectorized = True
        new.done = True
    elif action.kind == "NT":
        new.done = True
    return new


def fused_extents(consumer: OpState, producer: LinalgOp, tile_sizes: tuple[int, ...]) -> list[int]:
    """Extents of the producer's clone after fusion into the consumer's tile (projected accesses): the
    consumer's extents after the tiling, which are already smaller than its bounds when the consumer was
    itself fused into a tile."""
    extents = [lp.bound for lp in producer.loops]
    cons = consumer.op
    if cons.fusion_operand is None:
        return extents
    by_dim = dict(enumerate(consumer.extents))
    by_dim.update({consumer.loop_at(p): s for p, s in enumerate(tile_sizes) if s})
    c_rows = cons.access[cons.fusion_operand]
    p_rows = producer.access[producer.n_inputs] if len(producer.access) > producer.n_inputs else []
    for c_row, p_row in zip(c_rows, p_rows):
        cd = [i for i, c in enumerate(c_row) if c]
        pd = [i for i, c in enumerate(p_row) if c]
        if len(cd) == 1 and len(pd) == 1 and c_row[cd[0]] == 1 and p_row[pd[0]] == 1 and cd[0] in by_dim:
            extents[pd[0]] = by_dim[cd[0]]
    return extents


def walk(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS, openmp: bool = True,
         check: bool = True, states: dict[str, OpState] | None = None) -> Iterator[tuple[OpState, Action]]:
    """Each action of the schedule in traversal order with the op's state just before it; `states` (op id ->
    state) follows along, fused producers included. With `check`, an illegal action raises ScheduleError."""
    if states is None:
        states = {}
    states.update({o.id: initial_state(o) for o in program.ops})
    for op_id in schedule.ops:
        if op_id not in states:
            known = ", ".join(states)
            raise ScheduleError(f"unknown op id {op_id!r} in the schedule; this program has {known}")
    for o in program.ops:
        for a in schedule.actions(o.id):
            st = states[o.id]
            yield st, a
            new = step(st, a, program, limits, openmp) if check else advance(st, a)
            if a.kind == "TF" and o.fusion_producer and any(a.params):
                prod = states[o.fusion_producer].copy()
                prod.extents = fused_extents(st, prod.op, a.params)
                prod.fused_into = o.id
                states[o.fusion_producer] = prod
            states[o.id] = new


def untiled_covering(st: OpState, action: Action) -> tuple[int, ...]:
    """The tile sizes of a T, TP or TF with every size that covers its loop (extent 8 tiled by 8, a loop of
    extent 1 tiled by 1) as 0: such a size tiles nothing, and the transforms never make a loop for it.

    MLIR would make a loop of one iteration for each covering size. Inside a reduction's tile loop such
    loops keep the accumulator out of registers (`T(8,32,1) T(8,32,1) V` on a 16x768x768 matmul: 2.65x
    slower than `T(8,32,1) V`). In an scf.forall, canonicalization folds the one-iteration dimension into a
    constant offset, and MLIR's slice canonicalizer then re-infers a rank-reduced slice by dropping the
    leading unit dimension instead of the one the slice dropped: a decomposed convolution's 1x4x1 output
    tile is written as 4x1x1 (`T(1,4,2,0,4,1,0) TP(1,4,1,1,0,0,0) V` on a 1x32x28x28 NCHW convolution:
    a wrong result; fixed upstream in LLVM after 22.1)."""
    return tuple(0 if pos >= st.n_loops or s >= st.extents[st.loop_at(pos)] else s
                 for pos, s in enumerate(action.params))


def applied(st: OpState, action: Action) -> Action:
    """The action as the transforms apply it: covering tile sizes as 0 (`untiled_covering`). A TF whose
    every size covers stays as it is: it makes no tile, but it still fuses the producer into the tiles the
    consumer is in (the transforms' `tile_fuse`)."""
    if action.kind not in TILED:
        return action
    sizes = untiled_covering(st, action)
    if sizes == action.params or (action.kind == "TF" and not any(sizes)):
        return action
    return Action(action.kind, sizes)


def tiles_nothing(st: OpState, action: Action) -> bool:
    """A T or TP whose every size is 0 or covers its loop: no loop of two iterations or more, the state
    as before, and the transforms emit nothing for it (see `untiled_covering`)."""
    return action.kind in ("T", "TP") and not any(untiled_covering(st, action))


def effective(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS,
              openmp: bool = True, sizes_as_given: bool = False) -> Schedule:
    """The schedule as the transforms apply it: without NT, without tilings that tile nothing, and with
    covering tile sizes as 0 (`applied`). Two schedules with the same effective form are the same code
    (measured and cached as one). `sizes_as_given` keeps the sizes as written (imitation targets: the
    policy's own choices)."""
    ops: dict[str, list[Action]] = {k: [] for k in schedule.ops}
    for st, a in walk(program, schedule, limits, openmp, check=False):
        if a.kind != "NT" and not tiles_nothing(st, a):
            ops[st.op.id].append(a if sizes_as_given else applied(st, a))
    return Schedule(ops)


def check_schedule(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS,
           openmp: bool = True) -> dict[str, OpState]:
    """Check a whole schedule against the mask, in traversal order; returns the final op states."""
    states: dict[str, OpState] = {}
    for _ in walk(program, schedule, limits, openmp, True, states):
        pass
    return states
