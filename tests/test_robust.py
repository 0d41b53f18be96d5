"""No input kills the engine and nothing outlives it: a run over its limit is stopped at the limit, a
worker ends with its parent, a search killed with -9 at any moment loses no whole trace record."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

from conftest import SAMPLES

from mlir_rl_tui.engine import load, parse
from mlir_rl_tui.engine.rl.trace import read_trace

#: matmul -> matmul. The second matmul's init is created first, so TF fuses the first matmul into it;
#: TF(0,1,0) tiles the second one by columns, and each of its 512 tiles needs every row of the first
#: matmul: the producer is computed again per column, ~100x the baseline's work.
RECOMPUTE = textwrap.dedent("""
    func.func @forward(%a: tensor<256x1024xf32>, %b: tensor<1024x64xf32>, %w: tensor<64x512xf32>) -> tensor<256x512xf32> {
      %cst = arith.constant 0.000000e+00 : f32
      %e2 = tensor.empty() : tensor<256x512xf32>
      %init2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<256x512xf32>) -> tensor<256x512xf32>
      %e1 = tensor.empty() : tensor<256x64xf32>
      %init1 = linalg.fill ins(%cst : f32) outs(%e1 : tensor<256x64xf32>) -> tensor<256x64xf32>
      %p = linalg.matmul ins(%a, %b : tensor<256x1024xf32>, tensor<1024x64xf32>) outs(%init1 : tensor<256x64xf32>) -> tensor<256x64xf32>
      %c = linalg.matmul ins(%p, %w : tensor<256x64xf32>, tensor<64x512xf32>) outs(%init2 : tensor<256x512xf32>) -> tensor<256x512xf32>
      return %c : tensor<256x512xf32>
    }
