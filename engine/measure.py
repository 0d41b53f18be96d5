"""The engine's front door: measure a (program, schedule) in a worker, with the cache in front."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from engine.cache import Cache, machine_fingerprint
from engine.compile import parallel_runtime
from engine.config import DEFAULT_LIMITS, DEFAULT_MEASURE, Limits, MeasureConfig
from engine.pool import Cancelled, WorkerDied, WorkerPool, WorkerTimeout
from engine.program import Program
from engine.schedule import Schedule, to_text
from engine.state import replay
from engine.transforms import script, uses_parallel

STATUSES = ("ok", "transform-error", "compile-error", "crash", "timeout", "wrong-result", "cancelled")


@dataclass
class Measurement:
    """What measuring one schedule gave (DESIGN.md: status, median time, speedup, diagnostics)."""

    status: str
    schedule: str
    time_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    validated: bool = False
    cached: bool = False
    error: str = ""
    times_ms: list[float] = field(default_factory=list)
    stages_ms: dict[str, float] = field(default_factory=dict)
    transformed_ir: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("transformed_ir", "times_ms", "stages_ms")}
        if not self.error:
            d.pop("error")
        return d

    def log_speedup(self, penalty: float = -1.0) -> float:
        """Reward of the paper (Sec. IV-C): log speedup; failures get a penalty."""
        if self.ok and self.speedup and self.speedup > 0:
            return math.log(self.speedup)
        return penalty


class Engine:
    """Measures schedules for the app, search, the env and training through one worker pool and cache."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, config: MeasureConfig = DEFAULT_MEASURE,
                 cache: Cache | None | bool = True, workers: int | None = None) -> None:
        self.limits = limits
        self.config = config
        self.cache: Cache | None = Cache() if cache is True else (cache if isinstance(cache, Cache) else None)
        self.pool = WorkerPool(workers or config.workers, config.memory_limit_bytes, config.worker_nice)
        self.runtime = parallel_runtime()  # ("openmp"|"async", library) or None
        self.machine = machine_fingerprint() + "-" + (self.runtime[0] if self.runtime else "serial")
        self.openmp = self.runtime is not None  # TP is masked without a parallel runtime
        self._lock = threading.Lock()
        lockdir = os.path.dirname(self.cache.path) if self.cache else "/tmp"
        self._lockfile = os.path.join(lockdir, f"timing-{os.getuid()}.lock")
        self._cpu_lockfile = os.path.join(lockdir, f"cpu-{os.getuid()}.lock")
        self.evaluated = 0  # measurements really made (not from the cache)

    # ------------------------------------------------------------------------------------------
    def baseline(self, program: Program, on_progress: Callable | None = None,
                 cancel: threading.Event | None = None) -> Measurement:
        """The untransformed program with the same pipeline (paper Sec. VII-A.3)."""
        return self.measure(program, Schedule({}), on_progress=on_progress, cancel=cancel)

    def measure(self, program: Program, schedule: Schedule, *, check: bool = True, use_cache: bool = True,
                on_progress: Callable | None = None, cancel: threading.Event | None = None) -> Measurement:
        """Apply, compile, run, check and time `schedule` in a worker; never raises for a bad schedule
        that passed `check` (illegal ones raise ScheduleError when check=True)."""
        if check:
            replay(program, schedule, self.limits, self.openmp)
        # NT emits no transform: `op0: T(8,32,1) NT` is measured (and cached) as `op0: T(8,32,1)`, and an
        # all-NT schedule is the baseline itself, not a second noisy measurement of the same code
        full = to_text(schedule)
        m = self._measure(program, without_nt(schedule), check, use_cache, on_progress, cancel)
        m.schedule = full
        return m

    def _measure(self, program: Program, schedule: Schedule, check: bool, use_cache: bool,
                 on_progress: Callable | None, cancel: threading.Event | None) -> Measurement:
        text = to_text(schedule)
        if use_cache and self.cache is not None:
            hit = self.cache.get(program.sha256, text, self.machine)
            if hit is not None:
                m = Measurement(**{**hit, "cached": True})
                return self._with_baseline(program, m, on_progress, cancel)
        base = None
        if text:
            base = self.baseline(program, on_progress, cancel)
            if not base.ok:
                return Measurement(status=base.status, schedule=text, error=f"baseline: {base.error}")
        body = script(program, schedule, self.limits, check=check) if text else None
        m = self._run(program, text, body, base, on_progress, cancel, uses_parallel(schedule))
        if m.status != "cancelled" and use_cache and self.cache is not None:
            rec = asdict(m)
            for k in ("cached", "transformed_ir", "baseline_ms", "speedup"):
                rec.pop(k, None)
            self.cache.put(program.sha256, text, self.machine, rec)
        return self._with_baseline(program, m, on_progress, cancel, base) if text else self._self_baseline(m)

    def transformed_ir(self, program: Program, schedule: Schedule) -> tuple[str, str]:
        """(status, IR after the transform script or the error line) - for views and export."""
        text = to_text(schedule)
        body = script(program, schedule, self.limits) if text else None
        req = self._request(program, body, False, mode="ir")
        try:
            res = self.pool.run(req, compile_timeout=self.config.compile_timeout_s)
        except (WorkerDied, WorkerTimeout) as e:
            return "crash", str(e) or type(e).__name__
        if res["status"] != "ok":
            return res["status"], res.get("error", "")
        return "ok", res["transformed_ir"]

    def close(self) -> None:
        self.pool.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *a) -> None:
        self.close()

    def __deepcopy__(self, memo: dict) -> Engine:
        """An Engine is a shared resource (workers, cache): copies of a config holding it share it
        (gymnasium.make deep-copies the env kwargs, e.g. `engine=`)."""
        return self

    # ------------------------------------------------------------------------------------------
    def _request(self, program: Program, body: str | None, parallel: bool, **kw) -> dict:
        c = self.config
        return {
            "id": 0, "program": program.text, "sha256": program.sha256, "script": body, "parallel": parallel,
            "func": program.func_name, "args": [[list(a.shape), a.dtype] for a in program.args],
            "result": [list(program.results[0].shape), program.results[0].dtype], "runs": c.runs,
            "warmups": c.warmups, "seed": c.seed, "rtol": c.rtol, "atol_scale": c.atol_scale,
            "timeout_factor": c.timeout_factor, "lock": self._lockfile,
            "cpu_lock": self._cpu_lockfile, **kw,
        }

    def _run(self, program: Program, text: str, body: str | None, base: Measurement | None,
             on_progress: Callable | None, cancel: threading.Event | None, parallel: bool) -> Measurement:
        c = self.config
        limit = None
        if base is not None and base.time_ms:
            limit = max(c.timeout_factor * base.time_ms / 1e3, c.timeout_floor_s)
        parallel = bool(body) and parallel and self.openmp
        req = self._request(program, body, parallel, run_limit_s=limit)
        run_timeout = (limit or 120.0) * 2 + 5
        try:
            res = self.pool.run(req, on_progress, c.compile_timeout_s, run_timeout, cancel)
        except WorkerDied as e:
            self.evaluated += 1
            return Measurement(status="crash", schedule=text, error=str(e))
        except WorkerTimeout:
            self.evaluated += 1
            return Measurement(status="timeout", schedule=text,
                               error=f"no answer within the limit ({run_timeout:.0f} s per run, "
                                     f"{c.compile_timeout_s:.0f} s to compile); the worker was killed")
        except Cancelled:
            return Measurement(status="cancelled", schedule=text, error="cancelled")
        self.evaluated += 1
        status = res["status"]
        return Measurement(status=status, schedule=text, time_ms=res.get("time_ms"),
                           validated=status == "ok", error=res.get("error", ""),
                           times_ms=res.get("times_ms", []), stages_ms=res.get("stages_ms", {}))

    def _self_baseline(self, m: Measurement) -> Measurement:
        if m.ok and m.time_ms:
            m.baseline_ms, m.speedup = m.time_ms, 1.0
        return m

    def _with_baseline(self, program: Program, m: Measurement, on_progress, cancel,
                       base: Measurement | None = None) -> Measurement:
        if not m.schedule:
            return self._self_baseline(m)
        base = base or self.baseline(program, on_progress, cancel)
        if base.ok:
            m.baseline_ms = base.time_ms
            if m.ok and m.time_ms:
                m.speedup = base.time_ms / m.time_ms
        return m


def without_nt(schedule: Schedule) -> Schedule:
    return Schedule({k: [a for a in v if a.kind != "NT"] for k, v in schedule.ops.items()})
