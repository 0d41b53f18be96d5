"""`ClusterEngine`: the Engine a command gets with `--ray-address` (tune, search, dataset measure). It answers
what a search asks of an Engine (measure, baseline, compare, per_op) with the nodes of a Ray cluster
(engine.cluster.dispatch), and everything else (building, validating, the limits) with the driver's own engine.

- **One writer.** The driver's cache is looked up first (a schedule measured before is not sent again), and
  every figure a node returns is written there by the driver alone, by the rules the Engine stores its own
  figures by (a flagged, cut-short or transient one is not); each node keeps its own cache as well. The
  tuning database is the driver's too (engine.tune.tuner writes it); `origin()` names the node a figure
  came from.
- **Width.** A search stays sequential in what it decides; it tells the engine which candidates it will
  ask for next (`prefetch`, from hill climbing's seeded neighbour order) and the idle nodes measure them
  ahead. The search consumes the results in its own order, so it takes the same decisions on the same
  figures as without a cluster; a figure measured ahead and never asked for is wasted work, not budget.
- **Timing.** A node measures one job at a time, with its cores to itself (its actor holds every CPU Ray
  gives the node); its figures carry the node's machine state, and noisy nodes are named in `report()`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout

from mlir_rl_tui.engine.cluster.dispatch import Cluster, Job, Node
from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.measure.measurement import TRANSIENT, Comparison, Measurement
from mlir_rl_tui.engine.schedule.notation import Schedule, to_text
from mlir_rl_tui.engine.schedule.state import check_schedule, effective
from mlir_rl_tui.engine.store.cache import ENGINE_VERSION
from mlir_rl_tui.engine.store.keys import cache_key


class ClusterEngine:
    """Measures on a Ray cluster's nodes; builds and checks with `local`."""

    def __init__(self, local: Engine, address: str, on_note: Callable[[str], None] | None = None) -> None:
        self.local = local
        self.note = on_note or (lambda s: None)
        self.cluster = Cluster(address, local.limits, local.config, local.reuse, on_note)
        self._cpu0 = time.process_time()  # the driver's own work from here: proposing, sending, receiving, writing
        self.machine = self.cluster.machine  # the nodes' kind: what the records and the tuning are for
        self.openmp = self.cluster.openmp
        self.evaluated = 0  # measurements the nodes made (not from the driver's cache)
        self.wasted = 0  # figures measured ahead that the search never asked for (counted at close)
        self._ahead: dict[tuple, Job] = {}  # (program sha, schedule, quick) -> its job, measured ahead
        self._refs: dict[str, object] = {}  # program sha -> the program as a Ray object (sent once)
        self._lock = threading.Lock()
        self._origins: dict[tuple[str, str], str] = {}  # (program sha, schedule) -> the node that measured it

    def __getattr__(self, name: str):  # building, validating, the IR views: the driver's engine
        return getattr(self.local, name)

    @property
    def width(self) -> int:
        """Candidates measured at once (the live nodes)."""
        return self.cluster.width

    # -- measurements --------------------------------------------------------------------------------
    def baseline(self, program: Program, on_progress: Callable | None = None,
                 cancel: threading.Event | None = None, deadline: float | None = None) -> Measurement:
        return self.measure(program, Schedule({}), cancel=cancel)

    def measure(self, program: Program, schedule: Schedule, *, check: bool = True, use_cache: bool = True,
                on_progress: Callable | None = None, cancel: threading.Event | None = None,
                deadline: float | None = None, quick: bool = False) -> Measurement:
        """As Engine.measure, on a node (`deadline` and `on_progress` are the driver's: not sent)."""
        if check:
            check_schedule(program, schedule, self.limits, self.openmp)
        full = to_text(schedule)
        text = to_text(effective(program, schedule, self.limits, self.openmp))
        with self._lock:  # measured ahead for this search: its figure (the driver's cache has it too by now)
            job = self._ahead.pop((program.sha256, text, quick), None) if use_cache else None
        if job is None or job.future.cancelled():
            prev = self._cached(program, text) if use_cache else None
            if prev is not None:
                prev.schedule = full
                return prev
            job = self._submit(program, text, quick, use_cache, first=True)
        m = self._wait(job, cancel, program, text)
        m.schedule = full
        return m

    def prefetch(self, program: Program, schedules: list[Schedule], quick: bool = False) -> None:
        """Measure ahead, on idle nodes, the candidates a search will ask for next (in that order); those
        the driver's cache has, or that are under way, are not sent again."""
        for s in schedules:
            if self.cluster.pending >= self.width:
                return
            text = to_text(effective(program, s, self.limits, self.openmp))
            key = (program.sha256, text, quick)
            with self._lock:
                if key in self._ahead:
                    continue
            if self._cached(program, text) is not None:
                continue
            job = self._submit(program, text, quick, True)
            with self._lock:
                self._ahead[key] = job

    def compare(self, program: Program, candidate: Schedule, incumbent: Schedule, *,
                cancel: threading.Event | None = None) -> Comparison:
        """Engine.compare on one node: both schedules in one interleaved burst there."""
        for s in (candidate, incumbent):
            check_schedule(program, s, self.limits, self.openmp)
        job = self.cluster.submit("compare", self._ref(program), to_text(candidate), to_text(incumbent),
                                  what="comparing", first=True)
        got = self._result(job, cancel)
        return got[0] if got is not None else Comparison("cancelled")

    def per_op(self, program: Program, schedule: Schedule) -> list[dict]:
        job = self.cluster.submit("per_op", self._ref(program), to_text(schedule), what="profiling", first=True)
        got = self._result(job, None)
        if got is None:
            raise EngineError("the per-op profile was cancelled")
        self._origins[(program.sha256, "profile " + to_text(schedule))] = self._origin(got[1])
        return got[0]

    def origin(self, program: Program, schedule: Schedule, profile: bool = False) -> str:
        """Who timed `schedule` of `program` (a tuning record's origin): the node, or "" (the driver's cache).
        `profile`: its per-op profile's node."""
        if profile:
            return self._origins.get((program.sha256, "profile " + to_text(schedule)), "")
        text = to_text(effective(program, schedule, self.limits, self.openmp))
        return self._origins.get((program.sha256, text), "")

    # -- the rest --------------------------------------------------------------------------------------
    def status(self) -> str:
        return self.cluster.status()

    def report(self) -> list[str]:
        lines = self.cluster.report()
        if self.wasted:
            lines.append(f"{self.wasted} figures measured ahead were not asked for")
        jobs = sum(n.done for n in self.cluster.nodes)
        if jobs:
            ms = 1e3 * (time.process_time() - self._cpu0) / jobs
            lines.append(f"the driver: {ms:.1f} ms of CPU per job (proposing, sending, receiving, writing), {jobs} jobs")
        return lines

    def close(self) -> None:
        try:
            with self._lock:
                ahead = list(self._ahead.values())
                self._ahead.clear()
            self.wasted += sum(1 for j in ahead if j.future.done() and not j.future.cancelled())
            for j in ahead:
                self.cluster.cancel(j)
            self.cluster.close()
            for line in self.report():
                self.note(line)
        finally:
            self.local.close()

    def __deepcopy__(self, memo: dict) -> ClusterEngine:  # one cluster: not the local engine's copy
        return self

    def __enter__(self) -> ClusterEngine:
        return self

    def __exit__(self, *a) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------------------
    def _ref(self, program: Program):
        import ray

        with self._lock:
            ref = self._refs.get(program.sha256)
            if ref is None:
                ref = self._refs[program.sha256] = ray.put(program)
            return ref

    def _cached(self, program: Program, text: str) -> Measurement | None:
        cache = self.local.cache
        if cache is None or not self.local.reuse:
            return None
        prev = cache.get(cache_key(program), text, self.machine, parse=Measurement.from_record)
        if prev is None or prev.status in ("wrong-result", *TRANSIENT):
            return None
        prev.cached = True
        return prev

    def _submit(self, program: Program, text: str, quick: bool, use_cache: bool, first: bool = False) -> Job:
        return self.cluster.submit("measure", self._ref(program), text, quick, use_cache,
                                   what=f"measuring {text[:40] or 'the baseline'}", first=first,
                                   on_result=lambda m, node: self._store(m, node, program, text, use_cache))

    def _store(self, m: Measurement, node: Node, program: Program, text: str, use_cache: bool) -> None:
        """A node's figure into the driver's cache (the one writer), by the Engine's rules for its own; called
        by the dispatcher before the search that waits for it goes on."""
        if m.status == "cancelled":
            return
        with self._lock:
            if not m.cached:
                self.evaluated += 1
            self._origins[(program.sha256, text)] = self._origin(node)
        cache = self.local.cache
        if cache is None or not use_cache or m.flagged or m.cut_short or m.status in TRANSIENT \
                or (m.status == "wrong-result" and "PyTorch" in (m.error or "")):
            return
        cache.put(cache_key(program), text, self.machine, m.to_record())

    @staticmethod
    def _origin(node: Node) -> str:
        return f"timed on {node.name} of a Ray cluster ({node.host}, node {node.id[:12]}) by engine {ENGINE_VERSION}"

    def _wait(self, job: Job, cancel: threading.Event | None, program: Program, text: str) -> Measurement:
        try:
            got = self._result(job, cancel)
        except EngineError as e:
            return Measurement(status="error", schedule=text, error=str(e))
        return got[0] if got is not None else Measurement(status="cancelled", schedule=text)

    def _result(self, job: Job, cancel: threading.Event | None) -> tuple | None:
        """The job's (result, node); None when `cancel` stopped it first."""
        while True:
            if cancel is not None and cancel.is_set():
                self.cluster.cancel(job)
                return None
            try:
                return job.future.result(timeout=0.1)
            except FutureTimeout:
                if not self.cluster.dispatching and not job.future.done():
                    raise EngineError("the cluster's dispatcher stopped") from None
                continue
            except CancelledError:
                return None
