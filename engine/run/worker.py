"""Worker process: `python -m mlir_rl_tui.engine.run.worker` reads JSON requests on stdin, answers on a private fd.

Each request names one (program, schedule) and a mode; without one it is a measurement: transform, compile,
run, check against the baseline (and PyTorch's reference) and time. The other modes stop earlier or do
something else with the compiled program:
  "ir"        the transformed IR, not compiled (Engine.transformed_ir: the app's IR view, exports)
  "compile"   transform, lower and JIT only (the mask fuzz's fast check)
  "validate"  run once and checked, not timed (Engine.validate)
  "per-op"    where the time goes, op by op (engine.measure.per_op)
  "object"    the compiled object code, for a shared library (engine.run.native)
  "reference" the untransformed program's output on the seeded inputs, saved (Engine.reference)
A request can kill this process (LLVM assertion, segfault, runaway memory): the parent (`engine.run.pool`)
sees it, reports status crash and starts a fresh worker. Protocol: one JSON object per line; progress events
{"event": "phase", ...} precede the final {"event": "result", ...}. A result with "exit": true is the
last thing this process says (engine.run.watchdog stopped a run over its limit).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager, nullcontext

import numpy as np

from mlir_rl_tui.engine.measure.contention import (
    FAR_WAITS_S,
    HANDOFF_RUNS,
    STATE_RUNS,
    STATE_WAITS_S,
    Watch,
    contended,
    far,
)
from mlir_rl_tui.engine.measure.timing import median
from mlir_rl_tui.engine.run.compare import compare
from mlir_rl_tui.engine.run.watchdog import Watchdog

#: Guards the protocol stream: the watchdog thread may answer too (engine.run.watchdog).
_SEND = threading.Lock()


def _write(out, obj: dict) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _send(out, obj: dict) -> None:
    with _SEND:
        _write(out, obj)


class _Baselines:
    """Reference outputs of untransformed programs, per (program sha, seed), kept in memory."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.data: OrderedDict = OrderedDict()

    def get(self, key):
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        return None

    def put(self, key, value) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.size:
            self.data.popitem(last=False)


def _flock(path: str | None, mode: int = fcntl.LOCK_EX, waiting: Callable[[], None] | None = None):
    """Hold an advisory lock on `path` (nothing when path is None) for the `with` block; `waiting` is called
    about once a second while it waits (the pool takes a worker without progress events for a hung one, and
    another engine sharing the cache folder may time a slow kernel for longer than that).

    Two locks keep timings apart across the workers of every engine that shares a cache folder:
    - the timing lock (exclusive): one program is timed at a time (compile in parallel, time alone);
    - the CPU lock: compiling holds it shared, timing holds it exclusive, so the kernel has every core
      (an OpenMP barrier waiting for a thread that shares its core with a compiler made a 50 us parallel
      kernel 10-50x slower).
    flock favours readers: with compiles arriving back to back, a timing waited for the CPU lock until
    the pool gave up on it (a false `timeout`, seen in the mask fuzz). So every acquirer of the CPU lock
    first passes a turnstile (`PATH.turnstile`, exclusive, held only while acquiring): a waiting timing
    holds the turnstile, and new compiles queue behind it.
    The order is always timing lock, then CPU lock; compiling never waits for the timing lock, so there
    is no cycle. A shared hold is made exclusive for a block with `alone()` (the checked run of a parallel
    kernel): it is let go before queueing, so two holders that both want it alone never wait for each other."""

    class _L:
        def __enter__(self):
            self.f = open(path, "a") if path else None
            if self.f:
                self._take(mode, waiting)
            return self

        def _take(self, m: int, beat: Callable[[], None] | None) -> None:
            with open(path + ".turnstile", "a") as gate:
                _lock(gate, fcntl.LOCK_EX, beat)
                try:
                    _lock(self.f, m, beat)
                finally:
                    fcntl.flock(gate, fcntl.LOCK_UN)

        @contextmanager
        def alone(self, beat: Callable[[], None] | None = None):
            if not self.f:
                yield
                return
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self._take(fcntl.LOCK_EX, beat)
            try:
                yield
            finally:
                fcntl.flock(self.f, fcntl.LOCK_UN)
                self._take(fcntl.LOCK_SH, beat)

        def __exit__(self, *a):
            if self.f:
                fcntl.flock(self.f, fcntl.LOCK_UN)
                self.f.close()

    return _L()


