"""Bad input on the command line and in the app (issue 11): one line on stderr within 5 s, exit status 2,
no signal, no traceback; several functions need --entry, which then schedules and times that function."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from bad_inputs import KINDS, add, matmul, private_helper_first, write

CASES = [(kind, cmd) for kind, (_, cmds) in KINDS.items() for cmd in cmds]


def run(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", *args], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL)
    return r, time.monotonic() - t0


@pytest.mark.parametrize("kind,cmd", CASES, ids=[f"{c}-{k}" for k, c in CASES])
def test_bad_input_is_one_line_status_2(kind, cmd, tmp_path, cache_dir):
    words, _ = KINDS[kind]
    path = write(kind, tmp_path)
    args = [str(path)] if cmd == "app" else [cmd, str(path)]
    if cmd == "apply":
        args += ["--schedule", ""]
    r, seconds = run(*args, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)  # not a signal (negative), not an internal error (1)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith(f"mlir-rl-tui: error: {path}") and words in lines[0], lines[0]
    assert seconds < 5, f"{seconds:.1f} s"
    assert r.stdout == ""


def test_inspect_with_entry_lists_only_that_function(tmp_path, cache_dir):
    path = write("private_helper_first", tmp_path)
    r, _ = run("inspect", str(path), "--entry", "helper", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["function"] == "helper" and [o["name"] for o in data["ops"]] == ["linalg.add"]
    r, _ = run("inspect", str(path), "--entry", "forward")
    assert r.returncode == 0 and "@forward, 2 linalg ops" in r.stdout
    r, _ = run("inspect", str(path), "--entry", "nope")
    assert r.returncode == 2 and "no function @nope; --entry must name one of @helper, @forward" in r.stderr


def test_apply_times_the_entry_function(tmp_path, cache_dir):
    """The worker runs Program.func_name: a 128^3 matmul as the entry is far slower than a 16x16 add,
    and the transformed IR (-o) has the schedule in the entry only."""
    path = tmp_path / "two.mlir"
    path.write_text(matmul(128, "big") + add(16, "small"))
    out = tmp_path / "big.out.mlir"
    r, _ = run("apply", str(path), "--entry", "big", "--schedule", "op0: T(8,32,1) V", "--json", "-o", str(out),
               timeout=300)
    assert r.returncode == 0, r.stderr
    big = json.loads(r.stdout)
    assert big["status"] == "ok" and big["validated"]
    assert abs(big["gflops"] - 2 * 128 ** 3 / big["time_ms"] / 1e6) < 1e-6 * big["gflops"]
    ir = out.read_text()
    small_at = ir.index("@small")
    assert "vector." in ir[:small_at] and "vector." not in ir[small_at:]
    r, _ = run("apply", str(path), "--entry", "small", "--json", timeout=300)
    small = json.loads(r.stdout)
    assert small["status"] == "ok" and small["baseline_ms"] * 20 < big["baseline_ms"]


def test_apply_without_entry_lists_the_candidates(tmp_path, cache_dir):
    path = tmp_path / "h.mlir"
    path.write_text(private_helper_first())
    r, seconds = run("apply", str(path), "--schedule", "op0: T(4,4) V")
    assert r.returncode == 2 and seconds < 5
    assert r.stderr.strip().splitlines() == [
        f"mlir-rl-tui: error: {path}: a private function before the public one (@helper, @forward); choose "
        "the one to schedule and time with --entry NAME"]


def test_apply_says_how_long_a_slow_program_takes_before_starting(tmp_path, cache_dir):
    """matmul 2048^3: a note before any work, then progress lines (stopped after a few seconds)."""
    path = tmp_path / "mm2048.mlir"
    path.write_text(matmul(2048))
    # SIGINT as a terminal gives it: a background job of a shell without job control (`cmd &` in a script,
    # as a CI runner may start the tests) inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: the command would run on, holding a core, after this test
    proc = subprocess.Popen([sys.executable, "-m", "mlir_rl_tui", "apply", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = proc.stderr.readline()
        assert first.startswith(f"mlir-rl-tui: note: {path}: a first measurement of a schedule should take about")
        assert "an untransformed run of @forward about 9 s" in first and "10 of them" in first
        second = proc.stderr.readline()  # after a second: the progress line
        assert second.startswith("apply: ") and second.rstrip().endswith("s)")
    finally:
        proc.send_signal(signal.SIGINT)  # the command closes its workers and exits
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()  # its workers follow their parent (engine.run.watchdog)
            proc.communicate()
            raise


def test_app_with_an_unknown_entry_is_one_line(tmp_path, cache_dir):
    """An explicit --entry that names no function is an error, not the picker (the picker is for no --entry)."""
    path = write("multi_public", tmp_path)
    r, seconds = run(str(path), "--entry", "nope")
    assert r.returncode == 2 and seconds < 5
    assert r.stderr.strip().splitlines() == [
        f"mlir-rl-tui: error: {path}: no function @nope; --entry must name one of @first, @second"]
