"""`--ray-address`: tune and search measured on a real two-node Ray cluster on this machine (Ray's own
`cluster_utils.Cluster`: a head and a second node, each a raylet of its own with one CPU), driven as a user
runs the commands. No verdict depends on two timings agreeing: the search's decisions are checked by running
the same search again without the cluster over the figures the cluster measured (the driver's cache)."""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from mlir_rl_tui.engine import Engine, load_file
from mlir_rl_tui.engine.schedule.notation import Schedule, parse, to_text
from mlir_rl_tui.engine.schedule.state import effective
from mlir_rl_tui.engine.search import search
from mlir_rl_tui.engine.store.cache import Cache
from mlir_rl_tui.engine.store.keys import cache_key
from mlir_rl_tui.engine.store.tuning_db import TuningDB

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'mlir-rl-tui[ray]')")

from mlir_rl_tui.engine.cluster.engine import ClusterEngine  # noqa: E402

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples"
RAY = os.path.join(os.path.dirname(sys.executable), "ray")

# one cluster at a time on this machine: the module's tests run on one test process (pyproject's --dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray-cluster")]

#: a loopback test cluster: no token (Ray's default asks for one), nodes found dead within seconds
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_health_check_period_ms": "1000",
           "RAY_health_check_failure_threshold": "3", "RAY_health_check_initial_delay_ms": "1000"}


