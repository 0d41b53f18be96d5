"""Imitation targets: what of a search result is worth imitating (`mlir-rl-tui train --recipe default`, agent/recipes.py).

The search itself is `engine.search` (hill climbing and the others); its results go to traces through
`engine.rl.trace.write_schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mlir_rl_tui.engine import Engine, Program, Schedule, Session, to_text
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.measure.remeasure import figure, remeasure, speedups
from mlir_rl_tui.engine.schedule.notation import TILED, Action
from mlir_rl_tui.engine.schedule.state import effective


def to_candidates(sess: Session, a: Action) -> Action:
    """`a` with each tile size the policy cannot choose (the search's sizes are any divisor, e.g. 384) made
    one it can: a size at least the loop's extent (one tile: the loop as it is) becomes 0, any other the
    largest candidate below it."""
    if a.kind not in TILED or all(x in sess.limits.tile_sizes for x in a.params):
        return a
    st = sess.current
    out = []
    for pos, x in enumerate(a.params):
        if x in sess.limits.tile_sizes:
            out.append(x)
        elif pos < st.n_loops and x >= st.extents[st.loop_at(pos)]:
            out.append(0)
        else:
            out.append(max(c for c in sess.limits.tile_sizes if c <= x))
    return Action(a.kind, tuple(out))


def legal_schedule(program: Program, per_op: dict[str, list[Action]], openmp: bool = True,
                   fit: Callable[[Session, Action], Action] | None = None) -> Schedule:
    """The schedule of per-op action lists applied in traversal order, each op's legal prefix kept; an op
    without actions (or whose actions stopped being legal, e.g. after its consumer no longer fuses it) ends
    with NT there. `fit` rewrites each action in the state it applies to (e.g. `to_candidates`)."""
    sess = Session(program, openmp=openmp)
    while not sess.done:
        op = sess.current.op.id
        for a in per_op.get(op, []):
            if sess.done or sess.current.op.id != op:
                break
            a = fit(sess, a) if fit is not None else a
            try:
                sess = sess.apply(a)
            except ScheduleError:
                break
        if not sess.done and sess.current.op.id == op:
            sess = sess.apply(Action("NT"))
    return sess.schedule


def policy_target(program: Program, schedule: Schedule, openmp: bool = True) -> Schedule:
    """The schedule as the policy imitates it: tile sizes it can choose (`to_candidates`), and without the
    tilings that tile nothing (`engine.schedule.state.effective`: no code, and imitated they teach the policy to spend
    its tau on them: hill climbing's schedules have them, e.g. `T(16)` on a loop of 16)."""
    fitted = legal_schedule(program, schedule.ops, openmp, fit=to_candidates)
    return legal_schedule(program, effective(program, fitted, openmp=openmp, sizes_as_given=True).ops, openmp)


def imitation_target(engine: Engine, program: Program, schedule: Schedule, measurement,
                     keep_baseline: float = 1.1) -> tuple[Schedule, float, int, str]:
    """The schedule to imitate from a search result: (Schedule, speedup, measurements made, why): NT on
    every op (the untransformed program) when the search's best is not `keep_baseline` times faster than
    the baseline (or it failed), otherwise the search's schedule as found. (Setting ops to NT where the
    schedule stays near its best without them taught the policy to leave ops alone that matter in other
    programs: docs/agent-experiments.md.)"""
    best = (measurement.speedup or 0.0) if measurement is not None and measurement.ok else 0.0
    if best < keep_baseline:
        return Schedule({}), 1.0, 0, f"best {best:.2f}x < {keep_baseline}x: keep the baseline"
    return legal_schedule(program, {k: list(v) for k, v in schedule.ops.items()}, engine.openmp), best, 0, \
        f"best {best:.2f}x"


def confirmed(engine: Engine, program: Program, schedules: list[Schedule],
              rounds: int = 3) -> list[tuple[Schedule, float, list[float]]]:
    """The schedules measured again, fresh (not from the cache), interleaved A B C ... for `rounds` rounds
    and more while one's runs are split (engine.measure.remeasure), each run's speedup over the untransformed
    program's time measured in between (pooled): (schedule, its figure, the runs), the best figure first
    (the fastest run, 0 if one failed: engine.measure.remeasure.figure).

    A search's best as found is the fastest of its noisy measurements (the winner's curse), and a parallel
    schedule can measure at one level at one moment and at another later; timed side by side, two schedules
    are compared at the same moment, so the choice is not a draw of the machine's state."""
    by_text = {to_text(s): s for s in schedules}
    figures = speedups(remeasure(engine, program, schedules, rounds))  # over the remeasurement's pooled baseline
    out = [(by_text[t], figure(xs), xs) for t, xs in figures.items()]
    return sorted(out, key=lambda x: -x[1])


#: The register-row pattern of a 2-D elementwise op: parallel rows of one, 64 columns per tile, 8 lanes.
ROW_TILES = ((1, 64), (1, 8))


def _elementwise(st) -> bool:
    op = st.op
    return (all(lp.iterator == "parallel" for lp in op.loops) and not op.contraction
            and op.decompose_dims is None and op.name != "linalg.fill" and st.fused_into is None)


def _elementwise_2d(st) -> bool:
    return _elementwise(st) and len(st.op.loops) == 2 and st.op.loops[1].bound >= ROW_TILES[0][1]


def _apply_all(sess: Session, actions: list[Action]) -> Session | None:
    """`sess` after all of `actions` on its current op, or None if one is illegal there."""
    try:
        for a in actions:
            sess = sess.apply(a)
    except ScheduleError:
        return None
    return sess


def _tiled(sess: Session, kind: str, wanted: tuple[int, ...]) -> tuple[Action, Session] | None:
    """The tiling `kind` of the wanted sizes, each clamped to what the mask allows (`fit_sizes`), and the
    session after it; None where the mask or MLIR refuses it."""
    from mlir_rl_tui.engine.search.base import fit_sizes

    sizes = fit_sizes(sess, kind, wanted)
    after = _apply_all(sess, [Action(kind, sizes)]) if sizes else None
    return (Action(kind, sizes), after) if after is not None else None


def _row_actions(sess: Session, kind: str) -> list[Action] | None:
    """ROW_TILES (the outer one with `kind`, TP or T) then V on the current op, each size clamped to what the
    mask allows; on an op of more loops, tiles of 1 on the outer ones (TP(1,1,1,64) T(1,1,1,8) V on a 4-D
    op), on a 1-D op the columns' (TP(64) T(8) V); None if `kind` is not allowed."""
    n = sess.current.n_loops
    pad = (1,) * max(0, n - len(ROW_TILES[0]))
    outer = _tiled(sess, kind, (pad + ROW_TILES[0])[-n:])
    if outer is None:
        return None
    inner = _tiled(outer[1], "T", (pad + ROW_TILES[1])[-n:])
    return [outer[0], *([inner[0]] if inner else []), Action("V")]


def _depthwise_actions(sess: Session, iterations: int) -> list[Action] | None:
    """DEPTHWISE_TILES on an NCHW depthwise convolution (loops n, oh, ow, c, kh, kw): TP over the output
    pixels (T below SERIAL_BELOW iterations), 32 channels or all of them per tile, a register tile of 8
    channels, no V (MLIR has no 1-D form of it to vectorize); None where the mask refuses them."""
    c = sess.current.op.loops[3].bound
    kind = "TP" if iterations >= SERIAL_BELOW else "T"
    outer = _tiled(sess, kind, (1, 1, 1, 0 if c <= DEPTHWISE_TILES[0][3] else DEPTHWISE_TILES[0][3], 0, 0))
    inner = _tiled(outer[1], "T", DEPTHWISE_TILES[1]) if outer else None
    return [outer[0], inner[0]] if outer and inner else None


def _pool_actions(sess: Session, iterations: int) -> list[Action] | None:
    """POOL_ROW_TILES then V on an NCHW pooling (loops n, c, oh, ow, kh, kw; ow at least POOL_MIN_ROW): a
    register tile of one output row (up to 32 columns of a row of a multiple of 8, else a row of up to 32
    whole) with the window's columns unrolled; from SERIAL_BELOW iterations an outer TF (or TP when the fill
    cannot fuse) of one channel per tile first. None where the mask refuses them."""
    outer = None
    if iterations >= SERIAL_BELOW:
        outer = _tiled(sess, "TF" if sess.mask().transformation["TF"].allowed else "TP", POOL_ROW_TILES[0])
        if outer is None:
            return None
    ow, most = sess.current.op.loops[3].bound, POOL_ROW_TILES[1][3]
    w = min(ow, most) if ow % 8 == 0 else 0 if ow <= most else most  # a row of other widths whole (0)
    row = (*POOL_ROW_TILES[1][:3], w, *POOL_ROW_TILES[1][4:])
    inner = _tiled(outer[1] if outer else sess, "T", row)
    return [*([outer[0]] if outer else []), inner[0], Action("V")] if inner else None


def _conv_actions(sess: Session) -> list[Action] | None:
    """CONV_TILES then V on an NCHW convolution (loops n, f, oh, ow, c, kh, kw): an outer tile of up to 16
    filters and 32 columns of one output row (TF when the fill of the output can fuse, else T), a register
    tile of one row of up to 32 columns (the vector lanes) with the reductions as scalar loops; None where
    the mask refuses them."""
    kind = CONV_OUTER if sess.mask().transformation[CONV_OUTER].allowed else "T"
    ow = sess.current.op.loops[3].bound
    row = 0 if ow <= CONV_TILES[1][3] else CONV_TILES[1][3]  # a row of up to 32 columns whole (0: not tiled)
    outer = _tiled(sess, kind, (*CONV_TILES[0][:3], row, *CONV_TILES[0][4:]))
    inner = _tiled(outer[1], "T", (*CONV_TILES[1][:3], row, *CONV_TILES[1][4:])) if outer else None
    return [outer[0], inner[0], Action("V")] if outer and inner else None


#: The NCHW convolution pattern (rule "conv"): outer tile of 16 filters and 32 columns of one output row and
#: one kernel row, register tile of one output row of 32 columns (`_conv_actions` takes a row of up to 32
#: columns whole).
CONV_TILES = ((1, 16, 1, 32, 0, 1, 0), (1, 1, 1, 32, 1, 1, 1))
#: The outer tiling of the "conv" rule where it is allowed.
CONV_OUTER = "TF"
#: The "conv" rule is for convolutions whose output rows are at least this wide and whose kernel is more
#: than 1x1 (a 1x1 convolution is a matrix product over the channels).
CONV_MIN_ROW = 8
#: The depthwise pattern (rule "depthwise"): outer tile of one output pixel and up to 32 channels, register
#: tile of 8 channels.
DEPTHWISE_TILES = ((1, 1, 1, 32, 0, 0), (1, 1, 1, 8, 1, 1))
#: The pooling-row pattern (rule "pool"): outer tile of one channel, register tile of one output row of up
#: to 32 columns, the window's rows one at a time and its columns whole.
POOL_ROW_TILES = ((1, 1, 0, 0, 0, 0), (1, 1, 1, 32, 1, 0))
#: The "pool" rule is for poolings whose output rows are at least this wide. Rows of 5-14 columns that are not
#: multiples of 8 make vectors of that length, and on 2x2 windows they still beat channel vectors (AMD EPYC
#: VM: 8 channels, rows of 7, 3.28x vs 2.98x; rows of 14, stride 2, 5.26x vs 3.16x); where they lose (3x3
#: windows of rows of 10, stride-1 rows of 17) the side-by-side check keeps them out.
POOL_MIN_ROW = 4
#: Ops with fewer loop iterations than this run serially under the "serial" rule.
SERIAL_BELOW = 16384
#: The rules of rule_variant.
RULES: tuple[str, ...] = ("TF", "rows", "serial", "depthwise", "pool", "conv")
#: The rule groups the recipe checks on every target, in this order: each group is kept or not as a whole,
#: the next one applied to what was kept.
RULE_GROUPS: tuple[tuple[str, ...], ...] = (("TF", "rows"), ("serial",), ("depthwise",), ("conv",), ("pool",))


def rule_variant(program: Program, schedule: Schedule, rules: tuple[str, ...] = RULES,
                 openmp: bool = True) -> tuple[Schedule, list[str]]:
    """The schedule with `rules` applied, rules that hold on this machine whatever the moment's timing state,
    and where it applied them (`op0: TF`, `op2: rows`); the schedule itself when none applies. Each is a
    choice the search makes or not by the draw of its budget (so imitated as found it is noise to the
    policy), or a pattern the search rarely finds that wins by a wide margin where it applies; the recipe
    takes each only where it is timed at least as fast (`checked_by_rules`).

    - TF: an op tiled in parallel (TP) whose producer to fuse is the fill of its output (matmuls,
      convolutions, poolings) gets TF with the same tile sizes; the fused producer then keeps its actions if
      they are still legal (its T sizes that cover the fused tile's loop made 0), else V, else NT. Fusion
      saves the fill's pass over the output. (Fusing other producers is not a rule: TF of elementwise chains
      measured 0.8-1.02x of TP, and of softmax's reductions down to 0.14x: the fused reduction is recomputed
      in every tile.)
    - rows: a 2-D elementwise op at least 64 wide tiled with TP or T gets ROW_TILES then V (TP(1,64)
      T(1,8) V; T(1,64) where it was T). A register tile of 8 rows gives an elementwise op no reuse, and
      when a row is 4 KB (1024 floats) its 8 rows of 3 operands compete for the same cache sets: 1.0-1.2x
      where rows reach 1.9x.
    - serial: an op with fewer than SERIAL_BELOW loop iterations tiled with TP gets T with the same sizes.
      Handing a parallel region to the second core costs 0.1-2 us on a 2-core VM, more than such an op
      takes; a policy imitating the search's TP on them learns TP on every op of programs made only of small
      ones (a layer norm and a batch-1 MLP: 0.8x and 0.5x of hill climbing's speedup).
    - depthwise: an NCHW depthwise convolution (not vectorizable) gets DEPTHWISE_TILES
      (`_depthwise_actions`): hill climbing's targets for it were eight different patterns in eight
      programs, and a policy's mixture of them ran a MobileNet block at 1.2x where this pattern on that one op
      gives 3.1x.
    - conv: an NCHW conv_2d with a kernel larger than 1x1 and output rows of at least CONV_MIN_ROW gets
      CONV_TILES then V (`_conv_actions`): one output row per register tile, the vector lanes along it, the
      reductions as scalar loops around an FMA per kernel tap; on a ResNet block's 3x3 convolutions 12.1x
      where a mixture of the search's patterns gave 8.1x. It loses on 1x1 convolutions (not the rule's).
    - pool: an NCHW pooling of output rows at least POOL_MIN_ROW wide gets POOL_ROW_TILES then V
      (`_pool_actions`): a torch export's max pooling ran at 3.4x with channel vectors, 5.6x with rows.
    """
    sess = Session(program, openmp=openmp)
    applied: list[str] = []
    while not sess.done:
        st = sess.current
        acts = list(schedule.ops.get(st.op.id, []))
        nxt = None
        m = sess.mask()
        prod = sess.producer(st)
        iterations = math.prod(lp.bound for lp in st.op.loops)
        if "serial" in rules and acts and acts[0].kind == "TP" and iterations < SERIAL_BELOW:
            acts = [Action("T", acts[0].params), *acts[1:]]
            applied.append(f"{st.op.id}: serial")
        special = None
        if "depthwise" in rules and st.op.name == "linalg.depthwise_conv_2d_nchw_chw" and st.fused_into is None:
            special = "depthwise", _depthwise_actions(sess, iterations)
        elif "conv" in rules and st.op.name == "linalg.conv_2d_nchw_fchw" and st.fused_into is None \
                and st.op.loops[3].bound >= CONV_MIN_ROW and st.op.loops[5].bound * st.op.loops[6].bound > 1:
            special = "conv", _conv_actions(sess)
        elif "pool" in rules and st.op.name.startswith("linalg.pooling_nchw_") and st.fused_into is None \
                and st.op.loops[3].bound >= POOL_MIN_ROW:
            special = "pool", _pool_actions(sess, iterations)
        if special is not None and special[1] and special[1] != [a for a in acts if a.kind != "NT"] \
                and (tried := _apply_all(sess, special[1])) is not None:
            nxt = tried
            applied.append(f"{st.op.id}: {special[0]}")
        elif "TF" in rules and acts and acts[0].kind == "TP" and prod is not None \
                and prod.op.name == "linalg.fill" and m.transformation["TF"].allowed:
            nxt = _apply_all(sess, [Action("TF", acts[0].params), *acts[1:]])
            applied += [f"{st.op.id}: TF"] if nxt is not None else []
        elif "rows" in rules and acts and acts[0].kind in ("TP", "T") and _elementwise_2d(st):
            rows = _row_actions(sess, acts[0].kind)
            nxt = _apply_all(sess, rows) if rows else None
            applied += [f"{st.op.id}: rows"] if nxt is not None and rows != acts else []
        if nxt is None:
            nxt = _apply_all(sess, acts) if acts else None
        if nxt is None and st.fused_into is not None:  # the producer now has the consumer's tile extents
            if acts and acts[0].kind == "T":
                ext = [st.extents[st.loop_at(p)] for p in range(st.n_loops)]
                sizes = tuple(0 if s >= e else s for s, e in zip(acts[0].params, ext))
                nxt = _apply_all(sess, [Action("T", sizes), *acts[1:]]) if any(sizes) else None
            nxt = nxt or _apply_all(sess, [Action("V")])
        if nxt is None:
            nxt = sess
        if not nxt.done and nxt.current.op.id == st.op.id:
            nxt = nxt.apply(Action("NT"))
        sess = nxt
    return (sess.schedule, applied) if applied else (schedule, [])


def checked_by_rules(engine: Engine, program: Program, schedule: Schedule, speedup: float, threshold: float,
                     rounds: int = 3, groups: tuple[tuple[str, ...], ...] = RULE_GROUPS
                     ) -> tuple[Schedule, float, int, str]:
    """The target after each of `groups` in turn (the recipe checks RULE_GROUPS): the group's variant
    (rule_variant) and the current target measured again, fresh and interleaved (`confirmed`, `rounds`
    rounds); the variant replaces the target when its figure (fastest run) is at least `threshold` times the
    target's. A target that keeps the baseline (no actions) is checked too.
    Returns (schedule, its speedup, measurements made, what happened in words)."""
    made, why = 0, []
    for group in groups:
        variant, rules = rule_variant(program, schedule, group, engine.openmp)
        if not rules:
            continue
        ranked = {to_text(s): (m, runs) for s, m, runs in confirmed(engine, program, [schedule, variant], rounds)}
        made += sum(len(runs) for _, runs in ranked.values())  # each distinct one, its rounds
        (was, _), (now, runs) = ranked[to_text(schedule)], ranked[to_text(variant)]
        took = now >= threshold * was
        why.append(f"rules ({', '.join(rules)}) {now:.2f}x ({min(runs):.2f}-{max(runs):.2f}) vs {was:.2f}x: "
                   + ("taken" if took else "kept"))
        if took:
            schedule, speedup = variant, now
    return schedule, speedup, made, "; ".join(why)
