"""Candidates per second on a Ray cluster (`--ray-address`), and the driver's own cost per candidate.

Three ways of running the same search, interleaved round by round, each on a fresh cache (every candidate
really compiled and timed): on this machine alone (both cores), on a one-node Ray cluster and on a two-node
one, started here with `ray start` on loopback, each node confined to a core of its own (`taskset`). The
nodes share one cache folder and with it the engine's timing locks (one machine's memory and caches: their
timings never overlap), so what the second node adds here is compiling and checking while the first times;
on separate machines it would add its timings too. Each run is `mlir-rl-tui search FILE --method hill --budget N --json`; the report gives
its wall time, the candidates it looked at per second, and the driver process's own CPU time per job from
its first job to its end (proposing, sending, receiving and writing: the nodes' work runs in Ray's worker
processes, not in the driver; the command's start, its imports and Ray's connection, is left out). From those, the scale model of docs/cluster.md.

    .venv/bin/python benchmarks/cluster.py [--file matmul] [--method random|hill] [--budget 30] [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
RAY_ENV = {"RAY_AUTH_MODE": "disabled"}  # a loopback cluster of this benchmark's own


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """A head and `nodes - 1` more nodes on this machine, one CPU each, node i on core i (taskset: a machine of
    one core each), in a folder of their own."""

    def __init__(self, nodes: int) -> None:
        self.folder = tempfile.mkdtemp(prefix="rb", dir="/tmp")
        self.cache = os.path.join(self.folder, "nodes-cache")
        self.port = free_port()
        try:
            self._start(nodes)
        except BaseException:
            self.stop()
            raise

    def _start(self, nodes: int) -> None:
        env = {**os.environ, **RAY_ENV, "MLIR_RL_TUI_CACHE": self.cache}
        common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", f"--temp-dir={self.folder}", "--disable-usage-stats"]
        cores = sorted(os.sched_getaffinity(0))
        self._run(["taskset", "-c", str(cores[0]), RAY, "start", "--head", f"--port={self.port}", "--include-dashboard=false",
                   *common], env)
        for i in range(1, nodes):
            self._run(["taskset", "-c", str(cores[i % len(cores)]), RAY, "start", f"--address=127.0.0.1:{self.port}", *common], env)
        self.address = f"127.0.0.1:{self.port}"

    @staticmethod
    def _run(cmd: list[str], env: dict) -> None:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/", timeout=180)
        if r.returncode:
            raise SystemExit(f"ray start failed: {r.stderr[-2000:]}")

    def stop(self) -> None:
        subprocess.run(["pkill", "-9", "-f", self.folder])
        time.sleep(1.0)
        shutil.rmtree(self.folder, ignore_errors=True)


def run_search(file: str, method: str, budget: int, seed: int, address: str | None) -> dict:
    cache = tempfile.mkdtemp(prefix="rbd", dir="/tmp")
    cmd = [sys.executable, "-m", "mlir_rl_tui", "search", file, "--method", method, "--budget", str(budget),
           "--seed", str(seed), "--json"] + (["--ray-address", address] if address else [])
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, **RAY_ENV, "MLIR_RL_TUI_CACHE": cache})
    wall = time.monotonic() - t0
    shutil.rmtree(cache, ignore_errors=True)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {r.stderr[-2000:]}")
    out = json.loads(r.stdout)
    cands = out["evaluated"] + out["cache_hits"]
    notes = [line.split("note: ", 1)[-1] for line in r.stderr.splitlines()]
    ahead = next((int(n.split()[0]) for n in notes if "measured ahead were not asked for" in n), 0)
    # the driver's own CPU per job from its first job to its close (engine.cluster.engine.ClusterEngine.report)
    driver = next((float(n.split("the driver: ")[1].split()[0]) for n in notes if n.startswith("the driver: ")), None)
    return {"wall_s": wall, "candidates": cands, "evaluated": out["evaluated"], "per_s": cands / wall,
            "driver_ms_per_candidate": driver, "wasted": ahead, "speedup": out["speedup"],
            "schedule": out["schedule"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", default="matmul")
    ap.add_argument("--method", default="random", choices=["random", "hill"],
                    help="random (default): its draws do not depend on the figures, so every way of running it "
                         "measures the same candidates; hill: its path depends on them")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {"here": [], "1 node": [], "2 nodes": []}  # a node: one core
    for rnd in range(args.rounds):
        for kind in rows:
            cluster = None
            try:
                cluster = None if kind == "here" else LocalCluster(1 if kind == "1 node" else 2)
                rows[kind].append(run_search(args.file, args.method, args.budget, rnd,
                                             cluster.address if cluster else None))
            finally:
                if cluster is not None:
                    cluster.stop()
            print(f"round {rnd + 1} {kind}: {rows[kind][-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0

    def med(kind: str, key: str) -> str:
        xs = [r[key] for r in rows[kind]]
        return f"{statistics.median(xs):.3g} ({min(xs):.3g}-{max(xs):.3g})"

    print(f"{args.method} search of {args.file}, budget {args.budget}, {args.rounds} rounds each (median, range):")
    for kind in rows:  # here, the driver's process is also the one that measures: no driver cost of its own
        driver = f", driver {med(kind, 'driver_ms_per_candidate')} ms CPU per candidate" if kind != "here" else ""
        print(f"  {kind:8} wall {med(kind, 'wall_s')} s, {med(kind, 'per_s')} candidates/s{driver}, "
              f"{med(kind, 'wasted')} measured ahead unused, best {med(kind, 'speedup')}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
