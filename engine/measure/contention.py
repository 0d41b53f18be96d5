"""Other processes' CPU time during a timing, and what a parallel region's hand-off costs at that moment.

The engine's locks (engine.run.worker._flock) keep its own workers apart, but not the caller's Python (a search
thread building the next schedule, the app drawing), a training run or anything else on the machine. On the
2-core VM a parallel kernel timed while one other process kept a core busy measures about 2x slower, every
round alike, so the figure looks trustworthy and is not: 0051's TP schedule 31.7x with one busy-loop
beside it, 61.9x without; the 1x1 convolution 0002's hill-climbing schedule 1.0x against 1.8x. The
kernel's own process cannot tell from its times; the kernel of the machine can: all CPUs' busy time (/proc/stat, steal included: the host took the
core) minus this process's CPU time over the same span is what the others used, in cores.

The second thing that moves parallel timings is outside the machine: with nothing else running, the 1x1
convolution's parallel kernel took 1.4 us in one minute and 2.6 us in the next (its serial baseline 2.6 us
in both), following a spin ping-pong between the two cores that took 0.08-0.10 us in one state and 0.5-0.6
us in the other: where the host places the VM's cores. That cannot be changed from here, but it can be
seen (the hand-off probe below) and waited out: 30 measurements of one validation block (0024, an inverted
residual block of five parallel regions) in a row took 26-34 us with the probe at 1.03-1.50 us and 69-78 us
with it at 2.28-2.36 us, in runs of one to five measurements (seconds); both engines of an interleaved
pair went slow at the same moments, so it is the machine, not the process (malloc's layout, thread
placement and page faults were ruled out). Such a
state lasted through all three rounds of an A/B comparison and made a block's figure 2.6x apart between
runs of the same code. So a parallel timing whose probe took over FAR_FACTOR times the machine's
fastest probe so far (`far`; the engine keeps it, and the machine's record for the next engine) is timed
again after FAR_WAITS_S, and if still far it is reported as far and not stored, like a contended one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

#: Other processes may use this many cores beside a kernel that needs every core (a parallel one) before
#: its timing counts as contended: /proc/stat counts in ticks (10 ms), a 100 ms timing of 2 cores is
#: off by a tick or two either way (measured, idle machine: at most 0.12 cores).
SLACK_CORES = 0.35


def cpu_ticks() -> list[int] | None:
    """All CPUs' ticks since boot by state (user, nice, system, idle, iowait, irq, softirq, steal, ...), from
    /proc/stat's first line; None without it."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 9:
        return None
    return [int(x) for x in fields[1:]]


def _busy_s() -> float | None:
    """Seconds all CPUs spent not idle since boot (user, nice, system, irq, softirq, steal); None without
    /proc/stat."""
    ticks = cpu_ticks()
    if ticks is None:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Watch:
    """Started before a timing, read after it: `foreign_cores()` is how many cores other processes used
    meanwhile on average (None where /proc/stat is not there)."""

    wall: float
    busy: float | None
    own: float

    @classmethod
    def start(cls) -> Watch:
        return cls(time.perf_counter(), _busy_s(), time.process_time())

    def foreign_cores(self) -> float | None:
        busy = _busy_s()
        span = time.perf_counter() - self.wall
        if busy is None or self.busy is None or span <= 0:
            return None
        return max(0.0, (busy - self.busy) - (time.process_time() - self.own)) / span


def contended(foreign: float | None, parallel: bool, cores: int) -> bool:
    """Whether a timing that saw `foreign` cores of other work is not this kernel's alone: a parallel
    kernel needs every core, a serial one the core it is pinned to (others may use the rest). `cores`:
    the process's cores as read before OpenMP binds the calling thread to one of them."""
    if foreign is None:
        return False
    free = 0 if parallel else cores - 1
    return foreign > free + SLACK_CORES


