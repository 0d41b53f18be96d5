"""engine.measure.contention: other processes' CPU time over a span, and when a timing counts as contended."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mlir_rl_tui.engine.measure.contention import FAR_FACTOR, Watch, contended, far

ALONE = pytest.mark.alone  # a test whose timings' figures are the point runs alone (tests/conftest.py)


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@ALONE
def test_a_busy_process_shows_as_foreign_cores_whatever_else_runs():
    """Load-independent (the machine may be running anything else): another process's CPU time is counted at
    least as what that process itself says it used, and never more than the machine's cores."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        before, seen, t = _cpu_s(hog.pid), Watch.start(), time.perf_counter()
        time.sleep(0.5)
        foreign, hog_cores = seen.foreign_cores(), (_cpu_s(hog.pid) - before) / (time.perf_counter() - t)
    finally:
        hog.kill()
        hog.wait()
    assert hog_cores > 0.2  # it ran (a machine can be loaded, not stopped)
    assert hog_cores - 0.15 < foreign < (os.cpu_count() or 1) + 0.15


def test_this_processs_own_work_is_not_foreign(monkeypatch):
    """The arithmetic with the clocks held: 1.5 s of all CPUs' busy time over 1 s, 1 s of it this process's."""
    from mlir_rl_tui.engine.measure import contention

    busy, own, wall = [10.0], [2.0], [100.0]
    monkeypatch.setattr(contention, "_busy_s", lambda: busy[0])
    monkeypatch.setattr(contention.time, "process_time", lambda: own[0])
    monkeypatch.setattr(contention.time, "perf_counter", lambda: wall[0])
    w = Watch.start()
    busy[0], own[0], wall[0] = 11.5, 3.0, 101.0
    assert w.foreign_cores() == pytest.approx(0.5)
    busy[0] = 11.0  # all of it this process's: none foreign (never below zero)
    assert w.foreign_cores() == 0.0
    monkeypatch.setattr(contention, "_busy_s", lambda: None)  # no /proc/stat: nothing known
    assert w.foreign_cores() is None


def test_a_parallel_kernel_needs_every_core_a_serial_one_its_own():
    assert contended(0.5, parallel=True, cores=2) and not contended(0.2, parallel=True, cores=2)
    assert not contended(1.0, parallel=False, cores=2) and contended(1.5, parallel=False, cores=2)
    assert not contended(None, parallel=True, cores=2)


def test_a_timing_is_far_when_its_hand_off_is_well_over_the_fastest_seen():
    assert far(2.3, 1.05) and far(1.5, 1.05) and not far(1.25, 1.05)  # the VM's states (engine.measure.contention's docstring)
    assert not far(None, 1.05) and not far(2.3, None) and not far(2.3, 0.0)  # unknown: not far
    assert far(FAR_FACTOR * 1.01, 1.0) and not far(FAR_FACTOR * 0.99, 1.0)


