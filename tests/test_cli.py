"""The command line as a user runs it: JSON contracts and one-line errors for bad input."""

from __future__ import annotations

import json
import time

import pytest
from bad_inputs import matmul
from conftest import SAMPLE_FILES, SAMPLES, TORCH_FILES, cli


@pytest.mark.parametrize("path", SAMPLE_FILES + TORCH_FILES, ids=lambda p: p.parent.name + "/" + p.stem)
def test_inspect_json_on_every_program(path, cache_dir):
    r = cli("inspect", str(path), "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    from mlir_rl_tui.engine.rl.features import feature_size

    assert data["ops"]
    for op in data["ops"]:
        assert {"id", "name", "loops", "producers", "consumers", "features", "mask"} <= set(op)
        assert len(op["features"]) == feature_size()
        assert all({"bound", "iterator"} == set(lp) for lp in op["loops"])
        assert op["mask"]["transformation"]["NT"]["allowed"]


def test_apply_json_then_cached(cache_dir):
    s = "op0: TP(32,64,0) T(8,32,1) V"
    first = json.loads(cli("apply", str(SAMPLES / "matmul.mlir"), "--schedule", s, "--json").stdout)
    second = json.loads(cli("apply", str(SAMPLES / "matmul.mlir"), "--schedule", s, "--json").stdout)
    assert set(first) >= {"status", "baseline_ms", "time_ms", "speedup", "validated", "cached", "schedule"}
    assert first["status"] == "ok" and first["validated"] and first["speedup"] > 1
    assert not first["cached"] and second["cached"]
    assert second["time_ms"] == first["time_ms"] and second["speedup_ci"] == first["speedup_ci"]


def test_apply_json_reports_spread_and_roofline(cache_dir):
    """gflops, the fraction of the machine's measured FMA peak, the 95% intervals, the runtime."""
    r = cli("apply", str(SAMPLES / "matmul.mlir"), "--schedule", "op0: T(8,32,1) V", "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    assert m["status"] == "ok" and m["validated"] and m["runtime"] == "serial" and m["bound"] == "compute"
    assert abs(m["gflops"] - 2 * 256 ** 3 / m["time_ms"] / 1e6) < 1e-6 * m["gflops"]
    assert 0.2 < m["peak_fraction"] < 1.3  # the new V: near the FMA peak (measured on this machine)
    lo, hi = m["time_ci_ms"]
    # the interval is as wide as this machine's repeats move (engine.measure.interval_floor): its width is the machine's, the
    # relative error is the interval's half-width
    assert lo <= m["time_ms"] <= hi and m["rel_error"] == pytest.approx((hi - lo) / 2 / m["time_ms"])
    slo, shi = m["speedup_ci"]
    assert slo <= m["speedup"] <= shi and m["runs"] >= 10
    text = cli("apply", str(SAMPLES / "matmul.mlir"), "--schedule", "op0: T(8,32,1) V").stdout
    assert "% of FMA peak (serial)" in text and "+-" in text


def test_apply_empty_schedule_is_baseline(cache_dir):
    r = cli("apply", str(SAMPLES / "add.mlir"), "--json")
    d = json.loads(r.stdout)
    assert d["status"] == "ok" and d["speedup"] == 1.0 and d["schedule"] == ""


def _bad_files(tmp):
    text = (SAMPLES / "matmul.mlir").read_text()
    files = {
        "not_mlir": ("\x00\x01binary\xff", "not MLIR"),
        "garbage": ("hello world", "not valid MLIR"),
        "dynamic": ("func.func @f(%a: tensor<?xf32>) -> tensor<?xf32> { return %a : tensor<?xf32> }", "dynamic"),
        "no_linalg": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }", "no linalg"),
        "truncated": (text[: len(text) * 2 // 3], "line"),
    }
    out = {}
    for name, (body, words) in files.items():
        p = tmp / f"{name}.mlir"
        p.write_bytes(body.encode("latin-1") if name == "not_mlir" else body.encode())
        out[name] = (p, words)
    return out


@pytest.mark.parametrize("case", ["not_mlir", "garbage", "dynamic", "no_linalg", "truncated"])
@pytest.mark.parametrize("cmd", ["inspect", "apply"])
def test_bad_input_one_line_error(tmp_path, case, cmd, cache_dir):
    path, words = _bad_files(tmp_path)[case]
    t0 = time.monotonic()
    r = cli(cmd, str(path), timeout=30)
    assert time.monotonic() - t0 < 20
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and words in lines[0]


@pytest.mark.parametrize("schedule,words", [
    ("op7: T(8,8,8)", "unknown op id"),
    ("op0 T(8", "malformed"),
    ("op0: TP(0,0,64)", "reduction"),
    ("op0: T(8,8)", "needs 3 tile sizes"),
    ("op0: V", "8192"),
])
def test_bad_schedule_one_line_error(schedule, words, cache_dir):
    r = cli("apply", str(SAMPLES / "matmul.mlir"), "--schedule", schedule, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr


def test_missing_file(cache_dir):
    r = cli("inspect", "/nonexistent/x.mlir")
    assert r.returncode == 2 and "cannot read" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_max_seconds_stops_a_long_first_measurement_with_one_line(tmp_path, cache_dir):
    """A 2048^3 matmul's untransformed run takes seconds: the note says how long measuring will take, and
    --max-seconds 3 ends the command at 3 s with what it was doing."""
    path = tmp_path / "mm2048.mlir"
    path.write_text(matmul(2048))
    t0 = time.time()
    r = cli("apply", str(path), "--schedule", "op0: TP(64,64,0) T(8,32,1) V", "--max-seconds", "3", "--no-cache")
    took = time.time() - t0
    assert r.returncode == 1 and r.stdout == "", r.stdout
    lines = r.stderr.strip().splitlines()
    assert "a first measurement of a schedule should take about" in lines[0] and "--max-seconds 3" in lines[0]
    assert lines[-1].startswith("mlir-rl-tui: error: stopped at --max-seconds 3 while ")
    assert "Traceback" not in r.stderr and took < 3 + 4  # interpreter start-up and the worker's stop
    bad = cli("apply", str(path), "--max-seconds", "0")
    assert bad.returncode == 2 and "not a positive number of seconds" in bad.stderr