def _lock(f, mode: int, beat: Callable[[], None] | None) -> None:
    """flock `f`; when it is not free at once, `beat` is called at once (the wait is shown from its start,
    however short) and then about once a second until it is taken."""
    try:
        fcntl.flock(f, mode | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    if beat is not None:
        beat()
    with _beating(beat):
        fcntl.flock(f, mode)


@contextmanager
def _beating(beat: Callable[[], None] | None, every_s: float = 1.0):
    """Call `beat` every `every_s` seconds from a helper thread while the block runs (blocked in a system
    call, the caller cannot); the thread has stopped when the block ends."""
    if beat is None:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            beat()

    t = threading.Thread(target=loop, daemon=True, name="lock-wait")
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


class _Baseline:
    """The untransformed program, jitted and bound to its inputs: reference output and paired timing."""

    def __init__(self, compiled, output, first_ms: float) -> None:
        self.compiled, self.output, self.first_ms = compiled, output, first_ms


@contextmanager
def _spinning(compiled, parallel: bool):
    """OpenMP threads spin between the timed runs of a parallel kernel, and sleep at once otherwise.

    The pool starts workers with KMP_BLOCKTIME=0: by default the threads spin for 200 ms after each
    parallel region, on the core where the other worker may be timing next (measured: 20 ticks of CPU in
    the 0.5 s after a timing; parallel kernels of the other worker 2x slower). Sleeping at once between
    runs makes each run pay a wake-up (matmul TP: 0.25 instead of 0.16 ms), so during the timing the
    threads spin (kmp_set_blocktime(200)), and one last run with blocktime 0 puts them to sleep (of the
    hand-off probe when there is one: a few microseconds, where the kernel may be a runaway's second)."""
    from mlir_rl_tui.engine.run.compile import openmp_library

    lib = None
    if parallel and openmp_library():
        try:
            lib = ctypes.CDLL(openmp_library())
            lib.kmp_set_blocktime(200)
        except (OSError, AttributeError):
            lib = None
    try:
        yield
    finally:
        if lib is not None:
            lib.kmp_set_blocktime(0)
            compiled.call()
            compiled.free_result()


@contextmanager
def _pinned():
    """The timing thread stays on the core it is on (OpenMP's first thread is core 0: KMP_AFFINITY in
    engine.run.pool); compiling afterwards may use any core again."""
    try:
        everything = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {0} if len(everything) > 1 else everything)
    except (AttributeError, OSError):
        everything = None
    try:
        yield
    finally:
        if everything:
            try:
                os.sched_setaffinity(0, everything)
            except OSError:
                pass


#: Times a timing is repeated (after 0.1, 0.2, 0.4 s) while other processes use a core the kernel needs
#: (engine.measure.contention); the last one is reported, marked contended if it still was. While the host keeps
#: the cores far apart it is repeated after engine.measure.contention.FAR_WAITS_S, then marked far.
CONTENTION_RETRIES = 3
#: A runaway: a candidate whose checked run took more than this share of its time limit (3.3x the baseline
#: at the default 10x, or a third of the 1 s floor). It is timed only until its limit past the start of
#: that run plus RUNAWAY_GRACE_S (engine.measure.timing's cap), in every phase (timing rounds, paired baselines,
#: state probes, no re-timing), and a run that would pass the cap is stopped there: a masked-legal tiled
#: fusion that recomputes its producer per row ran 0.83 s a run against a 1 s limit for 12.7 s otherwise.
RUNAWAY_SHARE = 1 / 3
RUNAWAY_GRACE_S = 0.5
#: The cores this worker may use, read before OpenMP binds its first thread to core 0 (KMP_AFFINITY).
_CORES = len(os.sched_getaffinity(0))

#: Copies of the arguments the timing rotates through (engine.run.compile.Compiled.bind), for programs whose
#: arguments take at most PLACEMENT_BYTES.
PLACEMENTS = 3
PLACEMENT_BYTES = 256 << 20


def _placer(compiled, base) -> Callable[[int], None]:
    def place(k: int) -> None:
        compiled.place(k)
        if base is not None:
            base.compiled.place(k)

    return place


