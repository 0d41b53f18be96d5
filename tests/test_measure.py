"""Measurement on real MLIR: baselines validate, schedules speed up, crashes are contained, cache answers."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from conftest import SAMPLE_FILES, TORCH_FILES

from mlir_rl_tui.commands.apply import describe
from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.measure.roofline import peaks_from_record
from mlir_rl_tui.engine.schedule.notation import Schedule
from mlir_rl_tui.engine.store.cache import Cache

ALONE = pytest.mark.alone  # a test whose timings' figures are the point runs alone (tests/conftest.py)


@pytest.mark.parametrize("path", SAMPLE_FILES + TORCH_FILES, ids=lambda p: p.parent.name + "/" + p.stem)
def test_baseline_of_every_program_runs_and_validates(engine, path):
    m = engine.baseline(load_file(str(path)))
    assert m.status == "ok", m.error
    assert m.validated and m.time_ms > 0 and m.speedup == 1.0


def test_good_matmul_schedule_is_validated_and_faster(engine, matmul):
    m = engine.measure(matmul, parse("op0: TF(64,64,0) T(8,32,1) V"))
    assert m.status == "ok", m.error
    assert m.validated and m.speedup > 3  # the >= 20x goal is measured in benchmarks/engine_latency.py


def test_crash_is_contained_and_next_measurement_works(engine, matmul):
    before = engine.pool.restarts
    bad = engine.measure(matmul, parse("op0: T(-8,8,8)"), check=False, use_cache=False)
    assert bad.status == "crash"
    assert "SIGABRT" in bad.error or "signal" in bad.error
    assert engine.pool.restarts == before + 1
    ok = engine.measure(matmul, parse("op0: T(8,32,1) V"), use_cache=False)
    assert ok.status == "ok" and ok.validated


def test_a_crash_or_a_timeout_is_measured_again_and_a_compile_error_is_served(engine, matmul):
    """Only the schedule's own outcomes are cached: a worker killed by a signal (here stored as if an earlier
    run had seen it) or a time-out is measured again, a deterministic refusal is served."""
    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.store.keys import cache_key

    s = parse("op0: T(4,64,4) V")
    for status in ("crash", "timeout"):
        engine.cache.put(cache_key(matmul), "op0: T(4,64,4) V", engine.machine,
                         Measurement(status, "op0: T(4,64,4) V", error="killed by signal 9").to_record())
        m = engine.measure(matmul, s)
        assert m.ok and not m.cached, (status, m.status)
        engine.cache.put(cache_key(matmul), "op0: T(4,64,4) V", engine.machine,
                         Measurement(status, "op0: T(4,64,4) V", error="killed by signal 9").to_record())
    bad = engine.measure(matmul, parse("op0: T(48,48,48) V"), check=False)
    again = engine.measure(matmul, parse("op0: T(48,48,48) V"), check=False)
    assert bad.status == again.status == "transform-error" and again.cached
    crashed = engine.measure(matmul, parse("op0: T(-8,8,8)"), check=False)
    assert crashed.status == "crash" and not engine.measure(matmul, parse("op0: T(-8,8,8)"), check=False).cached


def test_illegal_transform_is_transform_error(engine, matmul):
    # a non-dividing tile forced past the mask, then vectorize: MLIR refuses dynamic shapes
    m = engine.measure(matmul, parse("op0: T(48,48,48) V"), check=False, use_cache=False)
    assert m.status == "transform-error" and m.error and "\n" not in m.error


def test_second_identical_measurement_comes_from_cache(engine, matmul):
    s = parse("op0: T(4,64,2)")
    first = engine.measure(matmul, s)
    evaluated = engine.evaluated
    second = engine.measure(matmul, s)
    assert not first.cached and second.cached
    assert engine.evaluated == evaluated
    assert second.time_ms == first.time_ms and second.status == first.status


def test_wrong_result_is_detected(engine, matmul, monkeypatch):
    # compared exactly, the vectorized contraction (fused multiply-adds) rounds otherwise than the scalar
    # baseline: a mismatch the check must name; tiling the reduction keeps its order, so it still matches
    exact = replace(engine.config, rtol=0.0, atol_scale=0.0)
    monkeypatch.setattr(engine, "config", exact)
    m = engine.validate(matmul, parse("op0: T(8,32,1) V"))
    assert m.status == "wrong-result" and "elements differ from the baseline" in m.error and "\n" not in m.error
    assert engine.validate(matmul, parse("op0: T(0,0,4)")).status == "ok"
    monkeypatch.undo()  # within the default tolerance the same schedule is right
    assert engine.validate(matmul, parse("op0: T(8,32,1) V")).status == "ok"


def test_timeout_kills_a_slow_kernel(engine, matmul, monkeypatch):
    import dataclasses

    cfg = dataclasses.replace(engine.config, timeout_factor=0.01, timeout_floor_s=0.0)
    monkeypatch.setattr(engine, "config", cfg)
    m = engine.measure(matmul, parse("op0: T(2,2,2)"), use_cache=False)
    assert m.status == "timeout" and "limit" in m.error


def test_cancel(engine, matmul):
    import threading

    ev = threading.Event()
    ev.set()
    m = engine.measure(matmul, parse("op0: T(8,8,8)"), cancel=ev, use_cache=False)
    assert m.status == "cancelled"
    assert engine.measure(matmul, Schedule({})).ok


def test_async_runtime_fallback(engine, tmp_path, monkeypatch, matmul):
    """Without OpenMP the engine parallelizes with MLIR's async runtime (shipped with the MLIR tools)."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.store.cache import Cache

    monkeypatch.setenv("MLIR_RL_PARALLEL", "async")
    with Engine(cache=Cache(str(tmp_path / "c.sqlite")), workers=1) as eng:
        assert eng.runtime[0] == "async" and eng.machine.endswith("-async")
        eng.cache.put_machine(eng.machine, engine.peaks().to_json())  # the same cores: the runtime is the point
        m = eng.measure(matmul, parse("op0: TP(64,64,0) T(8,32,1) V"))
        assert m.status == "ok" and m.validated