@ALONE
def test_a_worker_whose_first_parallel_schedule_folds_away_keeps_both_cores(engine, cache_dir):
    """A TF of one tile is a parallel schedule whose forall folds away: the kernel has no parallel region,
    so the hand-off probe is the worker's first. OpenMP must not start while the timing thread is pinned to
    core 0 (KMP_AFFINITY would bind the whole team there for the worker's life: every later parallel kernel
    of that worker 2-5x slower, its hand-off 7x; a validation sitting of 67 programs ran so). One worker,
    so both requests meet the same OpenMP; compared with an engine whose first request is truly parallel.
    The machine's peaks come from the cache (as for any user after the first run): measured in the worker,
    their parallel kernels would start OpenMP first and hide the fault (this test then passed without the fix)."""
    from conftest import SAMPLES, TORCH

    from mlir_rl_tui.engine import Engine, load_file, parse
    from mlir_rl_tui.engine.config import MeasureConfig
    from mlir_rl_tui.engine.store.cache import Cache

    cfg = MeasureConfig(runs=3)
    pool = load_file(str(TORCH / "maxpool.mlir"))  # 1x8x8x8 output: TF(1,8,8,8) is one tile
    folded = parse("op0: TF(1,8,8,8,0,0) T(0,1,1,8,1,0) V; op1: V")
    matmul, tp = load_file(str(SAMPLES / "matmul.mlir")), parse("op0: TP(32,64,0) T(8,32,1) V")
    assert engine.peaks() is not None  # the machine's record, in the session's cache, read by both engines
    after, alone = [], []
    with Engine(config=cfg, cache=Cache(str(cache_dir / "measurements.sqlite")), workers=1) as first_folded, \
            Engine(config=cfg, cache=Cache(str(cache_dir / "measurements.sqlite")), workers=1) as first_parallel:
        assert first_folded.measure(pool, folded, use_cache=False).ok
        for _ in range(5):  # interleaved (the timing lock serializes the two workers): a slow spell meets both
            after.append(first_folded.measure(matmul, tp, use_cache=False))
            alone.append(first_parallel.measure(matmul, tp, use_cache=False))
    assert all(m.ok and m.handoff_us for m in after + alone)
    # The fault lasts the worker's life, so it shows in every request; the VM's slow host state (a hand-off of
    # ~2.3 us against ~1.05, engine.measure.contention; parallel kernels up to 2.4x slower) comes and goes, so the
    # fastest of five interleaved requests is compared. A CI run once saw one request of the healthy worker at
    # 2.32 against 1.03; another (AMD VM, 2026-11-28) saw all three requests of the worker under test in the
    # slow state (2.07-2.88 us) and one of the other's out of it (1.02; its others 1.77-1.91), so the hand-off
    # bound is 3x: the fault's 7x still fails it, the slow state's 2.2x does not. A third (2026-11-28, the two
    # workers then measured one after the other, three requests each) saw the time 0.29 ms against 0.15: the
    # requests are now interleaved, so one spell cannot fall on one worker's requests only.
    h_after, h_alone = min(m.handoff_us for m in after), min(m.handoff_us for m in alone)
    t_after, t_alone = min(m.time_ms for m in after), min(m.time_ms for m in alone)
    assert h_after < 3 * h_alone, ([m.handoff_us for m in after], [m.handoff_us for m in alone])
    assert t_after < 1.5 * t_alone, ([m.time_ms for m in after], [m.time_ms for m in alone])


@ALONE
def test_a_timing_the_state_probe_calls_slow_throughout_is_flagged_widened_and_not_stored(engine, cache_dir, tmp_path):
    """Real MLIR: the state probe runs around the timing; told that this machine's steady probe is 3x faster
    than it can be, no round is steady, so the figure is flagged unsteady, its interval reaches down by the
    probe's slowdown, and the cache does not keep it. With the true reference the same schedule is steady."""
    from conftest import SAMPLES

    from mlir_rl_tui.engine import Engine, load_file, parse
    from mlir_rl_tui.engine.measure.contention import Fastest
    from mlir_rl_tui.engine.store.cache import Cache

    prog, sched = load_file(str(SAMPLES / "matmul.mlir")), parse("op0: T(8,32,1) V")
    from mlir_rl_tui.engine.config import MeasureConfig

    cache = Cache(str(tmp_path / "measurements.sqlite"))
    # the suite's engines take timings as they come (MLIR_RL_TUI_WAIT_FAR=0): `flags` waits and flags
    with Engine(cache=cache, workers=1) as eng, \
            Engine(config=MeasureConfig(wait_far=True), cache=cache, workers=1) as flags:
        cache.put_machine(eng.machine, engine.peaks((False, prog.compulsory_bytes)).to_json())
        good = eng.measure(prog, sched)
        assert good.ok and not good.unsteady and eng.steady_ref[False].value > 0
        ref = 0.02  # ms: the probe (a 256^3 matmul) would need 1.7 TFLOP/s on one core to be this fast
        flags.steady_ref[False] = Fastest(ref)
        slow = flags.measure(prog, sched, use_cache=False)
        assert slow.ok and slow.unsteady and slow.state == "unstable" and slow.probe_ms > 5 * ref
        # the interval reaches down by the probe's slowdown, and the speedup's up
        assert slow.time_ci_ms[0] <= slow.time_ms * ref / slow.probe_ms * 1.0001
        assert slow.speedup_ci[1] >= slow.speedup * 5
        assert cache.get(prog.sha256, "op0: T(8,32,1) V", eng.machine, parse=None)["time_ms"] == good.time_ms
        # every figure's interval is at least as wide as what a repeat moves here (engine.measure.interval_floor)
        f = eng.repeat_floor()
        assert good.time_ci_ms[0] <= good.time_ms / (1 + f) * 1.0001 and good.time_ci_ms[1] >= good.time_ms * (1 + f) * 0.9999