def _timed_call(compiled, watch: Callable[[], None] | None = None,
                unwatch: Callable[[], None] | None = None) -> Callable[[], float]:
    """One run, its ms; `watch()` / `unwatch()` around it (outside the timed span) arm the watchdog."""
    def call() -> float:
        if watch is not None:
            watch()
        t0 = time.perf_counter_ns()
        compiled.call()
        t = (time.perf_counter_ns() - t0) / 1e6
        if unwatch is not None:
            unwatch()
        compiled.free_result()
        return t

    return call


_HANDOFF: dict[str, object] = {}  # sha256 of the hand-off probe -> its compiled kernel (None: it did not compile)
#: The incumbents of paired comparisons (a request's "versus" script), compiled once per worker: a search
#: compares many candidates with the same incumbent.
_VERSUS = _Baselines(4)


def _handoff_kernel(req: dict):
    """The hand-off probe of a parallel request (engine.measure.contention), compiled once per worker."""
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.run.compile import StageError, Stages, compile_module, random_inputs

    h = req.get("handoff")
    if not h:
        return None
    if h["sha256"] not in _HANDOFF:
        specs = [TensorSpec(tuple(a), d) for a, d in h["args"]]
        try:
            compiled, _ = compile_module(h["program"], h["script"], True, h["func"], specs,
                                         TensorSpec(tuple(h["result"][0]), h["result"][1]), Stages())
            compiled.bind(random_inputs(specs, 0))
            # one run now, unpinned: when the probe is the worker's first parallel region (a schedule whose
            # foralls all folded away, e.g. TF of one tile), OpenMP would start under `_pinned` and bind its
            # whole team to core 0 (KMP_AFFINITY reads the mask then) for the worker's life: hand-offs of
            # 7.4 us instead of 1.0 and parallel kernels 2-5x slower (tests/test_contention.py)
            compiled.call()
            compiled.free_result()
        except StageError:
            compiled = None
        _HANDOFF[h["sha256"]] = compiled
    return _HANDOFF[h["sha256"]]


_STATE: dict[tuple[str, bool], object] = {}  # (sha256, parallel) of the state probe -> its compiled kernel


def _state_probe(req: dict) -> Callable[[], float] | None:
    """The state probe of a request (engine.measure.contention), compiled once per worker, as a call that times it
    (the fastest of STATE_RUNS runs, in ms); None without one (or when it does not compile)."""
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.run.compile import StageError, Stages, compile_module, random_inputs

    h = req.get("state_probe")
    if not h:
        return None
    key = (h["sha256"], bool(h["parallel"]))
    if key not in _STATE:
        specs = [TensorSpec(tuple(a), d) for a, d in h["args"]]
        try:
            compiled, _ = compile_module(h["program"], h["script"], h["parallel"], h["func"], specs,
                                         TensorSpec(tuple(h["result"][0]), h["result"][1]), Stages())
            compiled.bind(random_inputs(specs, 0))
            compiled.call()  # unpinned, as the hand-off probe (_handoff_kernel)
            compiled.free_result()
        except StageError:
            compiled = None
        _STATE[key] = compiled
    compiled = _STATE[key]
    if compiled is None:
        return None
    call = _timed_call(compiled)
    return lambda: min(call() for _ in range(STATE_RUNS))


def _handoff_us(compiled) -> list[float]:
    """HANDOFF_RUNS runs of the hand-off probe, in us (nothing without one)."""
    if compiled is None:
        return []
    call = _timed_call(compiled)
    return [call() * 1e3 for _ in range(HANDOFF_RUNS)]