def test_no_parallel_runtime_masks_tp(monkeypatch, matmul, tmp_path):
    from mlir_rl_tui.engine import Engine, Session
    from mlir_rl_tui.engine.store.cache import Cache

    monkeypatch.setenv("MLIR_RL_PARALLEL", "none")
    with Engine(cache=Cache(str(tmp_path / "c.sqlite")), workers=1) as eng:
        assert not eng.openmp
        mask = Session(matmul, openmp=eng.openmp).mask()
        assert not mask.transformation["TP"].allowed and "parallel runtime" in mask.transformation["TP"].reason


def test_all_nt_schedule_is_the_baseline(engine, matmul):
    base = engine.baseline(matmul)
    m = engine.measure(matmul, parse("op0: NT; op1: NT"))
    assert m.status == "ok" and m.speedup == 1.0 and m.time_ms == base.time_ms
    assert m.schedule == "op0: NT; op1: NT"
    t = engine.measure(matmul, parse("op0: T(8,32,1) V; op1: NT"))
    u = engine.measure(matmul, parse("op0: T(8,32,1) V"))
    assert t.schedule == "op0: T(8,32,1) V; op1: NT" and u.cached and u.time_ms == t.time_ms


def test_kernels_are_timed_alone_on_the_machine(engine, matmul, monkeypatch):
    """Timing takes the CPU lock exclusively (compiles hold it shared): while someone holds it shared,
    a serial and a TP schedule both wait before timing (one timed kernel at a time on the whole machine).
    A worker waiting longer than the pool's time-out of a run (here 4 x 10 x the 20 ms baseline + 5 s) says
    so and is not taken for a hung one."""
    import fcntl
    import threading
    import time

    done: dict[str, float] = {}
    phases: dict[str, list[str]] = {}

    def run(name: str, text: str) -> None:
        m = engine.measure(matmul, parse(text), use_cache=False,
                           on_progress=lambda phase, i, n: phases.setdefault(name, []).append(phase))
        assert m.ok, m.error
        done[name] = time.monotonic()

    texts = {"serial": "op0: T(8,32,1) V"}
    if engine.openmp:
        texts["parallel"] = "op0: TP(64,64,0) T(8,32,1) V"
    base = engine.baseline(matmul)  # the baseline's own measurement would wait too
    monkeypatch.setattr(engine, "config", replace(engine.config, timeout_floor_s=0.0))
    held = 4 * engine.config.timeout_factor * base.time_ms / 1e3 + 5 + 1.5
    with open(engine._cpu_lockfile, "a") as f:
        fcntl.flock(f, fcntl.LOCK_SH)  # a "compile" elsewhere
        threads = [threading.Thread(target=run, args=(k, v)) for k, v in texts.items()]
        for t in threads:
            t.start()
        time.sleep(held)
        assert not done  # compiled and checked, but waiting for the whole machine to time
        released = time.monotonic()
        fcntl.flock(f, fcntl.LOCK_UN)
    for t in threads:
        t.join(120)
    assert set(done) == set(texts) and min(done.values()) >= released
    assert any("wait" in p for p in phases.values()), phases  # (one may be queued behind the other in the pool)