#: The hand-off probe: a parallel kernel with almost nothing to do (one 16-wide row per core), timed in the
#: same worker and OpenMP runtime right before and after each parallel timing. Its time is what a parallel
#: region's fork and join cost at that moment, which moves with where the host puts the cores (the module
#: docstring); beside a kernel's figure it says which state the figure was measured in.
HANDOFF_PROGRAM = """// the engine's hand-off probe (engine.measure.contention)
func.func @forward(%arg0: tensor<2x16xf32>, %arg1: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = tensor.empty() : tensor<2x16xf32>
  %1 = linalg.add ins(%arg0, %arg1 : tensor<2x16xf32>, tensor<2x16xf32>) outs(%0 : tensor<2x16xf32>) -> tensor<2x16xf32>
  return %1 : tensor<2x16xf32>
}
"""
HANDOFF_SCHEDULE = "op0: TP(1,16)"
HANDOFF_RUNS = 200


#: A parallel timing is "far" when the hand-off probe around it took more than this times the fastest probe
#: the engine has seen on this machine. On the 2-core VM: near 1.03-1.16 us (most timings) and far 2.3-3.0
#: us, with spells in between (1.3-1.7 us) where kernels ran 1.2-1.4x slower (0024: 34-38 us against 27;
#: the sample max pooling's three measurements 2.9-4.0x, their probes' median 1.32 us): 1.3 waits those
#: out too, and leaves the near state's 1.26 us inside.
FAR_FACTOR = 1.3
#: Seconds to wait before timing again while the cores are far (the state lasts seconds).
FAR_WAITS_S = (0.5, 1.0, 2.0, 3.0)
#: When this many parallel timings in a row were far, the near reference is stale (the VM moved to a host
#: whose cores are farther apart, and the fastest probe seen before is not coming back): the fastest of them
#: becomes the reference.
FAR_STALE = 8


def far(handoff_us: float | None, near_us: float | None) -> bool:
    """Whether a parallel timing ran while the host kept the cores far apart: its hand-off probe took over
    FAR_FACTOR times `near_us` (the fastest probe seen). False when either is unknown."""
    if handoff_us is None or near_us is None or near_us <= 0:
        return False
    return handoff_us > FAR_FACTOR * near_us


#: The state probe: the matmul sample (engine.corpus.samples) under a fixed schedule, timed in the worker before,
#: between and after a timing's rounds (engine.measure.timing). On a 2-core Intel Xeon VM with nothing else
#: running, the serial schedule's fastest of five runs took 0.178-0.191 ms in one state and 0.245-0.33 ms
#: in the other, in spells of 0.1-15 s, each core on its own (other tenants of the host); kernels moved with
#: it (the conv2d sample's serial schedule 1.21 vs 1.6 ms; its parallel one 1.3x), while a register-only
#: FMA loop moved under 10%: the slow state is in the cache hierarchy, so the probe is cache-resident
#: vector code like the kernels it stands for. A serial timing runs on core 0 and probes with the serial
#: schedule; a parallel one uses both cores and probes with the parallel schedule.
STATE_SAMPLE = "matmul"
STATE_SERIAL = "op0: T(8,32,1) V"
STATE_PARALLEL = "op0: TP(32,32,0) T(8,32,1) V; op1: NT"
STATE_RUNS = 5  # a probe is the fastest of this many runs (about 1 ms)
#: Seconds to wait before timing again when too few rounds were steady; then the figure is flagged unsteady.
STATE_WAITS_S = (0.3, 1.0)
#: When this many probes in a row were slow, the reference is stale (the VM moved): the fastest of them is.
STATE_STALE = 8


@dataclass
class Fastest:
    """The fastest probe seen on this machine (its steady state), and the slow ones in a row since: after
    `stale` of those, the fastest of them becomes the reference (the machine changed under the VM)."""

    value: float | None = None
    stale: int = STATE_STALE
    slow_run: list[float] | None = None

    def note(self, x: float | None, slow: bool) -> bool:
        """Take a probe that was `slow` (or not) against the reference; whether the reference changed."""
        if not x or x <= 0:
            return False
        self.slow_run = [*(self.slow_run or []), x] if slow else []
        if len(self.slow_run) >= self.stale:
            self.value, self.slow_run = min(self.slow_run), []
            return True
        if self.value is None or x < self.value:
            self.value = x
            return True
        return False