def handle(req: dict, out, baselines: _Baselines, watchdog: Watchdog | None = None) -> dict:
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.measure.timing import TimingConfig, time_kernel
    from mlir_rl_tui.engine.run.compile import StageError, Stages, compile_module, random_inputs

    rid = req["id"]
    specs = [TensorSpec(tuple(s), d) for s, d in req["args"]]
    res_spec = TensorSpec(tuple(req["result"][0]), req["result"][1])
    stages = Stages()
    script = req.get("script") or None

    def phase(name: str, i: int = 0, n: int = 0) -> None:
        _send(out, {"id": rid, "event": "phase", "phase": name, "i": i, "n": n})

    # the candidate's runs are watched: one over the limit is stopped as it passes it, and a runaway's
    # (see RUNAWAY_SHARE) as it passes its cap, whichever comes first
    runaway: dict[str, float] = {}  # "start": the first run's start; "cap": set when the candidate is a runaway

    def result(status: str, **kw) -> dict:
        took = {k: v * 1e3 for k, v in stages.t.items()}
        if "start" in runaway:  # "timing": from the first run's start to this answer, on this worker's clock
            took["timing"] = (time.monotonic() - runaway["start"]) * 1e3
        return {"id": rid, "event": "result", "status": status, "stages_ms": took, **kw}

    if req.get("mode") == "ir":
        from mlir_rl_tui.engine.run.compile import transform_ir

        try:
            text = transform_ir(req["program"], script, stages, req.get("func"))
        except StageError as e:
            return result("transform-error", error=str(e))
        return result("ok", transformed_ir=text)

    if req.get("mode") == "compile":  # transform, lower and JIT only: the mask fuzz's fast check
        phase("transform")
        try:
            with _flock(req.get("cpu_lock"), fcntl.LOCK_SH):
                compile_module(req["program"], script, req["parallel"], req["func"], specs, res_spec, stages)
        except StageError as e:
            return result("transform-error" if e.stage == "transform" else "compile-error", error=str(e))
        return result("ok")

    copies = PLACEMENTS if sum(s.nbytes for s in specs) <= PLACEMENT_BYTES else 1
    limit = req.get("run_limit_s")

    if req.get("mode") == "per-op":  # engine.measure.per_op: where the time goes, op by op
        from mlir_rl_tui.engine.measure.per_op import per_op

        try:
            groups = per_op(req["program"], script, req["parallel"], req["func"], specs, res_spec, req["seed"])
        except StageError as e:
            return result("transform-error" if e.stage == "transform" else "compile-error", error=str(e))
        return result("ok", per_op=groups)

    if req.get("mode") == "object":  # engine.run.native: the compiled object code, for a shared library
        try:
            compiled, _ = compile_module(req["program"], script, req["parallel"], req["func"], specs, res_spec, stages)
            compiled.engine.dump_to_object_file(req["object_path"])
        except StageError as e:
            return result("transform-error" if e.stage == "transform" else "compile-error", error=str(e))
        return result("ok")

    def late(elapsed: float) -> dict:
        """The answer of a run the watchdog stopped at its limit."""
        return result("timeout", exit=True,
                      error=f"a run went over the {limit:.2f} s limit (the larger of "
                            f"{req.get('timeout_factor', 10):g}x the baseline and {req.get('timeout_floor_s', 1):g} s)"
                            f" and was stopped after {elapsed:.2f} s")

    def arm() -> None:
        now = time.monotonic()
        cap = runaway.get("cap")
        if cap is not None and cap - now < limit:
            watchdog.arm(max(cap - now, 0.0), capped)
        else:
            watchdog.arm(limit, late)

    def capped(elapsed: float) -> dict:
        """The answer of a runaway's run the watchdog stopped at the cap."""
        return result("timeout", exit=True,
                      error=f"a run of a schedule this slow (its checked run took {runaway['first']:.2f} s) would "
                            f"have ended past its {limit:.2f} s limit + {RUNAWAY_GRACE_S:g} s and was stopped")

    watch = arm if watchdog is not None and limit else None
    unwatch = watchdog.disarm if watch is not None else None

    def first_run(compiled, watched: bool = False) -> tuple[float, np.ndarray]:
        compiled.bind(random_inputs(specs, req["seed"]), copies)
        if watched:
            runaway["start"] = time.monotonic()
            if watch is not None:
                watch()
        t0 = time.perf_counter()
        compiled.call()
        first = time.perf_counter() - t0
        if watched and unwatch is not None:
            unwatch()
        output = compiled.result()
        compiled.free_result()
        return first, output

    if req.get("mode") == "reference":  # engine.reference: the untransformed program's output, saved
        try:
            compiled, _ = compile_module(req["program"], None, False, req["func"], specs, res_spec, stages)
            _, output = first_run(compiled)
        except StageError as e:
            return result("compile-error", error=str(e))
        np.savez(req["reference_path"], output=output, seed=np.array(req["seed"]))
        return result("ok")

    def prepare():
        """Baseline (jitted and kept), transform, compile, one checked run: (compiled, first run s,
        baseline to pair with, extra) or the result dict of a failure."""
        key = (req["sha256"], req["seed"])
        base = baselines.get(key)
        if base is None and script:
            phase("baseline")
            try:
                compiled, _ = compile_module(req["program"], None, False, req["func"], specs, res_spec, Stages())
            except StageError as e:
                return result("compile-error", error=f"baseline: {e}")
            first, output = first_run(compiled)
            err = _against_torch(req, output)
            if err:
                return result("wrong-result", error=f"baseline: {err}")
            base = _Baseline(compiled, output, first * 1e3)
            baselines.put(key, base)
        phase("transform" if script else "compile")
        try:
            compiled, ir_text = compile_module(req["program"], script, req["parallel"], req["func"], specs, res_spec,
                                      stages, want_ir=req.get("want_ir", False))
        except StageError as e:
            status = "transform-error" if e.stage == "transform" else "compile-error"
            return result(status, error=str(e))
        # a parallel kernel's checked run has the cores to itself (a compile beside it stalls its barriers:
        # 112 parallel regions of a tiled convolution went over a 1 s limit); its wait is shown as such
        with held.alone(lambda: phase("wait")) if req["parallel"] else nullcontext():
            phase("run", 0, 0)
            with stages.time("run"):
                first, output = first_run(compiled, watched=True)
        extra = {"transformed_ir": ir_text} if ir_text is not None else {}
        if base is None:  # this is the baseline itself
            err = _against_torch(req, output)
            if err:
                return result("wrong-result", error=err, **extra)
            base = _Baseline(compiled, output, first * 1e3)
            baselines.put(key, base)
        ok, err = compare(output, base.output, req["rtol"], req["atol_scale"])
        if not ok:
            return result("wrong-result", error=err, **extra)
        if limit and first > limit:
            return result("timeout", error=f"one run took {first:.2f} s, over the {limit:.2f} s limit "
                                           f"({req.get('timeout_factor', 10):g}x the baseline)", **extra)
        if limit and first > RUNAWAY_SHARE * limit:
            runaway.update(first=first, cap=runaway["start"] + limit + RUNAWAY_GRACE_S)
        return compiled, first, (base if script else None), extra

    # Everything but the timing holds the CPU lock shared (see _flock): a kernel being timed elsewhere
    # then has every core to itself. A parallel kernel's checked run in prepare() makes `held` exclusive.
    with _flock(req.get("cpu_lock"), fcntl.LOCK_SH) as held:
        prepared = prepare()
        to_time = not isinstance(prepared, dict) and req.get("mode") != "validate"
        made = time.monotonic()
        probe = _handoff_kernel(req) if to_time and req["parallel"] else None
        state = _state_probe(req) if to_time else None
        # "probes": compiling the probes (once per worker: a fresh one's after a runaway's time-out), not the
        # candidate's time either (a runaway's cap moves by it, as by the "wait")
        if to_time:
            stages.t["probes"] = time.monotonic() - made
            if "cap" in runaway:
                runaway["cap"] += stages.t["probes"]
    if isinstance(prepared, dict):
        return prepared
    if req.get("mode") == "validate":  # run once and checked (prepare): no timing
        return result("ok")
    compiled, first, base, extra = prepared
    if req.get("versus") is not None:  # timed against the incumbent schedule instead of the untransformed program
        versus = _incumbent(req, specs, res_spec, copies, base)
        if isinstance(versus, dict):
            return versus
        base = versus
    cfg = TimingConfig(**req.get("timing", {}))
    cpu = req.get("cpu_lock") if req.get("exclusive", True) or req["parallel"] else None
    near = req.get("near_handoff_us")  # the engine's fastest hand-off probe so far (engine.measure.contention.far)
    steady_ms = req.get("steady_ms")  # the state probe's steady limit on this machine (engine.measure.timing)
    waited = threading.Event()

    def wait_beat() -> None:  # another engine's timing, shown as such (and not taken for a hung worker)
        waited.set()
        phase("wait")

    wait = 0.0
    for attempt in range(max(CONTENTION_RETRIES, len(FAR_WAITS_S), len(STATE_WAITS_S)) + 1):
        if attempt:  # timed again while other processes took a needed core, or the host kept the cores far
            phase("retry", attempt, 0)  # the pool counts its time-out from the last event
            time.sleep(wait)
        waited.clear()
        asked = time.monotonic()
        with _flock(req.get("lock"), waiting=wait_beat), _flock(cpu, waiting=wait_beat), _pinned(), \
                _spinning(probe or compiled, req["parallel"] or bool(req.get("versus_parallel"))):
            # "wait": for the locks another engine's timing holds (part of "timing", not of the candidate's
            # runs: a runaway's cap moves by it)
            waited_s = time.monotonic() - asked
            stages.t["wait"] = stages.t.get("wait", 0.0) + waited_s
            if "cap" in runaway:  # the watchdog's and the timing's
                runaway["cap"] += waited_s
            if waited.is_set():
                phase("run", 0, 0)  # the time-out of a run again
            seen = Watch.start()
            handoff = _handoff_us(probe)
            timed = time_kernel(_timed_call(compiled, watch, unwatch), first * 1e3, cfg,
                                _timed_call(base.compiled) if base else None, base.first_ms if base else 0.0,
                                limit_ms=limit * 1e3 if limit else None,
                                on_round=lambda i, n: phase("run", i, n), place=_placer(compiled, base),
                                deadline=req.get("deadline"), probe=state, steady_ms=steady_ms,
                                cap=runaway.get("cap"))
            handoff += _handoff_us(probe)
            foreign = seen.foreign_cores()
        busy = req.get("check_contention", True) and contended(foreign, req["parallel"], _CORES)
        handoff_us = sorted(handoff)[len(handoff) // 2] if handoff else None  # the probe's median
        is_far = far(handoff_us, near)
        # without the wait (MeasureConfig.wait_far off) a timing is taken as it comes: gated, never flagged
        # (a runaway's few rounds are its figure by design, not a bad moment's: it is stored, not timed again)
        unsteady = state is not None and req.get("wait_steady", True) and "cap" not in runaway \
            and timed.candidate.steady_rounds < cfg.min_steady
        # a runaway is timed once: its cap leaves no time for another try
        if timed.timeout_run is not None or timed.stopped in ("deadline", "limit") or "cap" in runaway \
                or not req.get("retry", True):
            break
        if busy and attempt < CONTENTION_RETRIES:
            wait = 0.1 * 2 ** attempt
        elif is_far and attempt < len(FAR_WAITS_S):
            wait = FAR_WAITS_S[attempt]
        elif unsteady and attempt < len(STATE_WAITS_S):
            wait = STATE_WAITS_S[attempt]
        else:
            break
    rounds = timed.candidate.samples
    if timed.timeout_run is not None:
        return result("timeout", error=f"a run took {timed.timeout_run / 1e3:.2f} s, over the {limit:.2f} s "
                                       "limit", times_ms=rounds, **extra)
    need = cfg.min_steady
    t, lo, hi = timed.candidate.estimate(need)
    res = {"time_ms": t, "time_ci_ms": [lo, hi], "times_ms": rounds, "runs": timed.candidate.runs,
           "typical_ms": timed.candidate.typical_ms, "stopped": timed.stopped,
           "foreign_cores": foreign, "contended": busy, "far": is_far,
           "handoff_us": handoff_us, "unsteady": unsteady,
           "probe_ms": min(timed.probes) if timed.probes else None,
           "steady_rounds": timed.candidate.steady_rounds, "fastest_ms": min(rounds) if rounds else None}
    if timed.baseline is not None and timed.baseline.rounds:  # (a runaway's cap may leave no baseline round)
        b, blo, bhi = timed.baseline.estimate(need)
        rlo, rhi = timed.speedup_rel_ci(need)
        ratios = timed.ratios(need)
        res.update(paired_baseline_ms=b, paired_baseline_ci_ms=[blo, bhi], speedup_rel_ci=[rlo, rhi],
                   paired_ratio=median(ratios) if ratios else None, pairs=len(ratios))
    return result("ok", **res, **extra)


def _incumbent(req: dict, specs, res_spec, copies: int, base) -> _Baseline | dict:
    """The incumbent schedule of a paired comparison (`req["versus"]`, its transform script), compiled
    (once per worker), bound to the request's inputs and checked against the untransformed program's output;
    or the result dict of its failure."""
    from mlir_rl_tui.engine.run.compile import StageError, Stages, compile_module, random_inputs

    key = (req["sha256"], req["versus"], req["versus_parallel"], req["seed"])
    inc = _VERSUS.get(key)
    if inc is None:
        try:
            compiled, _ = compile_module(req["program"], req["versus"] or None, req["versus_parallel"], req["func"],
                                         specs, res_spec, Stages())
        except StageError as e:
            return {"id": req["id"], "event": "result", "status": "compile-error", "error": f"the incumbent: {e}"}
        compiled.bind(random_inputs(specs, req["seed"]), copies)
        t0 = time.perf_counter()
        compiled.call()
        first = time.perf_counter() - t0
        output = compiled.result()
        compiled.free_result()
        if base is not None:
            ok, err = compare(output, base.output, req["rtol"], req["atol_scale"])
            if not ok:
                return {"id": req["id"], "event": "result", "status": "wrong-result", "error": f"the incumbent: {err}"}
        inc = _Baseline(compiled, output, first * 1e3)
        _VERSUS.put(key, inc)
    return inc


def _against_torch(req: dict, output: np.ndarray) -> str:
    """For a program imported from PyTorch (`mlir-rl-tui import`): the untransformed program's output
    against PyTorch's on the same inputs; "" when they agree or there is no reference."""
    path = req.get("torch_reference")
    if not path:
        return ""
    try:
        with np.load(path, allow_pickle=False) as z:
            ref = z["output"]
            ref_seed = int(z["seed"]) if "seed" in z.files else req["seed"]
            of = str(z["program_sha256"]) if "program_sha256" in z.files else None
    except (OSError, KeyError, ValueError) as e:
        return f"cannot read PyTorch's reference {path}: {e}"
    if of is not None and of != hashlib.sha256(req["program"].encode()).hexdigest():
        return f"PyTorch's reference {path} belongs to another program text (import the model again)"
    if ref_seed != req["seed"]:
        return (f"PyTorch's reference {path} was computed on inputs seeded {ref_seed}; the engine's inputs are "
                f"seeded {req['seed']}")
    ok, err = compare(output, ref, req["rtol"], req["atol_scale"])
    return "" if ok else "the program differs from PyTorch's result: " + err.replace("the baseline", "PyTorch")


def set_limits() -> None:
    """Memory limit (address space) and no core files, set by the worker itself before loading MLIR."""
    import resource

    limit = int(os.environ.get("MLIR_RL_WORKER_MEMORY", "0") or 0)
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nice = int(os.environ.get("MLIR_RL_WORKER_NICE", "0") or 0)
    if nice > 0:
        os.nice(nice)
        # The pool starts each worker in its own session, and with the kernel's autogroup scheduling
        # (sched_autogroup_enabled=1, the default on desktop kernels) a session is its own scheduling
        # group: CPU time is shared *between groups* first, so a nice worker still took half the CPU from
        # the app's event loop. The group's own niceness fixes that (raising it needs no privilege).
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
        except OSError:
            pass


def main() -> None:
    set_limits()
    # The protocol gets a private copy of stdout; fd 1 then points at stderr so that anything
    # MLIR or LLVM prints cannot corrupt it.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # no worker outlives its engine: the pool says which process that is (a worker started as its
    # parent died is already re-parented)
    watchdog = Watchdog(int(os.environ.get("MLIR_RL_WORKER_PARENT") or os.getppid()), _SEND,
                        lambda obj: _write(proto, obj))
    watchdog.start()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import mlir.ir  # noqa: F401  (import once, before the first request)

    baselines = _Baselines()
    _send(proto, {"event": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            res = handle(req, proto, baselines, watchdog)
        except Exception as e:  # noqa: BLE001 - report, never die on a Python error
            res = {"id": req.get("id"), "event": "result", "status": "crash",
                   "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
        _send(proto, res)


if __name__ == "__main__":
    main()