def test_a_parallel_kernels_checked_run_waits_for_the_compiles(engine, matmul):
    """The one checked run of a parallel schedule has the machine to itself too: while someone holds the CPU
    lock shared (a compile elsewhere) the schedule is compiled, then waits (and says so) before its run."""
    import fcntl
    import threading
    import time

    if not engine.openmp:
        pytest.skip("no OpenMP runtime: TP is masked")
    engine.baseline(matmul)  # measured first: the baseline's own timing would wait for the lock too
    phases: list[str] = []
    got: list = []
    t = threading.Thread(target=lambda: got.append(engine.validate(
        matmul, parse("op0: TP(64,64,0) T(8,32,1) V"), on_progress=lambda phase, i, n: phases.append(phase))))
    with open(engine._cpu_lockfile, "a") as f:
        fcntl.flock(f, fcntl.LOCK_SH)  # a "compile" elsewhere
        t.start()
        end = time.monotonic() + 60
        while "wait" not in phases and not got and time.monotonic() < end:
            time.sleep(0.1)
        assert "wait" in phases and not got, (phases, got)  # compiled, then waiting: not run beside the compile
        fcntl.flock(f, fcntl.LOCK_UN)
    t.join(60)
    assert got and got[0].ok and got[0].validated, got


def test_per_op_profile_covers_every_op_and_finds_the_matmul(engine):
    from conftest import SAMPLES

    from mlir_rl_tui.engine import load_file

    prog = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))
    groups = engine.per_op(prog, parse("op0: TF(32,32) T(8,32) V; op1: T(8,32) V; op3: NT"))
    covered = sorted(i for g in groups for i in g["ops"])
    assert covered == sorted(o.id for o in prog.ops)
    assert [g.get("fused_into") for g in groups if g["ops"] == ["op1"]] == ["op0"]  # timed inside op0
    assert abs(sum(g["share"] for g in groups) - 1.0) < 1e-6
    top = max(groups, key=lambda g: g["share"])
    assert top["ops"] == ["op2"] and top["share"] > 0.8  # the untransformed matmul dominates


@ALONE
def test_a_timing_beside_a_busy_process_is_repeated_flagged_and_not_cached(engine, matmul):
    """engine.measure.contention: another process keeping a core busy (outside the engine's locks) makes a parallel
    kernel about 2x slower in every round; the worker sees the others' CPU time, times again, and reports
    what is left as contended (not stored, so a later measurement gets the cores). A serial kernel pinned
    to its core is not contended by one busy core of two (by the same rule, whatever else runs). A parallel kernel's figure comes with what the
    hand-off probe took around it."""
    if not engine.openmp:
        pytest.skip("no parallel runtime: TP is masked")
    assert not engine.config.contention  # the suite's engine takes timings as they come (conftest)
    # its own Cache on the same file: closing the engine closes its cache, and the suite's engine goes on
    with Engine(config=replace(engine.config, contention=True), cache=Cache(engine.cache.path)) as watching:
        _busy_process_is_seen(watching, matmul)


def _busy_process_is_seen(engine, matmul) -> None:
    import subprocess
    import sys

    sched = parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V")
    calm = engine.measure(matmul, sched, use_cache=False)
    assert calm.ok and calm.foreign_cores is not None
    assert 0 < calm.handoff_us < calm.time_ms * 1e3  # the probe's fork and join, around the timing
    fresh = "op0: TP(16,32,0) T(8,32,1) V; op1: T(4,0) V"  # a schedule no other test measures
    assert engine.cache.get(matmul.sha256, fresh, engine.machine) is None
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = engine.measure(matmul, parse(fresh))
        serial = engine.measure(matmul, parse("op0: T(32,32,0) T(8,32,1) V; op1: T(4,0) V"), use_cache=False)
    finally:
        hog.kill()
        hog.wait()
    assert busy.ok and busy.contended and busy.foreign_cores > 0.5
    assert not busy.cached and engine.cache.get(matmul.sha256, fresh, engine.machine) is None
    # one busy core of two leaves a serial kernel its core: not contended, unless more runs than the hog (the
    # rule, whatever else this machine runs; a CI machine may be running anything beside the suite)
    from mlir_rl_tui.engine.measure.contention import contended

    cores = len(os.sched_getaffinity(0))
    assert serial.ok and serial.handoff_us is None
    assert serial.contended == contended(serial.foreign_cores, parallel=False, cores=cores)