def _ray(core: int, *args: str) -> None:
    """`ray start` on one core of this machine (taskset): the two nodes measure side by side, as two machines."""
    cores = sorted(os.sched_getaffinity(0))
    r = subprocess.run(["taskset", "-c", str(cores[core % len(cores)]), RAY, *args, "--disable-usage-stats"],
                       capture_output=True, text=True, timeout=180, env={**os.environ, **RAY_ENV}, cwd="/")
    assert r.returncode == 0, r.stderr[-3000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raylets(folder: str) -> set[int]:
    r = subprocess.run(["pgrep", "-f", f"raylet/raylet .*{folder}"], capture_output=True, text=True)
    return {int(x) for x in r.stdout.split()}


@pytest.fixture(scope="module")
def cluster():
    """A head and a second node (`ray start`, one CPU and one core each) on loopback, in a folder of their own; yields the
    address and the second node's raylet pid. Stopped by killing this cluster's processes (`ray stop` would
    stop every Ray on the machine)."""
    folder = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's socket paths live under it
    nodes_cache = os.path.join(folder, "nodes-cache")  # the nodes' own cache (both on this machine: one folder)
    port = _free_port()
    mp = pytest.MonkeyPatch()
    for k, v in {**RAY_ENV, "MLIR_RL_TUI_CACHE": nodes_cache}.items():  # the nodes and this test's driver
        mp.setenv(k, v)
    try:
        _ray(0, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=1",
             "--include-dashboard=false", f"--temp-dir={folder}")
        head = _raylets(folder)
        _ray(1, "start", f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", "--num-cpus=1",
             f"--temp-dir={folder}")
        second = _raylets(folder) - head
        assert len(second) == 1, (head, second)
        pid = second.pop()
        with open(f"/proc/{pid}/cmdline") as f:  # its socket names it among ray.nodes()
            socket_name = next(a.split("=", 1)[1] for a in f.read().split("\0") if a.startswith("--raylet_socket_name="))
        yield f"127.0.0.1:{port}", (pid, socket_name)
    finally:
        subprocess.run(["pkill", "-9", "-f", folder])
        mp.undo()
        shutil.rmtree(folder, ignore_errors=True)


def cli(args: list[str], cache, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, **RAY_ENV, "MLIR_RL_TUI_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "mlir_rl_tui", *args], capture_output=True, text=True, env=env,
                          timeout=900, **kw)


def jobs_per_node(stderr: str) -> dict[str, int]:
    """From the report a command prints at its end: each node's jobs."""
    out = {}
    for line in stderr.splitlines():
        line = line.removeprefix("mlir-rl-tui: note: ")
        if line.startswith("node ") and " jobs in " in line:
            out[line.split(" (")[0]] = int(line.split(": ", 1)[1].split(" jobs")[0])
    return out


class Recording:
    """An engine that keeps what the search asked for and got, in order (the rest is the engine's)."""

    def __init__(self, engine) -> None:
        self.engine, self.asked = engine, []

    def measure(self, program, schedule, **kw):
        m = self.engine.measure(program, schedule, **kw)
        self.asked.append((to_text(schedule), kw.get("quick", False), m))
        return m

    def baseline(self, program, **kw):
        return self.measure(program, Schedule({}), **kw)

    def __getattr__(self, name):
        return getattr(self.engine, name)


class Replay:
    """One candidate at a time, answered with the figures a recorded search got (no cluster, no timing)."""

    def __init__(self, local, asked) -> None:
        self.limits, self.openmp, self.machine = local.limits, local.openmp, local.machine
        self.figures = {text: m for text, _, m in asked}
        self.asked: list[str] = []

    def measure(self, program, schedule, **kw):
        text = to_text(schedule)
        self.asked.append(text)
        assert text in self.figures, f"the search asked here for {text!r}, which it did not ask the cluster for"
        return copy.deepcopy(self.figures[text])

    def baseline(self, program, **kw):
        return self.measure(program, Schedule({}))


def test_search_on_two_nodes_uses_both_and_decides_as_one_machine_on_the_same_figures(cluster, tmp_path):
    address, _ = cluster
    prog = load_file(str(SAMPLES / "matmul.mlir"))
    local = Engine(cache=Cache(str(tmp_path / "driver.sqlite")))
    with ClusterEngine(local, address) as eng:
        assert eng.width == 2  # each node on a core of its own
        rec = Recording(eng)
        r = search(rec, prog, "hill", budget=10, seed=0)
        work = {n.name: n.done for n in eng.cluster.nodes}
    assert r.best.ok and r.evaluated + r.cache_hits >= 10
    assert all(n > 0 for n in work.values()), work  # both nodes measured candidates
    # the same search on one machine, answered with the figures the cluster's nodes took: it asks for the same
    # candidates in the same order and ends at the same schedule (measuring ahead changed no decision)
    replay = Replay(local, rec.asked)
    again = search(replay, prog, "hill", budget=10, seed=0)
    assert replay.asked == [text for text, _, _ in rec.asked]
    assert to_text(again.schedule) == to_text(r.schedule) and again.history == r.history


def test_random_search_on_two_nodes_draws_ahead_the_candidates_it_draws_one_by_one(cluster, tmp_path):
    address, _ = cluster
    prog = load_file(str(SAMPLES / "matmul.mlir"))
    local = Engine(cache=Cache(str(tmp_path / "driver.sqlite")), reuse=False)
    with ClusterEngine(local, address) as eng:
        rec = Recording(eng)
        r = search(rec, prog, "random", budget=6, seed=3)
        ahead = sum(n.done for n in eng.cluster.nodes) - len(rec.asked)
    replay = Replay(local, rec.asked)
    again = search(replay, prog, "random", budget=6, seed=3)
    assert replay.asked == [text for text, _, _ in rec.asked] and len(replay.asked) == 7  # the baseline, 6 draws
    assert to_text(again.schedule) == to_text(r.schedule)
    assert 0 <= ahead <= 1  # at most the one draw ahead of the last, measured and not asked for


def test_tune_on_two_nodes_builds_a_checked_library_whose_records_name_their_node(cluster, tmp_path):
    address, _ = cluster
    out = tmp_path / "mm.so"
    r = cli(["tune", "samples/matmul.mlir", "--minutes", "1", "--no-policy", "-o", str(out), "--db",
             str(tmp_path / "tuning.sqlite"), "--json", "--ray-address", address], tmp_path / "driver-cache")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert out.exists() and got["checked"], got
    assert "measuring on 2 nodes of the Ray cluster" in r.stderr, r.stderr
    assert set(jobs_per_node(r.stderr)) == {"node 1", "node 2"}, r.stderr
    db = TuningDB(str(tmp_path / "tuning.sqlite"), readonly=True, named=True)
    recs = db.records()
    assert recs and all("of a Ray cluster" in rec.origin for rec in recs), [rec.origin for rec in recs]


def test_a_node_killed_mid_run_loses_nothing_and_the_run_goes_on_until_stopped(cluster, tmp_path):
    address, (raylet, socket_name) = cluster
    prog = load_file(str(SAMPLES / "matmul.mlir"))
    cache = Cache(str(tmp_path / "driver.sqlite"))
    stop = threading.Event()  # what Ctrl-C sets
    # reuse=False: every candidate measured anew on its node (the nodes' cache knows the earlier tests' figures,
    # which a node answers in milliseconds)
    with ClusterEngine(Engine(cache=cache, reuse=False), address) as eng:
        rec = Recording(eng)
        box: dict = {}
        th = threading.Thread(target=lambda: box.setdefault("r", search(rec, prog, "hill", budget=200, seed=1,
                                                                         cancel=stop)))
        th.start()
        node_id = next(n["NodeID"] for n in ray.nodes() if n.get("RayletSocketName") == socket_name)
        second = next(n for n in eng.cluster.nodes if n.id == node_id)  # the node whose raylet is killed
        first = next(n for n in eng.cluster.nodes if n is not second)
        end = time.monotonic() + 300
        while (len(rec.asked) < 4 or not second.busy) and th.is_alive() and time.monotonic() < end:
            time.sleep(0.05)  # a few candidates measured, and the second node in the middle of one
        assert second.busy, "the second node was never given a candidate"
        os.kill(raylet, signal.SIGKILL)  # kill -9 the second node's raylet
        while second.alive and th.is_alive() and time.monotonic() < end:
            time.sleep(0.1)  # Ray's health checks find it gone within seconds
        after = len(rec.asked)
        while len(rec.asked) < after + 2 and th.is_alive() and time.monotonic() < end:
            time.sleep(0.1)  # the first node goes on alone
        stop.set()
        th.join(120)
        requeued = eng.cluster.requeued
    r = box["r"]
    assert r.best.ok and r.stopped in ("cancelled", "converged"), r  # stopped (or done), keeping the best so far
    assert not second.alive and first.alive
    assert requeued == second.lost and requeued >= 1  # what it lost was measured again on the other node
    # every figure the search got that the engine stores (not flagged) is in the driver's cache file: none lost
    cache = Cache(str(tmp_path / "driver.sqlite"))
    for text, _, m in rec.asked:
        if m.ok and not m.flagged and not m.cut_short:
            eff = to_text(effective(prog, parse(text), eng.limits, eng.openmp))
            assert cache.get(cache_key(prog), eff, eng.machine) is not None, text


def test_an_address_nothing_answers_at_is_one_line_at_once(tmp_path):
    for address, why in ((f"127.0.0.1:{_free_port()}", "no Ray cluster answers there"), ("nohost", "not HOST:PORT")):
        t = time.monotonic()
        r = cli(["search", "matmul", "--budget", "2", "--ray-address", address], tmp_path)
        assert r.returncode != 0 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert time.monotonic() - t < 60
