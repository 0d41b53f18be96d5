"""The engine's front door: measure a (program, schedule) in a worker, with the cache in front."""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from collections.abc import Callable

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, DEFAULT_MEASURE, Limits, MeasureConfig
from mlir_rl_tui.engine.ir.program import Program, TensorSpec, sha256_text
from mlir_rl_tui.engine.measure import interval_floor
from mlir_rl_tui.engine.measure.contention import (
    FAR_STALE,
    HANDOFF_PROGRAM,
    HANDOFF_SCHEDULE,
    STATE_PARALLEL,
    STATE_SAMPLE,
    STATE_SERIAL,
    Fastest,
)
from mlir_rl_tui.engine.measure.machine import state_of
from mlir_rl_tui.engine.measure.measurement import TRANSIENT, Comparison, Measurement, widen
from mlir_rl_tui.engine.measure.roofline import Peaks, empty_peaks, measure_peaks, peaks_from_record, place
from mlir_rl_tui.engine.measure.timing import STEADY_FACTOR
from mlir_rl_tui.engine.run.child import Cancelled, ChildDied, ChildTimeout
from mlir_rl_tui.engine.run.compile import parallel_runtime
from mlir_rl_tui.engine.run.pool import WorkerPool
from mlir_rl_tui.engine.schedule.notation import Schedule, to_text
from mlir_rl_tui.engine.schedule.state import check_schedule, effective
from mlir_rl_tui.engine.schedule.transforms import script, uses_parallel
from mlir_rl_tui.engine.store.cache import Cache
from mlir_rl_tui.engine.store.keys import cache_key, machine_key, torch_reference

#: Earlier figures of one (program, schedule) an engine pairs a new one with (engine.measure.interval_floor).
SEEN = 5
#: How much faster than a flagged figure (unsteady, far or contended) the machine's steady one may be.
FLAGGED_SPAN = 2.0