@ALONE
def test_a_timing_while_the_cores_are_far_is_repeated_flagged_and_not_cached(engine, matmul):
    """engine.measure.contention.far: a parallel timing whose hand-off probe took over FAR_FACTOR times the fastest
    the engine has seen is timed again after FAR_WAITS_S; still far, it is reported far and not stored.
    The host's far state cannot be made on demand, so the engine's reference is made tiny: every probe
    is then far. The reference is the fastest probe seen, and a measurement lowers it."""
    import time

    from mlir_rl_tui.engine.measure.contention import FAR_WAITS_S

    if not engine.openmp:
        pytest.skip("no parallel runtime: TP is masked")
    fresh = "op0: TP(32,16,0) T(8,16,1) V; op1: T(4,0) V"  # a schedule no other test measures
    assert engine.cache.get(matmul.sha256, fresh, engine.machine) is None
    assert not engine.config.wait_far  # the suite's engine does not wait (conftest)
    # its own Cache on the same file: closing the engine closes its cache, and the suite's engine goes on
    with Engine(config=replace(engine.config, wait_far=True), cache=Cache(engine.cache.path)) as waiting:
        waiting.near_handoff_us = 1e-3
        t0 = time.perf_counter()
        m = waiting.measure(matmul, parse(fresh))
        took = time.perf_counter() - t0
        assert m.ok and m.far and m.handoff_us > 1e-3 and took >= sum(FAR_WAITS_S)  # waited, timed again
        assert not m.cached and engine.cache.get(matmul.sha256, fresh, engine.machine) is None
        assert "FAR" in describe(m)
        waiting.near_handoff_us = None  # from the machine's record, then the fastest seen
        again = waiting.measure(matmul, parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V"), use_cache=False)
        assert again.ok and waiting.near_handoff_us is not None and waiting.near_handoff_us <= again.handoff_us
        # the machine's record keeps it for the next engine
        assert engine.cache.get_machine(engine.machine, parse=peaks_from_record).handoff_us == waiting.near_handoff_us


def test_a_stale_near_reference_gives_way_after_far_timings_in_a_row(engine):
    """engine.measure.contention.FAR_STALE: a reference no timing comes near any more (the VM moved to another host)
    would make every parallel timing wait and go uncached; after FAR_STALE far ones in a row the fastest of
    them is the reference. A near timing in between starts the count again."""
    from mlir_rl_tui.engine.measure.contention import FAR_STALE

    near = engine.near_handoff_us
    try:
        engine.near_handoff_us = 1.0
        for i in range(FAR_STALE - 1):
            engine._note_handoff(3.0 + i, True)
        engine._note_handoff(1.1, False)  # near again: the count starts over
        for i in range(FAR_STALE - 1):
            engine._note_handoff(3.0 + i, True)
        assert engine.near_handoff_us == 1.0
        engine._note_handoff(2.5, True)
        assert engine.near_handoff_us == 2.5
    finally:
        engine.near_handoff_us = None
        engine._note_handoff(near, False)


def test_a_deadline_cuts_the_timing_short_and_the_figure_is_not_cached(engine, tmp_path):
    """A 640^3 matmul untransformed: about 0.25 s a run, a round each; a 1 s deadline leaves fewer rounds."""
    import time

    from bad_inputs import matmul

    from mlir_rl_tui.engine import Schedule, load_file

    path = tmp_path / "mm.mlir"
    path.write_text(matmul(640))
    prog = load_file(str(path))
    m = engine.measure(prog, Schedule({}), deadline=time.time() + 1.0)
    assert m.ok and m.cut_short and 1 <= m.runs < engine.config.runs, (m.runs, m.cut_short)
    again = engine.measure(prog, Schedule({}))
    assert again.ok and not again.cached and not again.cut_short and again.runs >= engine.config.runs
