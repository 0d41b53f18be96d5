"""What this machine can do, and how far a measurement on it can be trusted right now (`mlir-rl-tui doctor`).

A figure the engine reports is only as good as the machine it was timed on. On a cloud VM the same schedule
re-measured seconds apart can differ by 1.2-2x (the host's state changes on a scale of seconds: steal, the
cores it gives the VM and how far apart they are). `diagnose` reads what the OS says (the CPU model, the
cores, steal time and other processes' CPU time over the check) and measures the rest the engine's own way:
the roofline (FMA peak and bandwidth, engine.measure.roofline, cached per machine) and the timing noise now, as the
spread (max/min) of fresh measurements of a serial and a parallel schedule of the matmul sample, taken in
turn so that each one is a separate burst, the intervals the engine reported for them and how many it
flagged as taken in a bad state. Their pairs teach the engine how far a repeat moves here (engine.measure.interval_floor), so
after `doctor` a new machine's intervals are earned rather than the prior's.

The one-word state sums it up: `quiet` (serial repeats within 5% and parallel within 10%, little steal, no
other process busy), `noisy` (within 10% and 15%: the goals of a measurement; or some steal, or another process
using half a core), `unstable` (beyond them, or most measurements flagged: compare figures only when they are far apart, and
measure again later).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from mlir_rl_tui.engine.measure.contention import STATE_PARALLEL as PARALLEL
from mlir_rl_tui.engine.measure.contention import STATE_SERIAL as SERIAL
from mlir_rl_tui.engine.measure.contention import cpu_ticks
from mlir_rl_tui.engine.measure.machine import cpu_model, state_of


@dataclass
class Noise:
    """Fresh measurements of one reference schedule."""

    schedule: str
    times_ms: list[float] = field(default_factory=list)
    rel_ci: list[float] = field(default_factory=list)  # each measurement's reported half-width, relative
    failed: int = 0
    flagged: int = 0  # measurements the engine flagged as taken in a bad state (unsteady, far, contended)

    @property
    def spread(self) -> float | None:
        """max/min of the times: what a repeat of a measurement may differ by now."""
        return max(self.times_ms) / min(self.times_ms) if len(self.times_ms) >= 2 else None

    @property
    def stated(self) -> float | None:
        """The mean relative half-width the engine stated for them."""
        return sum(self.rel_ci) / len(self.rel_ci) if self.rel_ci else None


@dataclass
class Diagnosis:
    cpu: str
    cores: int
    runtime: str  # the parallel runtime: "openmp", "async" or "serial" (none found)
    peaks: dict | None  # engine.measure.roofline.Peaks.to_json(), or None when it could not be measured
    steal: float | None  # share of all CPU time the host took during the check
    foreign_cores: float | None  # cores other processes used during the timings, on average
    serial: Noise
    parallel: Noise | None
    state: str
    seconds: float
    floor: float = 0.0  # the relative half-width every interval has at least here now (engine.measure.interval_floor)
    pairs: int = 0  # the pairs of repeated figures it was learnt from

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("serial", "parallel"):
            n = getattr(self, k)
            if n is not None:
                d[k].update(spread=n.spread, stated=n.stated)
        return d


def _steal_ticks() -> tuple[int, int] | None:
    """(steal, total) ticks of all CPUs since boot (engine.measure.contention.cpu_ticks)."""
    ticks = cpu_ticks()
    return (ticks[7], sum(ticks[:8])) if ticks else None


def diagnose(engine, repeats: int = 5, on_progress: Callable[[str], None] | None = None) -> Diagnosis:
    """Characterize this machine with `engine` (its roofline from the cache, or measured and cached now), and
    its timing noise with `repeats` fresh measurements of each reference schedule, in turn."""
    from mlir_rl_tui.engine.corpus.samples import sample_path
    from mlir_rl_tui.engine.ir.program import load_file
    from mlir_rl_tui.engine.schedule.notation import parse

    say = on_progress or (lambda s: None)
    t0, ticks0 = time.time(), _steal_ticks()
    # other processes' cores during each timing, as the worker reads them (its own process, and the engine's
    # other worker waiting on the timing lock, do not count: a watch in this process would count both)
    foreign: list[float] = []
    say("the roofline (FMA peak and bandwidth; measured once per machine, 10-40 s)")
    peaks = engine.peaks()
    prog = load_file(sample_path("matmul"))
    serial = Noise(SERIAL)
    parallel = Noise(PARALLEL) if engine.openmp else None
    say("the untransformed matmul sample")
    engine.baseline(prog)
    for i in range(repeats):
        for noise in (serial, parallel):
            if noise is None:
                continue
            say(f"timing noise: measurement {i + 1} of {repeats}, {'serial' if noise is serial else 'parallel'}")
            m = engine.measure(prog, parse(noise.schedule), use_cache=False)
            if m.foreign_cores is not None:
                foreign.append(m.foreign_cores)
            if m.ok and m.time_ms:
                noise.flagged += m.flagged
                if not m.flagged:  # repeats the engine learns the floor from
                    engine.note_repeats([(t, m.time_ms) for t in noise.times_ms])
                noise.times_ms.append(m.time_ms)
                if m.rel_error is not None:
                    noise.rel_ci.append(m.rel_error)
            else:
                noise.failed += 1
    ticks1 = _steal_ticks()
    steal = None
    if ticks0 and ticks1 and ticks1[1] > ticks0[1]:
        steal = (ticks1[0] - ticks0[0]) / (ticks1[1] - ticks0[1])
    runtime = engine.runtime[0] if engine.openmp and engine.runtime else "serial"
    busy = sum(foreign) / len(foreign) if foreign else None
    flagged = serial.flagged + (parallel.flagged if parallel else 0)
    state = state_of(serial.spread, parallel.spread if parallel else None, steal, busy)
    return Diagnosis(cpu=cpu_model(), cores=len(os.sched_getaffinity(0)), runtime=runtime,
                     peaks=peaks.to_json() if peaks is not None else None, steal=steal,
                     foreign_cores=busy, serial=serial, parallel=parallel,
                     state="unstable" if flagged > repeats // 2 else state,
                     seconds=time.time() - t0, floor=engine.repeat_floor(), pairs=engine.repeat_pairs())
