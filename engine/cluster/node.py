"""What runs on a node of a Ray cluster: one `NodeWorker` actor per node, holding the node's own Engine (its
worker processes, its local cache and timing locks), asked for one job at a time by the driver
(engine.cluster.dispatch). A job is a measurement, a paired comparison or a per-op profile of a program the
driver sent once (a Ray object: each node fetches it once). The actor runs with two threads, so that `cancel`
reaches a measurement in progress; the driver never sends a node a second job before the first one ended.

This module imports no Ray: the driver wraps the class with `ray.remote` (engine.cluster.dispatch), so the
engine keeps Ray an optional extra."""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import replace

from mlir_rl_tui.engine.config import Limits, MeasureConfig
from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.measure.machine import cpu_model
from mlir_rl_tui.engine.measure.measurement import Comparison, Measurement
from mlir_rl_tui.engine.schedule.notation import parse


class NodeWorker:
    """A node's engine, driven by the cluster's driver."""

    def __init__(self, limits: Limits, config: MeasureConfig, reuse: bool) -> None:
        # Ray sets OMP_NUM_THREADS to the CPUs it gave the actor; the kernels run on the node's cores as on a
        # machine of its kind outside Ray (engine.run.pool: one thread per core), or the parallel figures of a
        # node started with fewer CPUs than cores would be its serial ones (seen: 0.118 vs 0.063 ms)
        os.environ.pop("OMP_NUM_THREADS", None)
        self.engine = Engine(limits, config, reuse=reuse)
        self.cancels: dict[int, threading.Event] = {}
        self.lock = threading.Lock()

    def info(self) -> dict:
        """Who this node is: the driver keeps apart the nodes of another machine kind (`machine`)."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "cpu": cpu_model("unknown CPU"), "cores": self.engine.cores, "machine": self.engine.machine,
                "cpus": sorted(os.sched_getaffinity(0)),  # the cores it may run on (taskset, cgroups)
                "openmp": self.engine.openmp}

    def _event(self, job: int) -> threading.Event:
        with self.lock:
            return self.cancels.setdefault(job, threading.Event())

    def _done(self, job: int) -> None:
        with self.lock:
            self.cancels.pop(job, None)

    def cancel(self, job: int) -> None:
        """Stop job `job` (the driver's Ctrl-C or deadline): its measurement returns "cancelled"."""
        self._event(job).set()

    @staticmethod
    def _here(program: Program) -> Program:
        # the driver's path means nothing here (a PyTorch reference beside it is checked on the driver)
        return replace(program, path=None)

    def measure(self, job: int, program: Program, schedule: str, quick: bool, use_cache: bool) -> Measurement:
        try:
            return self.engine.measure(self._here(program), parse(schedule), check=False, use_cache=use_cache,
                                       cancel=self._event(job), quick=quick)
        finally:
            self._done(job)

    def compare(self, job: int, program: Program, candidate: str, incumbent: str) -> Comparison:
        try:
            return self.engine.compare(self._here(program), parse(candidate), parse(incumbent),
                                       cancel=self._event(job))
        finally:
            self._done(job)

    def per_op(self, job: int, program: Program, schedule: str) -> list[dict]:
        try:
            return self.engine.per_op(self._here(program), parse(schedule))
        finally:
            self._done(job)

    def close(self) -> None:
        self.engine.close()
