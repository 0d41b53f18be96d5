"""The driver's side of a Ray cluster: one NodeWorker actor per node (engine.cluster.node), pinned to its node,
owning its CPUs, and a dispatcher thread that gives each node one job at a time and streams the results back
as they finish (MetaSchedule's RPC runner: a tracker and its boards; here Ray is the tracker).

- **Machine kind.** Each node says its machine key (engine.store.keys.machine_key). The cluster measures for
  one kind, the kind of most nodes (ties: the first node's); nodes of another kind are refused, each with a
  line naming it: their figures would mix two machines' times in one search.
- **One job per core set.** Ray nodes started on one machine (one address) share its cores unless each is
  confined to cores of its own (`taskset`, cgroups: the cores a node's processes may run on): nodes that share
  cores take turns, the least used first, as one machine's engine measures one candidate at a time.
- **Faults.** A node that dies (its raylet killed, pre-empted) mid-job loses that job, not the run: the job
  goes back to the front of the queue for another node, at most `MAX_TRIES` times in all; the node is left
  out from then on. A job whose candidate crashes its node's worker process is that candidate's result (the
  engine's "crash" status), not a lost node. Every job's result reaches the driver before it is counted, so
  nothing measured before a fault is lost.
- **Stopping.** `cancel(job)` takes a queued job off the queue and tells a running one's node to stop it;
  `close()` stops every node's work and ends the actors.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from mlir_rl_tui.engine.config import Limits, MeasureConfig
from mlir_rl_tui.engine.errors import EngineError

#: Nodes a job may be tried on before it fails (a node lost mid-job gives its job to the next).
MAX_TRIES = 3
#: Seconds the nodes have to start their engines and say who they are.
START_S = 180.0


@dataclass
class Node:
    """One node of the cluster as the driver sees it."""

    id: str
    host: str
    cpu: str
    address: str  # its IP address: nodes of one address are one machine
    cpus: frozenset  # the cores its processes may run on: nodes of one machine share those they both have
    machine: str
    cores: int
    actor: Any = None
    name: str = ""  # short, for progress lines: "node 1"
    alive: bool = True
    busy: str = ""  # what it measures now ("" idle)
    done: int = 0  # jobs it finished
    lost: int = 0  # jobs it lost by dying
    seconds: float = 0.0  # wall time of its jobs
    states: Counter = field(default_factory=Counter)  # the machine state of its figures (Measurement.state)
    flagged: int = 0  # its figures taken in a bad host state (contended, far, unsteady)

    def shares_cores(self, other: Node) -> bool:
        """Whether the two nodes run on cores of one machine that both may use."""
        return self.address == other.address and (not self.cpus or not other.cpus or bool(self.cpus & other.cpus))

    @property
    def label(self) -> str:
        return f"{self.name} ({self.host}, {self.id[:8]})"


@dataclass
class Job:
    method: str  # a NodeWorker method: measure, compare, per_op
    args: tuple
    future: Future
    what: str = ""
    id: int = 0
    tries: int = 0
    cancelled: bool = False
    on_result: Callable[[Any, Node], None] | None = None  # called with the result before the future resolves


def lost_errors() -> tuple[type, ...]:
    """Ray's errors that mean the node (its actor, raylet or process) is gone, not that the job failed."""
    from ray import exceptions as x

    return (x.RayActorError, x.ActorUnavailableError, x.NodeDiedError, x.WorkerCrashedError, x.ObjectLostError,
            x.OwnerDiedError, x.LocalRayletDiedError)