""")


def test_a_run_over_its_limit_is_stopped_at_the_limit(engine):
    """The watchdog's limit is wall time on the worker's clock: its answer (the "timing" stage, from the
    run's start) comes by the limit plus the watchdog's wake-up, on a loaded machine too."""
    prog = load(RECOMPUTE, name="recompute")
    assert prog.ops[0].fusion_producer == "op1" and prog.ops[1].name == "linalg.matmul"
    base = engine.baseline(prog)
    assert base.ok, base.error
    c = engine.config
    limit = max(c.timeout_factor * base.time_ms / 1e3, c.timeout_floor_s)
    restarts = engine.pool.restarts
    m = engine.measure(prog, parse("op0: TF(0,1,0)"), use_cache=False)
    assert m.status == "timeout", m
    assert "\n" not in m.error and "limit" in m.error and "stopped after" in m.error
    stopped = m.stages_ms["timing"] / 1e3
    assert limit <= stopped <= limit + 0.25, f"stopped {stopped:.2f} s after the run started; limit {limit:.2f} s"
    assert engine.pool.restarts == restarts + 1  # the stopped worker was replaced ...
    ok = engine.measure(prog, parse("op0: T(8,32,0)"), use_cache=False)
    assert ok.status == "ok", ok.error  # ... and the next request is measured


def test_a_runaway_under_its_limit_is_answered_within_the_limit_plus_its_grace(engine, monkeypatch):
    """Runs just under the limit are not stopped by the watchdog, yet their timing used to take ten of them
    (0.83 s runs against a 1 s limit, answered after 12.7 s). A tiled fusion that recomputes its producer per
    column tile is made a runaway by its limit: the limit is set to 1.8x its checked run (the run is then
    between a third of the limit and the limit, whatever the load does to it within -45%/+80%; how long a
    given tile size runs is the machine's, so no tile size is a runaway everywhere). The cap is wall time on
    the worker's clock (the first run's start + the limit + RUNAWAY_GRACE_S), so its rule holds on a loaded
    machine too: the worker answers (its "timing" stage) by the cap plus the watchdog's wake-up, less the time
    it did not run the schedule: its "wait" for the locks of another engine's timing and its "probes",
    compiling the probes (a fresh worker's: 0.5 s beside another process). A run over the limit is answered
    at the limit; the parent's wall time adds process start and exit, which load stretches."""
    from dataclasses import replace

    from mlir_rl_tui.engine.run.worker import RUNAWAY_GRACE_S, RUNAWAY_SHARE

    prog = load(RECOMPUTE, name="recompute")
    sched = parse("op0: TF(0,8,0)")
    monkeypatch.setattr(engine, "config", replace(engine.config, timeout_floor_s=30.0))
    run_s = engine.validate(prog, sched).stages_ms["run"] / 1e3  # its checked run, without a limit to speak of
    runaways = 0
    for _ in range(3):
        limit = 1.8 * run_s
        monkeypatch.setattr(engine, "config", replace(engine.config, timeout_factor=0.0, timeout_floor_s=limit))
        m = engine.measure(prog, sched, use_cache=False)
        assert m.status in ("ok", "timeout"), m
        assert "timing" in m.stages_ms, m
        # less its wait for another engine's timing and its probes' compiling (a fresh worker's)
        answered = (m.stages_ms["timing"] - m.stages_ms.get("wait", 0.0) - m.stages_ms.get("probes", 0.0)) / 1e3
        if m.status == "ok" and m.stages_ms["run"] / 1e3 <= RUNAWAY_SHARE * limit:
            run_s = m.stages_ms["run"] / 1e3  # the machine sped up: not a runaway, timed as any schedule
            continue
        assert answered <= limit + RUNAWAY_GRACE_S + 0.25, \
            f"{m.status}: answered {answered:.2f} s after its first run, limit {limit:.2f} s"
        if m.status == "ok":
            runaways += 1
            assert 1 <= m.runs <= 3 and m.time_ms is not None  # timed under the cap: no warm-up, few rounds
            break
        run_s = limit  # a time-out: its run took more than the limit
    assert runaways == 1, "no run fell between a third of its limit and the limit in three tries"


# -- processes --------------------------------------------------------------------------------------
def _proc(pid: int) -> tuple[str, int, bytes, bytes] | None:
    """(state, parent pid, command line, environment) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1]), cmd, env


def live_workers(tag: str) -> dict[int, int]:
    """pid -> parent pid of the live `mlir_rl_tui.engine.run.worker` processes started under MLIR_RL_TEST_TAG=tag."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            p = _proc(int(name))
            if p and p[0] != "Z" and b"engine.run.worker" in p[2] and f"MLIR_RL_TEST_TAG={tag}".encode() in p[3]:
                out[int(name)] = p[1]
    return out


def wait_gone(tag: str, seconds: float) -> dict[int, int]:
    """The tagged workers still alive after up to `seconds` (empty when all ended)."""
    end = time.monotonic() + seconds
    while (alive := live_workers(tag)) and time.monotonic() < end:
        time.sleep(0.05)
    return alive


def tagged_env(tag: str) -> dict[str, str]:
    return dict(os.environ, MLIR_RL_TEST_TAG=tag)


def test_a_busy_worker_ends_when_its_parent_is_killed(engine):
    """The parent is killed while its worker is in the middle of a run of many seconds (no run limit):
    the worker does not read its closed stdin until the run ends, so only its watchdog can end it."""
    assert engine.peaks() is not None  # in the shared cache (the parent below inherits its folder)
    tag = f"parent-{os.getpid()}-{time.monotonic_ns()}"
    code = textwrap.dedent("""
        import sys
        from mlir_rl_tui.engine import Engine, load, parse
        from mlir_rl_tui.engine.config import MeasureConfig
        prog = load(sys.stdin.read())
        eng = Engine(config=MeasureConfig(runs=1, timeout_factor=1e6), workers=1)
        seen = []
        def progress(phase, i, n):
            seen.append(phase)
            if phase == "run" and "transform" in seen:  # the slow schedule's first run
                print(" ".join(str(w.proc.pid) for w in eng.pool._all if w.alive()), flush=True)
        eng.measure(prog, parse("op0: TF(0,1,0)"), on_progress=progress, use_cache=False)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], env=tagged_env(tag), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        parent.stdin.write(RECOMPUTE)
        parent.stdin.close()
        pids = [int(x) for x in parent.stdout.readline().split()]
        time.sleep(0.5)  # well into a run of several seconds
        assert pids and set(live_workers(tag)) == set(pids)
        assert all(ppid == parent.pid for ppid in live_workers(tag).values())
    finally:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
    t0 = time.monotonic()
    assert wait_gone(tag, 5.0) == {}
    assert time.monotonic() - t0 < 1.0  # promptly: the watchdog looks every 0.1 s


def test_kill_9_of_a_search_keeps_every_whole_record_and_leaves_no_worker(engine, matmul, tmp_path):
    """10 searches appending to one trace, each killed with -9 at a random moment; every few rounds the
    trace also gets a cut last line, as a writer killed mid-record leaves it."""
    engine.baseline(matmul)
    assert engine.peaks() is not None  # in the shared cache: the searches below measure only schedules
    trace = tmp_path / "t.jsonl"
    tag = f"search-{os.getpid()}-{time.monotonic_ns()}"
    rng = random.Random(7)

    def search(seed: int, method: str = "random") -> subprocess.Popen:
        # random with a new seed each round: new candidates, so the kills land while measuring
        return subprocess.Popen(
            [sys.executable, "-m", "mlir_rl_tui", "search", str(SAMPLES / "matmul.mlir"), "--method", method,
             "--budget", "2", "--runs", "1", "--seed", str(seed), "--trace", str(trace), "--json"],
            env=tagged_env(tag), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    whole: list[dict] = []
    killed_with_workers = 0
    for i in range(10):
        p = search(i)
        time.sleep(rng.uniform(0.5, 3.0))
        if live_workers(tag):
            killed_with_workers += 1
        p.send_signal(signal.SIGKILL)
        p.communicate()
        assert wait_gone(tag, 3.0) == {}, f"round {i}: workers outlived their parent"
        if i % 3 == 1:
            with open(trace, "ab") as f:  # a record cut in the middle
                f.write(b'{"program":"samples/matmul.mlir","program_sha256":"')
        if trace.exists():
            tr = read_trace(str(trace))
            assert tr.bad_lines == 0, f"round {i}"
            assert tr.records[:len(whole)] == whole, f"round {i}: a whole record was lost"
            whole = tr.records
    assert killed_with_workers >= 3  # the kills did land while measuring
    p = search(0, "hill")  # its first candidate (register tiles) beats the baseline: a non-empty episode
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    result = json.loads(out)
    tr = read_trace(str(trace))
    assert not tr.truncated and tr.bad_lines == 0
    assert tr.records[:len(whole)] == whole
    last = tr.episodes()[-1]  # the episode appended after all that is complete
    assert last.schedule == parse(result["schedule"]) and last.schedule.ops
    assert [r["step"] for r in last.records] == list(range(len(last.records)))
    assert last.measurement == {k: v for k, v in result.items() if k in last.measurement}
    assert all(r["measurement"] is None for r in last.records[:-1])
    assert wait_gone(tag, 3.0) == {}
