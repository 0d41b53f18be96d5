"""engine.contention: other processes' CPU time over a span, and when a timing counts as contended."""

from __future__ import annotations

import subprocess
import sys
import time

from mlir_rl_tui.engine.contention import FAR_FACTOR, SLACK_CORES, Watch, contended, far


def test_a_busy_process_shows_as_about_one_foreign_core_and_sleeping_as_none():
    quiet = Watch.start()
    time.sleep(0.3)
    assert quiet.foreign_cores() is not None and quiet.foreign_cores() < SLACK_CORES
    own = Watch.start()
    t = time.perf_counter()
    while time.perf_counter() - t < 0.3:  # this process's own work is not foreign
        pass
    assert own.foreign_cores() < SLACK_CORES
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        seen = Watch.start()
        time.sleep(0.4)
        foreign = seen.foreign_cores()
    finally:
        hog.kill()
        hog.wait()
    assert 0.7 < foreign < 1.3


def test_a_parallel_kernel_needs_every_core_a_serial_one_its_own():
    assert contended(0.5, parallel=True, cores=2) and not contended(0.2, parallel=True, cores=2)
    assert not contended(1.0, parallel=False, cores=2) and contended(1.5, parallel=False, cores=2)
    assert not contended(None, parallel=True, cores=2)


def test_a_timing_is_far_when_its_hand_off_is_well_over_the_fastest_seen():
    assert far(2.3, 1.05) and far(1.5, 1.05) and not far(1.25, 1.05)  # the VM's states (engine.contention's docstring)
    assert not far(None, 1.05) and not far(2.3, None) and not far(2.3, 0.0)  # unknown: not far
    assert far(FAR_FACTOR * 1.01, 1.0) and not far(FAR_FACTOR * 0.99, 1.0)