class Engine:
    """Measures schedules for the app, search, the env and training through one worker pool and cache."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, config: MeasureConfig = DEFAULT_MEASURE,
                 cache: Cache | None | bool = True, workers: int | None = None, reuse: bool = True) -> None:
        """`reuse=False` measures every schedule again (results are still stored, and the machine's
        roofline still comes from the cache)."""
        self.limits = limits
        self.reuse = reuse
        self.config = config
        self.cache: Cache | None = Cache() if cache is True else (cache if isinstance(cache, Cache) else None)
        self.pool = WorkerPool(workers or config.workers, config.memory_limit_bytes, config.worker_nice)
        self.runtime = parallel_runtime()  # ("openmp"|"async", library) or None
        self.machine = machine_key(self.runtime)
        self.openmp = self.runtime is not None  # TP is masked without a parallel runtime
        self._lock = threading.Lock()
        # engines sharing a cache folder share the timing locks (engine.run.worker._flock)
        lockdir = self.cache.folder if self.cache is not None and self.cache.usable else tempfile.gettempdir()
        self._lockfile = os.path.join(lockdir, f"timing-{os.getuid()}.lock")
        self._cpu_lockfile = os.path.join(lockdir, f"cpu-{os.getuid()}.lock")
        self.evaluated = 0  # measurements really made (not from the cache)
        self._peaks: Peaks | None = None  # the machine's record (_record)
        self._peaks_failed = False  # the roofline's kernels failed: not tried again by this engine
        self.cores = len(os.sched_getaffinity(0)) if self.openmp else 1
        self._handoff_req: dict | None | bool = None  # False: the probe could not be built
        #: the fastest hand-off probe of this machine's parallel timings, in us: its near state, against which
        #: a timing counts as far (engine.measure.contention.far); kept in the machine's record (Peaks.handoff_us)
        self.near_handoff_us: float | None = None
        self._far_run: list[float] = []  # the probes of the far timings in a row just before (FAR_STALE)
        #: the state probe (engine.measure.contention) per kind (False: serial, True: parallel): its request entry, built
        #: once (False: could not be built), and its fastest time on this machine (kept in Peaks.probe_ms)
        self._state_req: dict[bool, dict | bool] = {}
        self.steady_ref: dict[bool, Fastest] = {}
        #: the figures this engine took of each (program, schedule), the latest SEEN: repeats to learn from
        self._seen: dict[tuple[str, str], list[float]] = {}

    # ------------------------------------------------------------------------------------------
    def baseline(self, program: Program, on_progress: Callable | None = None,
                 cancel: threading.Event | None = None, deadline: float | None = None) -> Measurement:
        """The untransformed program with the same pipeline (paper Sec. VII-A.3)."""
        return self.measure(program, Schedule({}), on_progress=on_progress, cancel=cancel, deadline=deadline)

    def measure(self, program: Program, schedule: Schedule, *, check: bool = True, use_cache: bool = True,
                on_progress: Callable | None = None, cancel: threading.Event | None = None,
                deadline: float | None = None, quick: bool = False) -> Measurement:
        """Apply, compile, run, check and time `schedule` in a worker; never raises for a bad schedule
        that passed `check` (illegal ones raise ScheduleError when check=True). With a `deadline`
        (time.time()), timing rounds stop before it (`Measurement.cut_short`); `cancel` stops the rest.
        `quick`: a figure to rank candidates by (a search's): the least rounds (QUICK_TIMING), and a bad host
        state is flagged rather than waited out (a flagged figure is not cached); `compare` decides between
        two close ones."""
        if check:
            check_schedule(program, schedule, self.limits, self.openmp)
        # NT emits no transform, nor does a T that tiles nothing: `op0: T(8,32,1) T(8,32,1) NT` is measured
        # (and cached) as `op0: T(8,32,1)`, and an all-NT schedule is the baseline itself, not a second noisy
        # measurement of the same code
        full = to_text(schedule)
        m = self._measure(program, effective(program, schedule, self.limits, self.openmp), check, use_cache,
                          on_progress, cancel, deadline, quick)
        m.schedule = full
        return m

    def _measure(self, program: Program, schedule: Schedule, check: bool, use_cache: bool,
                 on_progress: Callable | None, cancel: threading.Event | None,
                 deadline: float | None = None, quick: bool = False) -> Measurement:
        text = to_text(schedule)
        parallel = bool(text) and uses_parallel(schedule) and self.openmp
        prev = None  # the cache's earlier figure: served, or paired with the new one (engine.measure.interval_floor)
        if self.cache is not None:
            prev = self.cache.get(cache_key(program), text, self.machine, parse=Measurement.from_record)
            # checked: a corrupted record is reported, dropped and measured again; so is a wrong result (a bug
            # of the version that measured it, which a newer one may have fixed: it is rare, and measured anew),
            # and an outcome of a moment rather than of the schedule (TRANSIENT)
            if use_cache and self.reuse and prev is not None and prev.status not in ("wrong-result", *TRANSIENT):
                prev.cached = True
                return self._place(program, prev, parallel)
            if use_cache and self.reuse and prev is None:
                imported = self._imported(program, schedule, text, check, on_progress)
                if imported is not None:
                    return self._place(program, imported, parallel)
        base = None
        if text:
            # the baseline alone gets half the time left: the schedule's timing pairs it again
            half = None if deadline is None else time.time() + (deadline - time.time()) / 2
            base = self.baseline(program, on_progress, cancel, half)
            if not base.ok:
                return Measurement(status=base.status, schedule=text, error=f"baseline: {base.error}")
        body = script(program, schedule, self.limits, check=check) if text else None
        m = self._run(program, text, body, base, on_progress, cancel, parallel, deadline,
                      extra=QUICK if quick and text else None)[0]
        if m.status == "cancelled":
            return m
        m.runtime = self.runtime[0] if parallel and self.runtime else "serial"
        if not text:
            m.baseline_ms, m.baseline_ci_ms = m.time_ms, m.time_ci_ms
        elif not m.baseline_ms and base is not None:  # a failure: the baseline for the record
            m.baseline_ms, m.baseline_ci_ms = base.time_ms, base.time_ci_ms
        if m.ok and m.time_ms and m.baseline_ms:
            m.speedup = m.baseline_ms / m.time_ms
            rel = m.speedup_ci or [1.0, 1.0]  # _run leaves the paired ratios' relative interval here
            m.speedup_ci = [m.speedup * rel[0], m.speedup * rel[1]]
        if m.ok and not (m.flagged or m.cut_short):
            # two figures of one thing at different moments: the baseline timed alone and paired, and this
            # schedule's earlier figures and now: the ones this engine took (against each: a kernel can drift
            # 5% over a minute in steps of 1%), else the cache's (engine.measure.interval_floor)
            pairs = []
            if base is not None and not (base.flagged or base.cut_short):
                pairs.append((base.time_ms, m.baseline_ms))
            key = (program.sha256, text)
            with self._lock:
                seen = self._seen.setdefault(key, [])
                earlier = list(seen) or ([prev.time_ms] if prev is not None and prev.ok else [])
                seen[:] = [*seen, m.time_ms][-SEEN:]
            pairs += [(t, m.time_ms) for t in earlier]
            self.note_repeats(pairs)
        self._place(program, m, parallel, on_progress)
        self._floor(m)
        # a disagreement with PyTorch's reference depends on a file beside the program, not in the cache's key
        against_torch = m.status == "wrong-result" and "PyTorch" in (m.error or "")
        # a contended, far or unsteady timing is not stored: measured again, it may get the cores it needs; nor
        # is one cut short by a deadline
        if use_cache and self.cache is not None and not against_torch and not m.contended and not m.far \
                and not m.unsteady and not m.cut_short and not (base is not None and base.cut_short) \
                and m.status not in TRANSIENT:
            self.cache.put(cache_key(program), text, self.machine, m.to_record())
        return m

    def _imported(self, program: Program, schedule: Schedule, text: str, check: bool,
                  on_progress: Callable | None) -> Measurement | None:
        """A figure imported for this machine (engine.store.measurement_file: `dataset import --as-this-machine`),
        served only once this engine has compiled, run and checked the schedule here: the first lookup
        validates it (Engine.validate) and files it as validated; a schedule that does not validate is
        measured here instead (None), whatever the file said. None too when nothing was imported for it."""
        from mlir_rl_tui.engine.store.measurement_file import IMPORTED, VALIDATED

        key = cache_key(program)
        done = self.cache.get(key, text, self.machine + VALIDATED, parse=Measurement.from_record)
        if done is None:
            got = self.cache.get(key, text, self.machine + IMPORTED, parse=Measurement.from_record)
            if got is None or not got.ok or not text:  # a failure, or the baseline: measured here
                return None
            if text and not self.validate(program, schedule, check=check, on_progress=on_progress).ok:
                return None
            self.cache.put(key, text, self.machine + VALIDATED, got.to_record())
            done = got
        done.cached = True
        return done

    def _place(self, program: Program, m: Measurement, parallel: bool,
               on_progress: Callable | None = None) -> Measurement:
        """gflops, and peak_fraction and bound from the machine's roofline (the parts this program needs are
        measured on first use and cached)."""
        if m.ok and m.time_ms:
            m.gflops = program.flops / m.time_ms / 1e6
            peaks = self.peaks((parallel, program.compulsory_bytes), on_progress)
            if peaks is not None and peaks.knows((parallel, program.compulsory_bytes)):
                b = place(program, m.time_ms, parallel, peaks)
                m.peak_fraction, m.bound = b.peak_fraction, b.bound
        return m

    def repeat_floor(self) -> float:
        """How far a repeat of a measurement moves on this machine (engine.measure.interval_floor.floor), relative."""
        with self._lock:
            return interval_floor.floor(self._record().repeats)

    def repeat_pairs(self) -> int:
        """How many pairs the floor is learnt from (engine.measure.interval_floor.WINDOW at most)."""
        with self._lock:
            return len(self._record().repeats)

    def note_repeats(self, pairs: list[tuple[float | None, float | None]]) -> None:
        """Learn from pairs of figures of one thing taken at different moments (engine.measure.interval_floor)."""
        if not pairs:
            return
        with self._lock:
            rec = self._record()
            for a, b in pairs:
                rec.repeats = interval_floor.add(rec.repeats, a, b)
            self._store_record()

    def _floor(self, m: Measurement) -> None:
        """Widen a fresh figure's intervals to what a repeat moves here (engine.measure.interval_floor): the time's by the
        floor, the speedup's (two such figures) by the floor times sqrt(2)."""
        if not m.ok or m.cached or not m.time_ci_ms:
            return
        f = self.repeat_floor()
        flagged = m.flagged
        m.state = "unstable" if flagged else state_of(1 + f, None, None)
        widen(m, f)
        if m.speedup and m.speedup_ci:
            g = math.exp(math.sqrt(2) * math.log1p(f))
            m.speedup_ci = [min(m.speedup_ci[0], m.speedup / g), max(m.speedup_ci[1], m.speedup * g)]

    def peaks(self, need: tuple[bool, int] | None = None, on_progress: Callable | None = None) -> Peaks | None:
        """This machine's roofline (engine.measure.roofline), with what `need` = (parallel, working-set bytes) asks
        measured if it was not (about a second: the FMA peak and one bandwidth level), or with `need` None
        all of it (10-40 s); cached per machine. None when it cannot be measured."""
        with self._lock:
            rec = self._record()
            if rec.knows(need) or self._peaks_failed:
                return rec if rec.knows(need) else None
            if on_progress is not None:
                on_progress("roofline", 0, 0)
            new = self._measure_peaks(need, rec)
            if new is None or not new.knows(need):
                self._peaks_failed = True
                return None
            # what the record learnt meanwhile (probes, pairs) stays
            new.handoff_us, new.probe_serial_ms, new.probe_parallel_ms, new.repeats = \
                rec.handoff_us, rec.probe_serial_ms, rec.probe_parallel_ms, rec.repeats
            self._peaks = new
            self._store_record()
            return new

    def _record(self) -> Peaks:
        """The machine's record (roofline, probes, pairs), read from the cache once; an empty one if there
        is none. Callers hold self._lock."""
        if self._peaks is None:
            rec = self.cache.get_machine(self.machine, parse=peaks_from_record) if self.cache is not None else None
            self._peaks = empty_peaks(self.cores)
            if rec is not None:
                sizes = [[n for n, _ in p.bandwidth_1 + p.bandwidth_all] for p in (rec, self._peaks)]
                if rec.cores == self.cores and sizes[0] == sizes[1]:
                    self._peaks = rec
                else:  # measured at other levels (an older version) or cores: measured again, the rest kept
                    self._peaks.handoff_us, self._peaks.probe_serial_ms, self._peaks.probe_parallel_ms, \
                        self._peaks.repeats = rec.handoff_us, rec.probe_serial_ms, rec.probe_parallel_ms, rec.repeats
        return self._peaks

    def _store_record(self) -> None:
        if self.cache is not None and self._peaks is not None:
            self.cache.put_machine(self.machine, self._peaks.to_json())

    def _note_handoff(self, h: float | None, far: bool) -> None:
        """Keep the near state's probe (engine.measure.contention.far): the fastest seen, in this engine and in the
        machine's record; after FAR_STALE far timings in a row, the fastest of those (a stale reference)."""
        if not h:
            return
        with self._lock:
            self._far_run = [*self._far_run, h] if far else []
            if len(self._far_run) >= FAR_STALE:
                new, self._far_run = min(self._far_run), []
            elif self.near_handoff_us is None or h < self.near_handoff_us:
                new = h
            else:
                return
            self.near_handoff_us = new
            self._record().handoff_us = new
            self._store_record()

    def _measure_peaks(self, need: tuple[bool, int] | None = None, have: Peaks | None = None) -> Peaks | None:
        def run(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool) -> float | None:
            prog = Program(text=text, sha256=sha256_text(text), func_name="forward", args=args, results=[result],
                           ops=[])
            try:
                req = self._request(prog, None, parallel, timing={"min_rounds": 5, "target_rel": 0.02, "budget_s": 0.3})
                res = self.pool.run(req, None, self.config.compile_timeout_s, 300.0)
            except (ChildDied, ChildTimeout, Cancelled):
                return None
            return res.get("time_ms") if res.get("status") == "ok" else None

        return measure_peaks(run, self.cores, need, have)

    def transformed_ir(self, program: Program, schedule: Schedule) -> tuple[str, str]:
        """(status, IR after the transform script or the error line) - for views and export."""
        text = to_text(schedule)
        body = script(program, schedule, self.limits) if text else None
        req = self._request(program, body, False, mode="ir")
        try:
            res = self.pool.run(req, compile_timeout=self.config.compile_timeout_s)
        except (ChildDied, ChildTimeout) as e:
            return "crash", str(e) or type(e).__name__
        if res["status"] != "ok":
            return res["status"], res.get("error", "")
        return "ok", res["transformed_ir"]

    def per_op(self, program: Program, schedule: Schedule) -> list[dict]:
        """Each op's (or fused group's) share of the schedule's time: [{"ops", "ms", "share"}] in program
        order (engine.measure.per_op). Raises EngineError when the schedule does not compile."""
        states = check_schedule(program, schedule, self.limits, self.openmp)
        res, _ = self.worker_job(program, schedule, "the per-op profile", mode="per-op")
        groups = res["per_op"]
        for g in groups:  # a producer fused into its consumer runs (and is timed) inside the consumer's loops
            into = {states[i].fused_into for i in g["ops"] if i in states and states[i].fused_into}
            if into:
                g["fused_into"] = sorted(into)[0]
        return groups

    def worker_job(self, program: Program, schedule: Schedule, what: str, **kw) -> tuple[dict, bool]:
        """Run a job other than a measurement on a schedule already checked against the mask, in a worker,
        with the same script and request as a measurement (`kw`: the job's mode and its fields). Returns the
        worker's answer and whether the kernel is parallel; EngineError (one line, naming `what`) if it fails."""
        from mlir_rl_tui.engine.errors import EngineError

        sched = effective(program, schedule, self.limits, self.openmp)
        text = to_text(sched)
        parallel = bool(text) and uses_parallel(sched) and self.openmp
        req = self._request(program, script(program, sched, self.limits) if text else None, parallel, **kw)
        try:
            res = self.pool.run(req, compile_timeout=self.config.compile_timeout_s)
        except (ChildDied, ChildTimeout, Cancelled) as e:
            raise EngineError(f"{what} failed: {e or type(e).__name__}") from None
        if res["status"] != "ok":
            raise EngineError(f"{res['status']}: {res.get('error', '')}")
        return res, parallel

    def reference(self, program: Program, path: str) -> None:
        """Run the untransformed `program` once in a worker on the engine's seeded inputs and save its output
        at `path` (an .npz like import's PyTorch reference: `output`, `seed`), to check a built library
        against where PyTorch's is not at hand; EngineError (one line) if it fails."""
        self.worker_job(program, Schedule({}), "the untransformed program's run", mode="reference",
                        reference_path=path)

    def compile_only(self, program: Program, schedule: Schedule, *, check: bool = True) -> Measurement:
        """Transform, lower and JIT `schedule` in a worker, without running it: status ok, transform-error,
        compile-error, crash or timeout (no time, not cached). Many times cheaper than `measure`."""
        return self._untimed(program, schedule, check, "compile", None)

    def validate(self, program: Program, schedule: Schedule, *, check: bool = True,
                 on_progress: Callable | None = None) -> Measurement:
        """Transform, compile and run `schedule` once in a worker, and compare its output with the
        untransformed program's on the same seeded inputs, without timing it: status ok (validated),
        transform-error, compile-error, crash, timeout (a run over 10x the baseline) or wrong-result; not
        cached. The mask fuzz (benchmarks/mask_fuzz.py) checks thousands of random schedules with it.
        `on_progress(phase, i, n)` as for `measure`."""
        base = self.baseline(program)  # its time sets the run limit
        if not base.ok:
            return Measurement(status=base.status, schedule=to_text(schedule), error=f"baseline: {base.error}")
        c = self.config
        return self._untimed(program, schedule, check, "validate",
                             max(c.timeout_factor * (base.time_ms or 0.0) / 1e3, c.timeout_floor_s), on_progress)

    def _untimed(self, program: Program, schedule: Schedule, check: bool, mode: str,
                 run_limit_s: float | None, on_progress: Callable | None = None) -> Measurement:
        if check:
            check_schedule(program, schedule, self.limits, self.openmp)
        sched = effective(program, schedule, self.limits, self.openmp)
        text = to_text(sched)
        if not text and mode == "validate":  # the untransformed program is its own reference
            return Measurement(status="ok", schedule=to_text(schedule), validated=True)
        body = script(program, sched, self.limits, check=check) if text else None
        parallel = bool(text) and uses_parallel(sched) and self.openmp
        req = self._request(program, body, parallel, mode=mode, run_limit_s=run_limit_s)
        run_timeout = 4 * run_limit_s + 5 if run_limit_s else 60.0
        try:
            res = self.pool.run(req, on_progress, self.config.compile_timeout_s, run_timeout)
        except ChildDied as e:
            return Measurement(status="crash", schedule=to_text(schedule), error=str(e))
        except ChildTimeout:
            return Measurement(status="timeout", schedule=to_text(schedule),
                               error=f"no answer within {self.config.compile_timeout_s:.0f} s to compile and "
                                     f"{run_timeout:.0f} s to run; the worker was killed")
        return Measurement(status=res["status"], schedule=to_text(schedule), error=res.get("error", ""),
                           stages_ms=res.get("stages_ms", {}), validated=res["status"] == "ok" and mode == "validate")

    def close(self) -> None:
        self.pool.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *a) -> None:
        self.close()

    def __deepcopy__(self, memo: dict) -> Engine:
        """An Engine is a shared resource (workers, cache): copies of a config holding it share it
        (gymnasium.make deep-copies the env kwargs, e.g. `engine=`)."""
        return self

    # ------------------------------------------------------------------------------------------
    def _handoff(self) -> dict | None:
        """The hand-off probe (engine.measure.contention) as a request's "handoff" entry, built once."""
        with self._lock:
            if self._handoff_req is None:
                from mlir_rl_tui.engine.errors import EngineError
                from mlir_rl_tui.engine.ir.loader import load_text
                from mlir_rl_tui.engine.schedule.notation import parse

                try:
                    prog = load_text(HANDOFF_PROGRAM, "<hand-off probe>")
                    req = self._request(prog, script(prog, parse(HANDOFF_SCHEDULE), self.limits), True)
                    self._handoff_req = {k: req[k] for k in ("program", "sha256", "func", "script", "args", "result")}
                except EngineError:
                    self._handoff_req = False
            return self._handoff_req or None

    def _state_probe(self, parallel: bool) -> dict | None:
        """The state probe (engine.measure.contention) of a serial or parallel timing, as a request's entry."""
        with self._lock:
            if parallel not in self._state_req:
                from mlir_rl_tui.engine.corpus.samples import sample_path
                from mlir_rl_tui.engine.errors import EngineError
                from mlir_rl_tui.engine.ir.loader import load_text
                from mlir_rl_tui.engine.schedule.notation import parse

                try:
                    with open(sample_path(STATE_SAMPLE)) as f:
                        prog = load_text(f.read(), "<state probe>")
                    sched = parse(STATE_PARALLEL if parallel else STATE_SERIAL)
                    req = self._request(prog, script(prog, sched, self.limits), parallel)
                    self._state_req[parallel] = {k: req[k] for k in ("program", "sha256", "func", "script", "args",
                                                                      "result", "parallel")}
                except (EngineError, OSError):
                    self._state_req[parallel] = False
            return self._state_req[parallel] or None

    def _steady_ref(self, parallel: bool) -> Fastest:
        """The fastest state probe of this machine for serial or parallel timings (from its record)."""
        with self._lock:
            if parallel not in self.steady_ref:
                p = self._record()
                self.steady_ref[parallel] = Fastest((p.probe_parallel_ms if parallel else p.probe_serial_ms) or None)
            return self.steady_ref[parallel]

    def _note_probe(self, parallel: bool, probe_ms: float | None) -> None:
        ref = self._steady_ref(parallel)
        with self._lock:
            slow = ref.value is not None and probe_ms is not None and probe_ms > STEADY_FACTOR * ref.value
            if ref.note(probe_ms, slow):
                if parallel:
                    self._record().probe_parallel_ms = ref.value
                else:
                    self._record().probe_serial_ms = ref.value
                self._store_record()

    def _request(self, program: Program, body: str | None, parallel: bool, **kw) -> dict:
        c = self.config
        return {
            "id": 0, "program": program.text, "sha256": program.sha256, "script": body, "parallel": parallel,
            "func": program.func_name, "args": [[list(a.shape), a.dtype] for a in program.args],
            "result": [list(program.results[0].shape), program.results[0].dtype], "timing": c.timing(),
            "exclusive": c.exclusive, "seed": c.seed, "rtol": c.rtol, "atol_scale": c.atol_scale,
            "timeout_factor": c.timeout_factor, "timeout_floor_s": c.timeout_floor_s, "lock": self._lockfile,
            "cpu_lock": self._cpu_lockfile, "torch_reference": torch_reference(program), **kw,
        }

    def _run(self, program: Program, text: str, body: str | None, base: Measurement | None,
             on_progress: Callable | None, cancel: threading.Event | None, parallel: bool,
             deadline: float | None = None, extra: dict | None = None) -> tuple[Measurement, dict]:
        """One timing job in a worker: the Measurement and the worker's answer ({} when it gave none).
        `extra` adds to the request (QUICK, or a paired comparison's incumbent)."""
        c = self.config
        limit = None
        if base is not None and base.time_ms:
            limit = max(c.timeout_factor * base.time_ms / 1e3, c.timeout_floor_s)
        req = self._request(program, body, parallel, run_limit_s=limit, deadline=deadline)
        flags = bool(extra) and (c.wait_far or c.contention)  # QUICK, PAIRED: flag a bad state, do not wait it out
        if extra:
            req.update(extra)
            req["timing"] = {**req["timing"], **extra.get("timing", {})}
        if parallel:
            req["handoff"] = self._handoff()
        req["check_contention"] = c.contention
        if c.steady:
            req["state_probe"] = self._state_probe(parallel)
            ref = self._steady_ref(parallel).value
            req["steady_ms"] = STEADY_FACTOR * ref if ref else None
            req["wait_steady"] = c.wait_far or flags
        if parallel and (c.wait_far or flags):
            if self.near_handoff_us is None:  # the machine's, from an earlier engine
                with self._lock:
                    self.near_handoff_us = self._record().handoff_us or None
            req["near_handoff_us"] = self.near_handoff_us
        # The worker's watchdog stops a run at `limit` (engine.run.watchdog). This is the backstop for a
        # worker that does not answer at all, counted from its last progress event: a round is at most
        # 3 runs just under the limit, plus a baseline round (its runs are a tenth of the limit).
        run_timeout = 4 * limit + 5 if limit else 245.0
        try:
            res = self.pool.run(req, on_progress, c.compile_timeout_s, run_timeout, cancel)
        except ChildDied as e:
            self.evaluated += 1
            return Measurement(status="crash", schedule=text, error=str(e)), {}
        except ChildTimeout:
            self.evaluated += 1
            return Measurement(status="timeout", schedule=text,
                               error=f"the worker did not answer ({run_timeout:.0f} s without progress while "
                                     f"running, {c.compile_timeout_s:.0f} s to compile) and was killed"), {}
        except Cancelled:
            return Measurement(status="cancelled", schedule=text, error="cancelled"), {}
        self.evaluated += 1
        status = res["status"]
        ref = self._steady_ref(parallel).value if req.get("state_probe") else None
        self._note_handoff(res.get("handoff_us"), bool(res.get("far")))
        if req.get("state_probe"):
            self._note_probe(parallel, res.get("probe_ms"))
        m = Measurement(status=status, schedule=text, time_ms=res.get("time_ms"), validated=status == "ok",
                        error=res.get("error", ""), time_ci_ms=res.get("time_ci_ms"),
                        baseline_ms=res.get("paired_baseline_ms"), baseline_ci_ms=res.get("paired_baseline_ci_ms"),
                        speedup_ci=res.get("speedup_rel_ci"), runs=res.get("runs", 0), times_ms=res.get("times_ms", []),
                        stages_ms=res.get("stages_ms", {}), foreign_cores=res.get("foreign_cores"),
                        contended=bool(res.get("contended")), handoff_us=res.get("handoff_us"),
                        far=bool(res.get("far")), cut_short=res.get("stopped") == "deadline",
                        unsteady=bool(res.get("unsteady")), probe_ms=res.get("probe_ms"))
        if m.ok and m.time_ci_ms and m.flagged:
            # a figure of a bad moment: the machine's steady figure may be as fast as its fastest round, as
            # the probe's slowdown says, or FLAGGED_SPAN times faster (flagged figures on the 2-core VM were
            # up to 1.7x their steady ones, some with a probe that moved less); the interval reaches down to it
            low = [m.time_ci_ms[0], res.get("fastest_ms") or m.time_ms, m.time_ms / FLAGGED_SPAN]
            if ref and res.get("probe_ms"):
                low.append(m.time_ms * ref / max(ref, res["probe_ms"]))
            if m.far and self.near_handoff_us and m.handoff_us:
                low.append(m.time_ms * self.near_handoff_us / max(self.near_handoff_us, m.handoff_us))
            lo = min(low)
            if m.speedup_ci and lo < m.time_ci_ms[0]:
                m.speedup_ci = [m.speedup_ci[0], m.speedup_ci[1] * m.time_ci_ms[0] / lo]
            m.time_ci_ms = [lo, m.time_ci_ms[1]]
        return m, res

    def compare(self, program: Program, candidate: Schedule, incumbent: Schedule, *,
                cancel: threading.Event | None = None) -> Comparison:
        """`candidate` timed against `incumbent` in one interleaved burst, round for round (PAIRED): a slow
        spell of the host slows both, so the ratio holds where two figures taken apart would not. Both are
        checked against the untransformed program's output first. Nothing is cached: a ratio is of a moment."""
        cand = effective(program, candidate, self.limits, self.openmp)
        inc = effective(program, incumbent, self.limits, self.openmp)
        for s in (cand, inc):
            check_schedule(program, s, self.limits, self.openmp)
        ct, it = to_text(cand), to_text(inc)
        if ct == it:
            return Comparison("ok", 1.0, [1.0, 1.0])
        if not ct:  # the untransformed program against a schedule: the schedule's own paired measurement
            m = self.measure(program, inc, cancel=cancel, use_cache=False)
            if not m.ok or not m.speedup:
                return Comparison(m.status if not m.ok else "ok", error=m.error)
            lo, hi = m.speedup_ci or [m.speedup, m.speedup]
            return Comparison("ok", 1 / m.speedup, [1 / hi, 1 / lo], m.baseline_ms, m.time_ms, m.runs)
        base = self.baseline(program, cancel=cancel)
        if not base.ok:
            return Comparison(base.status, error=f"baseline: {base.error}")
        parallel = self.openmp and uses_parallel(cand)
        inc_parallel = bool(it) and self.openmp and uses_parallel(inc)
        extra = {**PAIRED, "versus": script(program, inc, self.limits) if it else "", "versus_parallel": inc_parallel}
        m, res = self._run(program, ct, script(program, cand, self.limits), base, None, cancel,
                           parallel or inc_parallel, extra=extra)
        if not m.ok or not res.get("paired_ratio"):
            return Comparison(m.status if not m.ok else "unpaired", error=m.error)
        r = res["paired_ratio"]
        lo, hi = res.get("speedup_rel_ci") or [1.0, 1.0]
        return Comparison("ok", r, [r * lo, r * hi], m.time_ms, res.get("paired_baseline_ms"), res.get("pairs", 0),
                          bool(m.flagged))


#: The timing of a quick figure (Engine.measure(quick=True)): the least rounds, no waiting out bad states.
QUICK = {"timing": {"min_rounds": 6, "min_baseline_rounds": 3, "target_rel": 0.05, "budget_s": 0.0}, "retry": False}
#: A paired comparison (Engine.compare): as many incumbent rounds as candidate rounds, alternating.
PAIRED = {"timing": {"min_rounds": 10, "min_baseline_rounds": 10, "baseline_share": 1.0, "target_rel": 0.02,
                     "budget_s": 0.0}, "retry": False}


