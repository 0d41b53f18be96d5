"""Tuning a whole model within a wall-clock budget (`mlir-rl-tui tune`), with the tuning database.

1. The start: each op takes the best known schedule of its workload on this machine kind (engine.store.tuning_db)
   where it is legal for every op of the workload; the other ops take the schedule the caller starts from
   (the policy's one pass, asked for only then). Both the composed schedule and the caller's are measured;
   the faster is the start.
2. When every workload ended in an earlier run, that is the answer: no search (a second `tune` of a model
   takes one cached measurement).
3. Otherwise the per-op profile (engine.measure.per_op) says where the time goes; every op's time goes into the
   database. Workloads not yet tuned are taken in order of their share of the model's time (the workload of
   a producer tiled fusion would fuse before its consumer's: `_producers_first`), each given a share of
   the remaining wall-clock time like its share of the model's time (at least `MIN_SLICE_S`).
   A workload is tuned on its own program where it can be taken out (engine.ir.extract: its op and the
   producer tiled fusion would fuse, the rest of the model's tensors as arguments): its op schedule in the
   model and hill climbing's starting points are measured there, then it is hill-climbed (engine.search.hill:
   one loop's tile size a step, the first tiling's kind, V/NT) from the fastest, until a local optimum
   ("tuned") or the end of its time ("cut"). Each candidate gets a quick figure (Engine.measure(quick=True));
   it is taken when it beats the current point beyond the noise, or when its figure is the faster and a
   paired comparison (Engine.compare: both timed in one interleaved burst) finds it faster: on a VM whose
   figures move 10-70% between bursts, nothing was ever beyond the noise of two figures taken apart. A
   candidate compiles in a fraction of a second there, where a ResNet-18 takes 6 s. Minutes left once every
   workload reached its optimum go to restarts from its best moved by `KICK` random steps (`_restarts`).
   The best op schedule is given to every op of the model with that workload; the composition is measured
   on the model at once when that is cheap (under `CHEAP_MODEL_SHARE` of the budget), else once at the end
   (time for it is kept), and taken by the same rule as a candidate. A workload that cannot be taken out is
   hill-climbed on the whole model (each candidate measured there). Workloads under `SMALL_SHARE` of the
   model's time keep their start ("small"), and so do those the deadline came before ("unreached"). A
   profile of the final schedule records every op's time, and every workload is marked in the database with
   how it ended: a later run takes it as known, so running the same command again takes seconds (with
   `continue_cut`, all but the tuned ones are searched again from their best).
4. The deadline, or `cancel`, stops the search between (or inside) measurements; the best schedule measured
   so far is the result. Nothing is lost to an interrupt: the records and tunings written so far stay.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.ir.extract import extract
from mlir_rl_tui.engine.ir.program import COMPILE_S_PER_OP, Program
from mlir_rl_tui.engine.measure.measurement import Measurement, paired_figure
from mlir_rl_tui.engine.schedule.notation import Schedule, to_text
from mlir_rl_tui.engine.schedule.state import check_schedule
from mlir_rl_tui.engine.search.base import BudgetExhausted, Evaluator
from mlir_rl_tui.engine.search.hill import hill_step, kicked, kinds, neighbours, recipes_of, schedule_from, starts
from mlir_rl_tui.engine.store.tuning_db import Record, TuningDB
from mlir_rl_tui.engine.tune import workload as wl

#: The least wall-clock time a workload's climb is given (a few measurements of a small model).
MIN_SLICE_S = 3.0
#: Workloads under this share of the model's time (its per-op profile) keep their start: not worth a search.
SMALL_SHARE = 0.005
#: Restarts once every workload reached a local optimum (Tuner._restarts): random steps from the best, rounds.
KICK = 2
MAX_RESTARTS = 20
RESTART_PATIENCE = 3
#: A model whose measurement takes less than this share of the budget has each workload's tuned op schedule
#: measured on it at once; a larger one all of them together at the end.
CHEAP_MODEL_SHARE = 0.02
#: A composition whose quick figure on the model is slower than the best's by less than this factor is
#: compared with it paired (Engine.compare) before it is undone (_settle).
SETTLE_SLOWER = 1.5
#: The end's composition is kept this many model measurements: a quick figure and a paired comparison (two
#: compiles, a burst of rounds), and one workload tried alone on the model when the composition loses.
RESERVE_MODELS = 4.0


@dataclass
class Workload:
    """One distinct workload of the model and what tuning did to it."""

    key: str
    label: str
    ops: list[str]
    ms: float = 0.0  # its ops' time in the model's latest profile (sum over its ops)
    start: str = ""  # where its first schedule came from: "tuned", "database" or "start"
    measurements: int = 0
    #: where its budget went: paired comparisons (Engine.compare) of a candidate whose figure was the faster
    #: with the best, candidates faster by their figure but not beyond the noise, candidates taken (moves),
    #: and the wall-clock seconds of its climb
    compared: int = 0
    close: int = 0
    kept: int = 0
    restarts: int = 0
    seconds: float = 0.0
    alone: bool = False  # tuned on its own program (engine.ir.extract), not on the whole model
    #: waiting, tuning, tuned (a local optimum), cut (the deadline came first), small (under SMALL_SHARE of the
    #: model's time: kept its start), unreached (the deadline came before it: kept its start), known (ended in
    #: an earlier run: not searched)
    state: str = "waiting"


@dataclass
class TuneResult:
    baseline: Measurement
    start: Measurement  # the start schedule's measurement
    best: Measurement
    schedule: Schedule
    workloads: list[Workload]
    measurements: int = 0  # measurements made (cache hits included)
    seconds: float = 0.0
    searched: bool = True  # False when every workload was tuned before
    history: list[tuple[float, float]] = field(default_factory=list)  # (seconds, best ms)

    def to_json(self) -> dict:
        return {
            "baseline_ms": self.baseline.time_ms, "start_ms": self.start.time_ms, "best_ms": self.best.time_ms,
            "start_schedule": self.start.schedule,
            "speedup": self.best.speedup, "schedule": to_text(self.schedule), "measurements": self.measurements,
            "seconds": round(self.seconds, 2), "searched": self.searched,
            "workloads": [{"key": w.key, "label": w.label, "ops": w.ops, "ms": w.ms, "start": w.start,
                           "measurements": w.measurements, "compared": w.compared, "close": w.close, "kept": w.kept,
                           "restarts": w.restarts,
                           "seconds": round(w.seconds, 2), "alone": w.alone, "state": w.state}
                          for w in self.workloads],
            "distinct_workloads": len(self.workloads), "ops": sum(len(w.ops) for w in self.workloads),
        }


class Tuner:
    """One tuning run; `on_progress(tuner)` is called after each measurement and stage change."""

    def __init__(self, engine: Engine, program: Program, db: TuningDB, seconds: float,
                 start: Schedule | Callable[[], Schedule | None] | None = None, seed: int = 0,
                 on_progress: Callable[[Tuner], None] | None = None,
                 cancel: threading.Event | None = None, continue_cut: bool = False) -> None:
        self.engine, self.program, self.db = engine, program, db
        self.seconds, self.seed = seconds, seed
        #: search again the workloads an earlier run cut short, left as small or did not reach (default: known)
        self.continue_cut = continue_cut
        #: the start for ops the database does not cover, or a function that makes it (called only then)
        self.start_fn = start
        self.start_schedule = Schedule({})
        self.on_progress = on_progress
        #: set by the caller (Ctrl-C): stop now; the deadline sets `cancel` only
        self.interrupted = cancel or threading.Event()
        self.cancel = threading.Event()
        self.t0 = time.monotonic()
        self.deadline = self.t0 + seconds
        self.stage = "starting"
        self.current: Workload | None = None
        self.machine = engine.machine
        keys = wl.of_program(program)
        self.workloads: list[Workload] = []
        for op in program.ops:  # fills too: not searched, but their start's schedule is kept and recorded
            w = next((w for w in self.workloads if w.key == keys[op.id]), None)
            if w is None:
                self.workloads.append(Workload(keys[op.id], wl.label(op), [op.id]))
            else:
                w.ops.append(op.id)
        self.ev: Evaluator | None = None
        self.start_m: Measurement | None = None
        #: the best schedule so far with every workload's tuned op schedule given (not yet measured when a
        #: model measurement is expensive), and the fastest composition measured
        self.composed = Schedule({})
        self.chosen: tuple[Measurement, Schedule] | None = None
        self.alone: dict[str, Program | str] = {}
        #: per workload tuned alone: its evaluator, representative op, candidate maker and start (restarts go on)
        self._alone_ctx: dict[str, tuple] = {}
        self.model_s, self.reserve = 0.0, 0.0
        #: each workload's op schedule tuned on its own program, given to `composed` and not yet settled
        self.given: dict[str, str] = {}

    # -- what the progress view reads ------------------------------------------------------------
    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    @property
    def best(self) -> Measurement | None:
        return self.ev.result.best if self.ev is not None else None

    @property
    def done(self) -> int:
        return sum(w.state in ("tuned", "known", "cut", "small", "unreached") for w in self.workloads)

    # ------------------------------------------------------------------------------------------
    def run(self) -> TuneResult:
        stop = threading.Event()

        def watch() -> None:  # the deadline or the caller's interrupt stops the measurements
            while not stop.wait(0.05):
                if self.interrupted.is_set() or time.monotonic() >= self.deadline:
                    self.cancel.set()
                    return

        t = threading.Thread(target=watch, daemon=True)
        t.start()
        try:
            return self._run()
        finally:
            stop.set()

    def _run(self) -> TuneResult:
        self._say("the baseline")
        self.ev = ev = Evaluator(self.engine, self.program, 10**9, "tune", cancel=self.cancel)
        base = ev.result.best  # the untransformed program: a start must beat it beyond the noise
        composed = self.compose()
        self._say("the start")
        cands = [composed] + ([self.start_schedule] if to_text(self.start_schedule) != to_text(composed) else [])
        started, t_start = True, time.monotonic()
        for s in cands:
            try:
                ev.measure(s)
            except BudgetExhausted:
                started = False
                break
        self.start_m = ev.result.best
        self.composed = current = ev.result.schedule
        m = ev.memo.get(to_text(composed))
        if m is not None:  # the composition of known schedules, taken as a settled one is (_settle)
            self._choose(m, composed)
        # the model's measurement time (a compile and a timing): compositions are measured at once when it is
        # cheap, else at the end, for which `reserve` is kept
        if all(m.cached for m in ev.memo.values()):  # no compile seen: the engine's estimate of one
            self._model_took(3 * COMPILE_S_PER_OP * len(self.program.ops) + 1.0)
        else:
            self._model_took((time.monotonic() - t_start) / max(1, len(cands)))
        searched = not all(w.start == "tuned" for w in self.workloads)
        if not searched:
            for w in self.workloads:
                w.state = "known"
        else:
            self._profile(current)
            total = sum(w.ms for w in self.workloads)
            todo = self._producers_first(sorted((w for w in self.workloads if w.start != "tuned"), key=lambda w: -w.ms))
            self._take_out([w for w in todo if self.program.op(w.ops[0]).name != "linalg.fill"])
            rng = np.random.default_rng(self.seed)
            ended: list[Workload] = []
            for w in todo:
                if self.cancel.is_set() or time.monotonic() >= self.deadline - self.reserve:
                    break
                if self.program.op(w.ops[0]).name == "linalg.fill" or (total and w.ms < SMALL_SHARE * total):
                    w.state = "small"  # keeps its start (a fill is not searched: engine.search.base.tunable)
                else:
                    self._climb(w, rng)
                ended.append(w)
            self._restarts(ended, rng)
            for w in self.workloads:
                if w.start == "tuned":
                    w.state = "known"
                elif w.state == "waiting" and started:  # the deadline came first: it keeps its (measured) start
                    w.state = "unreached"
                    ended.append(w)
            self._say("the tuned model")
            try:
                self._settle()
            except BudgetExhausted:
                pass
        r = ev.result
        best_m, best_s = r.best, r.schedule
        if self.chosen is not None and self.chosen[0].time_ms < best_m.time_ms:
            best_m, best_s = self.chosen
        if searched:
            if not self.interrupted.is_set():
                self._profile(best_s, late=True)
            for w in ended:  # known to later runs (a cut one is searched again with `continue_cut`)
                self.db.mark_tuned(self.machine, w.key, self._shared_text(best_s, w), w.ms,
                                   w.measurements, w.label, w.state)
        self._say("done")
        alone = sum(w.measurements for w in self.workloads if w.alone)
        return TuneResult(base, self.start_m, best_m, best_s, self.workloads, r.candidates + alone,
                          self.elapsed, searched)

    def _restarts(self, ended: list[Workload], rng: np.random.Generator) -> None:
        """Minutes left once every workload reached a local optimum go to restarts (the seed paper's): each
        workload tuned alone climbs again from its best moved by KICK random steps, the most time first, each
        given a share of the time left like its share of the model's time, until the deadline, MAX_RESTARTS
        rounds, or, for a workload, RESTART_PATIENCE restarts in a row that found nothing faster."""
        stale: dict[str, int] = {}
        for _ in range(MAX_RESTARTS):
            again = [w for w in ended if w.state == "tuned" and w.key in self._alone_ctx
                     and stale.get(w.key, 0) < RESTART_PATIENCE]
            if not again or self.cancel.is_set():
                return
            total = sum(w.ms for w in again) or 1.0
            for w in sorted(again, key=lambda w: -w.ms):
                left = self.deadline - self.reserve - time.monotonic()
                if left < MIN_SLICE_S or self.cancel.is_set():
                    return
                t0 = time.monotonic()
                self.current, w.restarts = w, w.restarts + 1
                self._say(f"tuning {w.label} (restart {w.restarts})")
                end = min(t0 + max(MIN_SLICE_S, left * (w.ms or total / len(again)) / total), self.deadline - self.reserve)
                alone = self.alone.get(w.key)
                assert isinstance(alone, Program)
                ev = self._alone_ctx[w.key][0]
                before = ev.result.schedule
                self._climb_alone(w, alone, end, rng, kick=KICK)
                stale[w.key] = 0 if ev.result.schedule is not before else stale.get(w.key, 0) + 1
                w.seconds += time.monotonic() - t0
                self.current = None

    def _producers_first(self, todo: list[Workload]) -> list[Workload]:
        """`todo` (the most time first) with each workload after the workloads of the producers tiled fusion
        would fuse into its ops. A consumer's own program holds its producer with the producer's op schedule in
        the model when the consumer's climb starts: tuned after the producer, a candidate that fuses it (TF)
        has to beat the producer's tuned schedule, not its start. Tuned before it, a WaveNet's transposes
        fused their untransformed dilated convolutions (TF(0,0,1) T(1,1,0) NT, faster than the untransformed
        convolution beside them) and kept the convolutions' tuned, vectorized schedule out of the model: 4 of
        its 46 ops took 2.4 of its 2.8 ms."""
        keys = wl.of_program(self.program)
        by_key = {w.key: w for w in todo}
        out: list[Workload] = []
        placed: set[str] = set()

        def place(w: Workload, seen: set[str]) -> None:
            if w.key in placed or w.key in seen:
                return
            seen.add(w.key)
            for op_id in w.ops:
                producer = self.program.op(op_id).fusion_producer
                p = by_key.get(keys[producer]) if producer else None
                if p is not None:
                    place(p, seen)
            placed.add(w.key)
            out.append(w)

        for w in todo:
            place(w, set())
        return out

    def _take_out(self, todo: list[Workload]) -> None:
        """Each workload of `todo` as a program of its own (engine.ir.extract): its first op and the producer
        tiled fusion would fuse; `self.alone[key]` is that program, or why it cannot be."""
        self._say("taking the workloads out")
        groups = []
        for w in todo:
            op = self.program.op(w.ops[0])
            groups.append([op.id] + ([op.fusion_producer] if op.fusion_producer else []))
        try:
            progs = extract(self.program, groups) if groups else []
        except EngineError as e:
            progs = [str(e)] * len(groups)
        for w, prog in zip(todo, progs):
            if isinstance(prog, Program) and w.key not in wl.of_program(prog).values():
                prog = "its op has another workload on its own"
            self.alone[w.key] = prog

    # ------------------------------------------------------------------------------------------
    def _say(self, stage: str) -> None:
        self.stage = stage
        if self.on_progress is not None:
            self.on_progress(self)

    def _origin(self, program: Program, schedule: Schedule, profile: bool = False) -> str:
        """Who timed a record: on a Ray cluster, its node (engine.cluster); "" here (the database says here)."""
        origin = getattr(self.engine, "origin", None)
        return origin(program, schedule, profile) if origin is not None else ""

    def _legal(self, schedule: Schedule) -> bool:
        return self._legal_in(self.program, schedule)

    def _give(self, schedule: Schedule, w: Workload, text: str, every: bool = False) -> Schedule | None:
        """`schedule` with `text` for every op of `w` where it is legal (None: legal for none, or with
        `every`, not legal for all)."""
        out, given = schedule, 0
        for op_id in w.ops:
            cand = self._with(self.program, out, op_id, text)
            if cand is not None:
                out, given = cand, given + 1
        return out if given and (given == len(w.ops) or not every) else None

    def _with(self, program: Program, schedule: Schedule, op_id: str, text: str) -> Schedule | None:
        """`schedule` with `text` for op `op_id` of `program` when that is legal; else with the op's fusion
        producer given the first legal of V and NT instead of its own schedule, which can be legal only inside
        the op's tiled fusion (a matmul's fill `T(4,0) V` within `TF(4,32,0)`: with any other tiling of the
        matmul every candidate was refused, and its climb measured nothing); None when neither is."""
        cand = wl.with_ops(schedule, [op_id], text)
        if self._legal_in(program, cand):
            return cand
        producer = program.op(op_id).fusion_producer
        if producer and wl.op_text(cand, producer) not in ("", "V", "NT"):
            for plain in ("V", "NT"):
                again = wl.with_ops(cand, [producer], plain)
                if self._legal_in(program, again):
                    return again
        return None

    def _legal_in(self, program: Program, schedule: Schedule) -> bool:
        try:
            check_schedule(program, schedule, self.engine.limits, self.engine.openmp)
            return True
        except ScheduleError:
            return False

    def _shared_text(self, schedule: Schedule, w: Workload) -> str:
        """The op schedule of one of `w`'s ops that is legal for all of them (ops of one workload can hold
        different ones: the policy sees their neighbours), else the first op's."""
        texts = list(dict.fromkeys(wl.op_text(schedule, o) for o in w.ops))
        for text in texts:
            try:
                if self._give(schedule, w, text, every=True) is not None:
                    return text
            except ScheduleError:
                continue
        return texts[0]

    def compose(self) -> Schedule:
        """Each workload's tuned or best known op schedule, where it is legal for every op of the workload;
        the ops it leaves take the caller's start (asked for only then: the policy's one pass)."""
        sched = self._compose_on(Schedule({}))
        if all(w.start == "tuned" for w in self.workloads):
            self.start_schedule = Schedule({})
            return sched
        start = self.start_fn() if callable(self.start_fn) else self.start_fn
        self.start_schedule = start if start is not None and self._legal(start) else Schedule({})
        return self._compose_on(self.start_schedule)

    def _compose_on(self, sched: Schedule) -> Schedule:
        for w in self.workloads:
            w.start = "start"
            tuned = self.db.tuned(self.machine, w.key)
            best = self.db.best(self.machine, w.key)
            known = tuned is not None and (tuned["state"] == "tuned" or not self.continue_cut)
            for how, text in (("tuned" if known else "database", tuned["schedule"] if tuned else None),
                              ("database", best.schedule if best else None)):
                if text is None:
                    continue
                try:
                    got = self._give(sched, w, text, every=True)
                except ScheduleError:
                    got = None
                if got is not None:
                    sched, w.start = got, how
                    break
        return sched

    def _profile(self, schedule: Schedule, late: bool = False) -> None:
        """Per-op times of `schedule` into each workload's `ms` and the database (past the deadline only
        when `late`: the final schedule's profile)."""
        if self.cancel.is_set() and not late:
            return
        self._say("the per-op profile")
        try:
            groups = self.engine.per_op(self.program, schedule)
        except EngineError:
            return  # the profile is a guide: without it, workloads go in program order
        ms: dict[str, float] = {}
        for g in groups:
            target = g.get("fused_into") or g["ops"][-1]
            ms[target] = ms.get(target, 0.0) + g["ms"]
        for w in self.workloads:
            w.ms = sum(ms.get(o, 0.0) for o in w.ops)
            text = wl.op_text(schedule, w.ops[0])
            per = [ms[o] for o in w.ops if o in ms and wl.op_text(schedule, o) == text]
            if per:
                op = self.program.op(w.ops[0])
                self.db.add(Record(self.machine, w.key, text, float(np.median(per)), w.label,
                                   wl.describe(op, self.program), self.program.sha256,
                                   self._origin(self.program, schedule, profile=True)))

    def _slice(self, w: Workload) -> float:
        """Wall-clock seconds for `w`: the remaining time shared by the waiting workloads' time (`w` among them)."""
        left = self.deadline - self.reserve - time.monotonic()
        waiting = [x for x in self.workloads if x.state == "waiting" or x is w]
        total = sum(x.ms for x in waiting) or 1.0
        share = (w.ms / total) if w.ms else 1.0 / max(1, len(waiting))
        return max(MIN_SLICE_S, left * share)

    def _climb(self, w: Workload, rng: np.random.Generator) -> None:
        """Tune `w` alone (its op and producer as a program of their own) where it can be taken out, else
        on the whole model; its slice of the time at most, the reserve kept."""
        t0 = time.monotonic()
        end = min(t0 + self._slice(w), self.deadline - self.reserve)
        self.current, w.state = w, "tuning"
        self._say(f"tuning {w.label}")
        alone = self.alone.get(w.key)
        if isinstance(alone, Program):
            w.alone = True
            converged = self._climb_alone(w, alone, end, rng)
        else:
            converged = self._climb_model(w, end, rng)
        w.state = "tuned" if converged else "cut"
        w.seconds += time.monotonic() - t0
        self.current = None

    def _climb_model(self, w: Workload, end: float, rng: np.random.Generator) -> bool:
        ev = self.ev
        assert ev is not None
        base, before = self.composed, ev.result.best
        try:
            converged = self._hill(ev, w.ops[0], base, lambda text: self._give(base, w, text), end, w, rng)
        except BudgetExhausted:
            converged = False
        if ev.result.best is not before:  # a faster model (its candidates hold the compositions not yet measured)
            self.composed = ev.result.schedule
        return converged

    def _climb_alone(self, w: Workload, prog: Program, end: float, rng: np.random.Generator, kick: int = 0) -> bool:
        """Hill-climb `w`'s op schedule on its own program (`self.alone`), then give the best to every op of
        `w` in the model: measured there at once when a model measurement is cheap, else with the others
        at the end (`_settle`). With `kick`, a restart: the climb of an earlier call goes on from its best
        moved by `kick` random steps."""
        ctx = self._alone_ctx.get(w.key)
        model_rep = self.program.op(w.ops[0])
        if ctx is None:
            keys = wl.of_program(prog)
            rep = next(o for o, k in keys.items() if k == w.key)
            op = prog.op(rep)
            base = Schedule({})
            if op.fusion_producer and model_rep.fusion_producer:
                base = self._producer_base(prog, op.fusion_producer,
                                           wl.op_text(self.composed, model_rep.fusion_producer))
            start_text = wl.op_text(self.composed, w.ops[0])
            # a producer other ops of the model read too is computed there anyway: fused into this op (TF) it is
            # computed twice, which its program alone cannot show (a speech front-end's transpose that feeds a
            # group norm's statistics and its GELU was fused into the GELU, the fastest alone)
            shared = bool(model_rep.fusion_producer) and len(self.program.op(model_rep.fusion_producer).consumers) > 1

            def give(text: str) -> Schedule | None:
                if shared and text.startswith("TF") and text != start_text:
                    return None
                return self._with(prog, base, rep, text)
        else:
            ev, rep, give, start_text = ctx

        converged = False
        try:
            if ctx is None:
                ev = None
                ev = Evaluator(self.engine, prog, 10**9, "tune", cancel=self.cancel)
                self._alone_ctx[w.key] = (ev, rep, give, start_text)
                self._start_alone(ev, w, rep, give, start_text)
            converged = self._hill(ev, rep, ev.result.schedule, give, end, w, rng, kick)
        except BudgetExhausted:  # stopped: what it found so far is still given to the model
            if ev is None:
                return False
        except EngineError:  # its program does not run alone: on the whole model instead
            w.alone = False
            self._alone_ctx.pop(w.key, None)
            return self._climb_model(w, end, rng)
        text = wl.op_text(ev.result.schedule, rep)
        if ev.result.best.ok and ev.result.best.time_ms:
            self.db.add(Record(self.machine, w.key, text, ev.result.best.time_ms, w.label,
                               wl.describe(model_rep, self.program), prog.sha256,
                               self._origin(prog, ev.result.schedule)))
        if text != wl.op_text(self.composed, w.ops[0]):
            composed = self._give(self.composed, w, text)
            if composed is not None:
                self.composed, self.given[w.key] = composed, text
                if not self.reserve:  # a model measurement is cheap: the composition is measured now
                    try:
                        self._settle()
                    except BudgetExhausted:
                        pass
        return converged

    def _producer_base(self, prog: Program, producer: str, text: str) -> Schedule:
        """The producer's op schedule in the model (`text`) for a consumer's own program, where the producer has
        no producer of its own: a tiled fusion (TF) of it has nothing to fuse there and is not legal, so its
        tiling is given as a parallel one (TP; T without OpenMP), the nearest legal schedule. Given as it
        was, the producer fell back to NT (`_with`): a WaveNet's transpose measured its candidates against
        its dilated convolution untransformed (1.06 ms, tuned 0.02 ms), and fusing that convolution
        unvectorized (TF(0,1,0) NT) won there and took 1.3 of the model's 1.7 ms."""
        texts = [text] + ([f"TP{text[2:]}", f"T{text[2:]}"] if text.startswith("TF(") else [])
        for t in texts:
            cand = wl.with_ops(Schedule({}), [producer], t)
            if self._legal_in(prog, cand):
                return cand
        return wl.with_ops(Schedule({}), [producer], text)

    def _start_alone(self, ev: Evaluator, w: Workload, rep: str, give: Callable[[str], Schedule | None],
                     start_text: str) -> None:
        """The climb's start on `w`'s own program: its op schedule in the model and hill climbing's starting
        points (engine.search.hill.starts), each a quick figure (a measurement here is cheap); the fastest
        by its figure becomes the best once a paired comparison with the best so far confirms it."""
        texts = [start_text] + [wl.op_text(schedule_from(ev, p), rep) for p in starts(ev)]
        seen: list[tuple[Measurement, Schedule]] = []
        if ev.width > 1:
            ev.prefetch([c for c in (give(t) for t in dict.fromkeys(texts)) if c is not None], quick=True)
        for text in dict.fromkeys(texts):
            cand = give(text)
            if cand is not None:
                before = ev.result.candidates
                seen.append((ev.measure(cand, quick=True), cand))
                w.measurements += ev.result.candidates - before
        ok = [(m, c) for m, c in seen if m.ok and m.time_ms]
        if not ok:
            return
        m, cand = min(ok, key=lambda mc: mc[0].time_ms)
        best, best_s = ev.result.best, ev.result.schedule
        if cand is best_s or not best.ok or not best.time_ms or m.time_ms >= best.time_ms:
            return
        if not to_text(best_s):  # the untransformed program: its figure is every measurement's pair
            ev.take(m, cand)
            return
        c = self.engine.compare(ev.program, cand, best_s, cancel=self.cancel)
        w.compared += 1
        if c.status == "cancelled":
            raise BudgetExhausted()
        if c.faster:
            ev.take(m, cand)
        else:
            w.close += 1

    def _model_took(self, seconds: float) -> None:
        """A model measurement's wall time: whether compositions are measured at once, and the reserve."""
        self.model_s = seconds
        # the end's composition and its fallback (RESERVE_MODELS) are kept time for when it is expensive
        self.reserve = 0.0 if seconds < CHEAP_MODEL_SHARE * self.seconds else RESERVE_MODELS * seconds

    def _settle(self) -> None:
        """Measure the composed schedule on the model (`_try`). When it loses, the workloads whose op schedule
        it changed are tried one by one on the best, the most time first, until the time is up: one op
        schedule tuned on its own program and slower on the model (its producer's time there hid its own)
        undid every other workload's gain with it."""
        best_s = self._best()[1]
        if to_text(self.composed) == to_text(best_s):
            return
        given = [w for w in self.workloads if w.key in self.given]
        if self._try(self.composed) or len(given) < 2:
            self.given.clear()
            return
        for w in sorted(given, key=lambda w: -w.ms):
            cand = self._give(self._best()[1], w, self.given.pop(w.key))
            if cand is not None and not self.cancel.is_set():
                self._try(cand)
        self.given.clear()

    def _try(self, schedule: Schedule) -> bool:
        """`schedule` measured on the model (a quick figure): taken when it beats the best model schedule
        beyond the noise, or, unless its figure is clearly the slower (SETTLE_SLOWER), when a paired
        comparison with the best (Engine.compare) finds it faster: its figure is then the best's over the
        paired ratio, both taken in one burst. A schedule that fails or loses is undone (`composed` is the
        best again)."""
        ev = self.ev
        assert ev is not None
        best_m, best_s = self._best()
        t = time.monotonic()
        m = ev.measure(schedule, quick=True)
        if not m.cached:
            self._model_took(time.monotonic() - t)
        # a quick figure alone does not undo a composition: on a noisy host it moves with the moment it was
        # taken in, and the whole model's tuning rests on it; only a clearly slower one is undone unpaired
        if m.ok and best_m.ok and not m.beats(best_m) and m.time_ms < SETTLE_SLOWER * best_m.time_ms:
            c = self.engine.compare(self.program, schedule, best_s, cancel=self.cancel)
            if c.status == "cancelled":
                raise BudgetExhausted()
            won = c.faster
            if won and m.time_ms >= best_m.time_ms:  # the quick figure was taken in a slower moment than the best's
                m = paired_figure(m, best_m, c)
        else:
            won = m.ok and (not best_m.ok or m.beats(best_m))
        if won:
            ev.take(m, schedule)
            self.chosen = None
            self.composed = schedule
        else:
            self.composed = best_s
        return won

    def _best(self) -> tuple[Measurement, Schedule]:
        """The best model schedule so far: the evaluator's, or the start's composition chosen over it
        (`_choose`)."""
        ev = self.ev
        assert ev is not None
        if self.chosen is not None and self.chosen[0].time_ms < ev.result.best.time_ms:
            return self.chosen
        return ev.result.best, ev.result.schedule

    def _choose(self, m: Measurement, schedule: Schedule) -> None:
        """A composition within the noise of the best is chosen when its figure is the faster one: the
        same rule in a run that searches and in a later one that only composes what the database knows (a
        rule beyond the noise there kept the baseline a first run had lost to on the same figures)."""
        best = self.ev.result.best if self.ev is not None else None
        if self.chosen is not None and (best is None or self.chosen[0].time_ms < best.time_ms):
            best = self.chosen[0]
        if m.ok and (best is None or not best.ok or m.time_ms < best.time_ms):
            self.chosen = (m, schedule)

    def _hill(self, ev: Evaluator, rep: str, current: Schedule, give: Callable[[str], Schedule | None],
              end: float, w: Workload, rng: np.random.Generator, kick: int = 0) -> bool:
        """Hill-climb op `rep` of `ev.program` from the recipe nearest its op schedule in `current` (moved by
        `kick` random steps first: a restart); `give(text)` makes the candidate with op schedule `text` (None:
        not legal). A candidate gets a quick figure (Engine.measure(quick=True)); it is taken when it beats the
        current point beyond the noise, or when its figure is the faster and a paired comparison with the
        current point (Engine.compare: both timed in one interleaved burst, so a slow spell of the host moves
        both) finds it faster beyond that comparison's noise. The evaluator's best follows every point taken
        that is faster than it. True at a local optimum; BudgetExhausted at the deadline."""
        point = recipes_of(ev, current, starts(ev)[0]).get(rep)
        if point is None:
            return True
        allowed = {rep: kinds(ev, rep)}
        point = kicked(ev, {rep: point}, allowed, rng, kick)[rep]

        def try_point(p) -> tuple[Measurement, Schedule] | None:
            cand = give(wl.op_text(schedule_from(ev, {rep: p}), rep))
            if cand is None:
                return None
            before = ev.result.candidates
            m = ev.measure(cand, quick=True)
            w.measurements += ev.result.candidates - before
            self._say(f"tuning {w.label}")
            return m, cand

        def faster(m: Measurement, cand: Schedule, than: tuple[Measurement, Schedule]) -> bool:
            """`cand` (figure `m`) is faster than `than` beyond the noise: by the figures, or paired."""
            old, old_s = than
            if to_text(cand) == to_text(old_s) or not m.ok:
                return False
            if ev.better(m, old):
                return True
            if not old.ok or not old.time_ms or m.time_ms >= old.time_ms:
                return False
            if self.cancel.is_set():
                raise BudgetExhausted()
            c = self.engine.compare(ev.program, cand, old_s, cancel=self.cancel)
            w.compared += 1
            if c.status == "cancelled":
                raise BudgetExhausted()
            if not c.faster:
                w.close += 1
            return c.faster

        def take(got) -> None:
            nonlocal here
            here = got
            w.kept += 1
            best = (ev.result.best, ev.result.schedule)
            if got[1] is not best[1] and (not kick or faster(*got, best)):
                ev.take(*got)

        got = try_point(point)  # the recipe nearest the current op schedule (it may be that schedule)
        here: tuple[Measurement, Schedule] = (ev.result.best, ev.result.schedule)
        if got is not None and got[0].ok and (kick or faster(*got, here)):
            take(got)

        def improves(p) -> bool:
            nonlocal got
            got = try_point(p[rep])
            return got is not None and faster(*got, here)

        def ahead(points) -> None:  # a cluster's idle nodes measure the next candidates (engine.cluster)
            cands = [give(wl.op_text(schedule_from(ev, {rep: p[rep]}), rep)) for p in points]
            ev.prefetch([c for c in cands if c is not None], quick=True)

        while time.monotonic() < end:
            taken = hill_step(neighbours(ev, {rep: point}, allowed), rng, improves, stop=lambda: time.monotonic() >= end,
                              ahead=ahead, width=ev.width)
            if taken is None:
                return time.monotonic() < end  # a local optimum, unless the deadline stopped the step
            take(got)
            point = taken[rep]
        return False


def tune(engine: Engine, program: Program, db: TuningDB, seconds: float,
         start: Schedule | Callable[[], Schedule | None] | None = None,
         seed: int = 0, on_progress: Callable[[Tuner], None] | None = None,
         cancel: threading.Event | None = None, continue_cut: bool = False) -> TuneResult:
    """Tune `program` for at most `seconds` (see the module's docstring); the best schedule measured."""
    return Tuner(engine, program, db, seconds, start, seed, on_progress, cancel, continue_cut).run()