class Cluster:
    """The nodes of a Ray cluster and the jobs sent to them."""

    def __init__(self, address: str, limits: Limits, config: MeasureConfig, reuse: bool = True,
                 on_note: Callable[[str], None] | None = None) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from mlir_rl_tui.engine.cluster.node import NodeWorker

        self.note = on_note or (lambda s: None)
        reachable(address)
        self._owns = not ray.is_initialized()  # connected here: disconnected at close
        try:
            ray.init(address=address, ignore_reinit_error=True,  # "local": a new one-node cluster here
                     log_to_driver=False, configure_logging=False)
        except Exception as e:  # noqa: BLE001 - no cluster there, a refused token, a bad address: one line
            raise EngineError(f"--ray-address {address}: cannot connect to the Ray cluster ({one_line(e)})") from None
        self.address = address
        candidates: list = []
        try:
            self._start(ray, NodeAffinitySchedulingStrategy, NodeWorker, limits, config, reuse, candidates)
        except BaseException:  # a refusal or Ctrl-C while the nodes start: nothing left behind
            for a, _ in candidates:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001
                    pass
            if self._owns:
                ray.shutdown()
            raise
        self._cv = threading.Condition()
        self._queue: collections.deque[Job] = collections.deque()
        self._running: dict[Any, tuple[Job, Node]] = {}
        self._ids = itertools.count(1)
        self.requeued = 0  # jobs given to another node after theirs died
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="cluster-dispatch", daemon=True)
        self._thread.start()

    def _start(self, ray, affinity, worker, limits: Limits, config: MeasureConfig, reuse: bool,
               candidates: list) -> None:
        """An actor per live node with a CPU (into `candidates`), and the nodes of the cluster's kind kept."""
        actor = ray.remote(max_concurrency=2, max_restarts=0)(worker)
        address = self.address
        for n in ray.nodes():
            cpus = int(n.get("Resources", {}).get("CPU", 0))
            if not n.get("Alive") or cpus < 1:
                continue
            a = actor.options(num_cpus=cpus, scheduling_strategy=affinity(n["NodeID"], soft=False),
                              name=None).remote(limits, config, reuse)
            candidates.append((a, n.get("NodeManagerAddress", "")))
        if not candidates:
            raise EngineError(f"--ray-address {address}: the cluster has no live node with a CPU")
        infos = self._infos([a for a, _ in candidates])
        kinds = Counter(i["machine"] for i in infos if i)
        if not kinds:
            raise EngineError(f"--ray-address {address}: no node started its engine within {START_S:.0f} s")
        first = next(i["machine"] for i in infos if i)
        self.machine = max(kinds, key=lambda k: (kinds[k], k == first))
        self.nodes: list[Node] = []
        for (a, address), i in zip(candidates, infos, strict=True):
            if not i:
                ray.kill(a)
                continue
            if i["machine"] != self.machine:
                self.note(f"node {i['host']} ({i['cpu']}) refused: machine kind {i['machine']}, the cluster "
                          f"measures {self.machine}")
                ray.kill(a)
                continue
            self.nodes.append(Node(i["node"], i["host"], i["cpu"], address or i["host"], frozenset(i["cpus"]),
                                   i["machine"], i["cores"], a, name=f"node {len(self.nodes) + 1}"))
        self.openmp = all(i["openmp"] for i in infos if i and i["machine"] == self.machine)
        self.cpu = self.nodes[0].cpu

    @staticmethod
    def _infos(actors: list) -> list[dict | None]:
        import ray

        refs = [a.info.remote() for a in actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=START_S)
        out = []
        for r in refs:
            try:
                out.append(ray.get(r) if r in ready else None)
            except Exception:  # noqa: BLE001 - a node that cannot start its engine is left out
                out.append(None)
        return out

    # -- what the driver asks ------------------------------------------------------------------------
    @property
    def width(self) -> int:
        """Jobs the cluster runs at once: its live nodes, but nodes that share cores count as one."""
        apart: list[Node] = []
        for n in self.nodes:
            if n.alive and not any(n.shares_cores(m) for m in apart):
                apart.append(n)
        return len(apart)

    @property
    def pending(self) -> int:
        with self._cv:
            return len(self._queue) + len(self._running)

    def submit(self, method: str, *args, what: str = "", first: bool = False,
               on_result: Callable[[Any, Node], None] | None = None) -> Job:
        """Queue a job; `first`: before the jobs measured ahead (the one a search waits on now)."""
        job = Job(method, args, Future(), what, next(self._ids), on_result=on_result)
        with self._cv:
            if self._closed:
                raise EngineError("the cluster is closed")
            if not self.width:
                raise EngineError("every node of the Ray cluster is gone")
            if first:
                self._queue.appendleft(job)
            else:
                self._queue.append(job)
            self._cv.notify_all()
        return job

    def cancel(self, job: Job) -> None:
        with self._cv:
            job.cancelled = True
            if job in self._queue:
                self._queue.remove(job)
                job.future.cancel()
                return
            running = [n for j, n in self._running.values() if j is job]
        for n in running:
            try:
                n.actor.cancel.remote(job.id)
            except Exception:  # noqa: BLE001 - a node already gone has nothing to stop
                pass

    def status(self) -> str:
        """One line: each node's work ("node 1 measuring 12 done, node 2 idle 10 done")."""
        return ", ".join(f"{n.name} {'gone' if not n.alive else (n.busy or 'idle')} {n.done} done"
                         for n in self.nodes)

    def report(self) -> list[str]:
        """A line per node: its jobs, their time, its figures' machine states, and whether it was noisy."""
        out = []
        for n in self.nodes:
            states = ", ".join(f"{k} {v}" for k, v in n.states.most_common() if k)
            noisy = n.flagged or any(k in ("noisy", "unstable") for k in n.states)
            out.append(f"{n.label}, {n.cpu}: {n.done} jobs in {n.seconds:.0f} s"
                       + (f", lost {n.lost} when it died" if n.lost else "") + ("" if n.alive else " (gone)")
                       + (f"; figures {states}" if states else "")
                       + (f"; {n.flagged} flagged" if n.flagged else "")
                       + ("  <- noisy: its figures are less sure" if noisy else ""))
        if self.requeued:
            out.append(f"{self.requeued} jobs lost with a node were measured again on another")
        return out

    def close(self) -> None:
        import ray

        with self._cv:
            self._closed = True
            queued, running = list(self._queue), list(self._running.values())
            self._queue.clear()
            self._cv.notify_all()
        for j in queued:
            j.future.cancel()
        for j, _node in running:
            self.cancel(j)
        self._thread.join(10)
        for n in self.nodes:  # every actor, a gone node's too (it may hold its node's CPUs still)
            try:
                ray.kill(n.actor)
            except Exception:  # noqa: BLE001 - gone already
                pass
        self._thread.join(30)  # the killed actors' calls end: the dispatcher returns
        if self._owns and not self._thread.is_alive():
            ray.shutdown()

    # -- the dispatcher --------------------------------------------------------------------------------
    def _loop(self) -> None:
        """The dispatcher; if it fails (a Ray system error), every job waiting on it fails, none hangs."""
        try:
            self._dispatch()
        except BaseException as e:  # noqa: BLE001 - told to every waiting job, in one line
            with self._cv:
                self._closed = True
                jobs = list(self._queue) + [j for j, _ in self._running.values()]
                self._queue.clear()
                self._running.clear()
            for j in jobs:
                if not j.future.done():
                    j.future.set_exception(EngineError(f"the cluster's dispatcher stopped: {one_line(e)}"))

    @property
    def dispatching(self) -> bool:
        return self._thread.is_alive()

    def _dispatch(self) -> None:
        import ray

        lost = lost_errors()
        started: dict[Any, float] = {}
        while True:
            with self._cv:
                if self._closed and not self._running:
                    return
                # nodes that share cores take turns: two Ray nodes on one machine's cores, a timing beside the
                # other's compile is a noisy one (seen: every figure of two such nodes noisy or unstable)
                busy = [n for n in self.nodes if n.busy]
                idle = sorted((n for n in self.nodes if n.alive and not n.busy
                               and not any(n.shares_cores(b) for b in busy)), key=lambda n: n.done)
                while self._queue and idle and not self._closed:
                    job, node = self._queue.popleft(), idle.pop(0)
                    idle = [n for n in idle if not n.shares_cores(node)]
                    ref = getattr(node.actor, job.method).remote(job.id, *job.args)
                    node.busy = job.what or job.method
                    self._running[ref] = (job, node)
                    started[ref] = time.monotonic()
                if not self._running:
                    if not self.width:
                        self._fail_queued("every node of the Ray cluster is gone")
                    self._cv.wait(0.2)
                    continue
                refs = list(self._running)
            ready, _ = ray.wait(refs, num_returns=1, timeout=0.1)
            for ref in ready:
                with self._cv:
                    job, node = self._running.pop(ref)
                    node.busy = ""
                    node.seconds += time.monotonic() - started.pop(ref, time.monotonic())
                try:
                    result = ray.get(ref)
                except lost as e:
                    self._lost(job, node, e)
                    continue
                except Exception as e:  # noqa: BLE001 - the job's own failure, on a live node
                    node.done += 1
                    job.future.set_exception(EngineError(f"{job.what or job.method} on {node.name}: {one_line(e)}"))
                    continue
                node.done += 1
                state = getattr(result, "state", None)
                if state is not None:
                    node.states[state] += 1
                    node.flagged += bool(getattr(result, "flagged", False))
                if job.on_result is not None:  # stored before the waiting search goes on
                    try:
                        job.on_result(result, node)
                    except Exception as e:  # noqa: BLE001 - a figure not stored is still the search's
                        self.note(f"a figure from {node.name} was not stored: {one_line(e)}")
                job.future.set_result((result, node))

    def _lost(self, job: Job, node: Node, e: BaseException) -> None:
        import ray

        try:  # the other nodes Ray knows gone (pre-empted together): not tried in turn, each costing a try
            gone = {n["NodeID"] for n in ray.nodes() if not n.get("Alive")}
        except Exception:  # noqa: BLE001 - the one node then
            gone = set()
        with self._cv:
            for n in self.nodes:
                if n.alive and (n is node or n.id in gone):
                    n.alive = False
                    self.note(f"{n.label} is gone ({type(e).__name__ if n is node else 'found dead'}): its work "
                              f"goes to the other nodes")
                    try:
                        ray.kill(n.actor)
                    except Exception:  # noqa: BLE001 - gone already
                        pass
            node.lost += 1
            job.tries += 1
            if job.cancelled or self._closed:
                job.future.cancel()
            elif job.tries >= MAX_TRIES or not self.width:
                job.future.set_exception(EngineError(f"{job.what or job.method}: lost with {job.tries} nodes"))
            else:
                self.requeued += 1
                self._queue.appendleft(job)
            self._cv.notify_all()

    def _fail_queued(self, why: str) -> None:
        while self._queue:
            self._queue.popleft().future.set_exception(EngineError(why))


def reachable(address: str, timeout: float = 5.0) -> None:
    """A cluster's HOST:PORT answers a connection (Ray's own connect retries for minutes, silently); "local",
    "auto" and ray:// addresses are Ray's to resolve."""
    import socket

    if address in ("local", "auto") or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise EngineError(f"--ray-address {address}: not HOST:PORT (the head's address and port, e.g. 10.0.0.5:6379), "
                          "nor local")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise EngineError(f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})") from None


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:300]
