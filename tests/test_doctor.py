"""`mlir-rl-tui doctor`: the machine's figures and the timing noise now, on real MLIR; the state's thresholds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mlir_rl_tui.engine.measure.machine import state_of

ALONE = pytest.mark.alone  # a test whose timings' figures are the point runs alone (tests/conftest.py)


def test_the_state_is_the_worst_of_its_readings():
    assert state_of(1.02, 1.05, 0.0, 0.1) == "quiet"
    assert state_of(1.08, 1.05, 0.0, 0.1) == "noisy"
    assert state_of(1.02, 1.14, None, None) == "noisy"
    assert state_of(1.02, 1.20, 0.0, 0.0) == "unstable"
    assert state_of(1.02, None, 0.05, 0.0) == "noisy"  # steal
    assert state_of(1.02, 1.05, 0.0, 1.5) == "unstable"  # another process busy on a core


@ALONE
def test_doctor_json_from_the_command_line(cache_dir):
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "doctor", "--repeats", "2", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["cores"] >= 1 and d["cpu"] and d["state"] in ("quiet", "noisy", "unstable")
    assert d["peaks"]["fma_gflops_1"] > 0 and d["peaks"]["bandwidth_1"]
    s = d["serial"]
    assert len(s["times_ms"]) == 2 and s["spread"] == max(s["times_ms"]) / min(s["times_ms"]) >= 1
    word = state_of(s["spread"], d["parallel"]["spread"] if d["parallel"] else None, d["steal"], d["foreign_cores"])
    flagged = s["flagged"] + (d["parallel"]["flagged"] if d["parallel"] else 0)
    assert d["state"] == ("unstable" if flagged > 1 else word)
    # its repeats taught the engine how far a figure moves here: every interval is at least that wide
    assert d["pairs"] >= 1 and d["floor"] > 0
