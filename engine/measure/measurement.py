"""What measuring one schedule gave (`Measurement`: its status, time, speedup and intervals, the flags of a bad
moment, and the record the cache stores), a candidate against an incumbent (`Comparison`), the statuses, and
which of them are a moment's rather than the schedule's (`TRANSIENT`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

STATUSES = ("ok", "transform-error", "compile-error", "crash", "timeout", "wrong-result", "cancelled")
#: Fields of a Measurement the cache does not store (Measurement.to_record)
NOT_STORED = ("cached", "transformed_ir", "gflops", "peak_fraction", "bound", "foreign_cores", "contended",
               "handoff_us", "far", "cut_short", "unsteady", "state", "probe_ms")
#: Outcomes of a moment, not of the schedule, so never served from the cache: a worker killed by a signal
#: (the OOM killer, an outside kill) and a run over its time limit (a loaded machine). A compile error, a
#: legality refusal and a wrong result are the schedule's and stay cached.
TRANSIENT = ("crash", "timeout")


def positive(x) -> bool:
    """A finite positive number (not a bool): what a stored time or interval end must be."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0


@dataclass
class Measurement:
    """What measuring one schedule gave (status, time, speedup, spread, diagnostics).

    Times are medians over the steady timing rounds (engine.measure.timing); the baseline is the untransformed
    program timed in the same worker in rounds interleaved with the schedule's, so the speedup is a ratio
    from one moment. Each interval claims 95%: a repeat of the measurement on this machine falls inside it
    that often (the rounds' own interval, widened to how far repeats move here: engine.measure.interval_floor; a flagged
    figure's reaches down to what the steady machine may do). `gflops`, `peak_fraction` and `bound` place
    the time on the machine's roofline (engine.measure.roofline)."""

    status: str
    schedule: str
    time_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    validated: bool = False
    cached: bool = False
    error: str = ""
    time_ci_ms: list[float] | None = None
    baseline_ci_ms: list[float] | None = None
    speedup_ci: list[float] | None = None
    runs: int = 0  # timed runs of the schedule
    gflops: float | None = None
    peak_fraction: float | None = None  # time at the roofline bound / time
    bound: str = ""  # "compute" (FMA peak) or "memory" (bandwidth), whichever limits the program
    runtime: str = ""  # "serial", "openmp" or "async"
    times_ms: list[float] = field(default_factory=list)  # median of each timing round
    stages_ms: dict[str, float] = field(default_factory=dict)
    transformed_ir: str | None = None
    # cores other processes used during the timing (engine.measure.contention; None: cached, or no /proc/stat), and
    # whether that was more than the kernel left free after every retry: its time is not this kernel's alone
    foreign_cores: float | None = None
    contended: bool = False
    # a parallel kernel's: the hand-off probe's median time around its timing (engine.measure.contention), in us:
    # what a fork and join cost at that moment on this machine
    handoff_us: float | None = None
    # whether the probe said the host kept the cores far apart through every retry (engine.measure.contention.far):
    # the figure is this moment's, not the machine's usual, so it is not stored either
    far: bool = False
    # whether the timing stopped at the caller's deadline (`apply --max-seconds`) with fewer rounds than the
    # protocol asks: a wider interval, and not stored
    cut_short: bool = False
    # whether too few timing rounds were steady (engine.measure.timing: the state probe around them said the host was
    # slowing the cores' caches) through every retry: the figure is this moment's, and not stored either
    unsteady: bool = False
    # the machine's state when this was measured, in one word (engine.measure.machine.state_of): "quiet", "noisy" or
    # "unstable", from how far repeats move here (engine.measure.interval_floor) and whether this timing was flagged
    state: str = ""
    # the state probe's fastest time around the timing (engine.measure.contention), in ms; None: cached or no probe
    probe_ms: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def flagged(self) -> bool:
        """Taken in a bad host state through every retry (unsteady, far or contended): this moment's figure,
        not the machine's usual, so it is not stored."""
        return self.unsteady or self.far or self.contended

    @property
    def rel_error(self) -> float | None:
        """Half-width of the time's confidence interval, relative to the time."""
        if not self.time_ci_ms or not self.time_ms:
            return None
        return (self.time_ci_ms[1] - self.time_ci_ms[0]) / 2 / self.time_ms

    def beats(self, other: Measurement | None) -> bool:
        """Faster than `other` beyond the noise: the log speedups differ by more than their combined
        relative uncertainty (half-widths of the intervals, in quadrature). A tie is not a win."""
        if not self.ok or not self.speedup:
            return False
        if other is None or not other.ok or not other.speedup:
            return True
        noise = math.hypot(self.speedup_rel_error, other.speedup_rel_error)
        return math.log(self.speedup / other.speedup) > noise

    @property
    def speedup_rel_error(self) -> float:
        if not self.speedup or not self.speedup_ci:
            return 0.0
        return (math.log(self.speedup_ci[1]) - math.log(self.speedup_ci[0])) / 2

    def to_json(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("transformed_ir", "times_ms", "stages_ms")}
        if self.rel_error is not None:
            d["rel_error"] = self.rel_error
        if not self.error:
            d.pop("error")
        return d

    def to_record(self) -> dict:
        """What the cache stores (the roofline placement is recomputed when it is read)."""
        return {k: v for k, v in asdict(self).items() if k not in NOT_STORED}

    @classmethod
    def from_record(cls, rec: dict) -> Measurement:
        """A cached record back as a Measurement; ValueError when it is not one this version stores (a
        missing or unknown field, an unknown status, an ok without positive finite times). A change to
        the stored fields comes with a new ENGINE_VERSION (engine.store.cache), so older rows are not looked up
        rather than rejected one by one."""
        stored = {f.name for f in fields(cls)} - set(NOT_STORED)
        if set(rec) != stored:
            missing, unknown = sorted(stored - set(rec)), sorted(set(rec) - stored)
            raise ValueError(f"fields missing {missing}" if missing else f"unknown fields {unknown}")
        if rec["status"] not in STATUSES or rec["status"] == "cancelled":
            raise ValueError(f"unknown status {rec['status']!r}")
        if not isinstance(rec["schedule"], str) or not isinstance(rec["error"], str):
            raise ValueError("schedule or error is not text")
        m = cls(**rec)
        if m.ok:
            for name in ("time_ms", "baseline_ms", "speedup"):
                if not positive(getattr(m, name)):
                    raise ValueError(f"{name} {getattr(m, name)!r} in an ok result")
        for name in ("time_ci_ms", "baseline_ci_ms", "speedup_ci"):
            ci = getattr(m, name)
            if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(positive, ci))
                                       and ci[0] <= ci[1]):
                raise ValueError(f"{name} {ci!r}")
        return m

    def log_speedup(self, penalty: float = -1.0) -> float:
        """Reward of the paper (Sec. IV-C): log speedup; failures get a penalty."""
        if self.ok and self.speedup and self.speedup > 0:
            return math.log(self.speedup)
        return penalty


@dataclass
class Comparison:
    """A candidate schedule against an incumbent, timed in one interleaved burst (Engine.compare): `speedup`
    is the incumbent's time over the candidate's, the median of the paired rounds' ratios, with its 95%
    interval (`speedup_ci`); status "ok" or the failure of either."""

    status: str
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    candidate_ms: float | None = None
    incumbent_ms: float | None = None
    pairs: int = 0
    flagged: bool = False  # taken in a bad host state (still paired: both kernels saw it)
    error: str = ""

    @property
    def faster(self) -> bool:
        """The candidate is faster beyond the noise: the interval of the paired ratio lies above 1."""
        return self.status == "ok" and bool(self.speedup_ci) and self.speedup_ci[0] > 1.0


def widen(m: Measurement, rel: float) -> None:
    """Make the time's interval at least +-`rel` (relative) around the time."""
    lo, hi = m.time_ci_ms
    m.time_ci_ms = [min(lo, m.time_ms / (1 + rel)), max(hi, m.time_ms * (1 + rel))]


def paired_figure(m: Measurement, incumbent: Measurement, c: Comparison) -> Measurement:
    """`m` (a measurement of c's candidate) with its figure from the paired comparison `c` against
    `incumbent`'s schedule: the incumbent's time over the paired ratio, with the ratio's interval, where the
    two were taken in one burst and m's own figure in a slower moment than the incumbent's."""
    lo, hi = c.speedup_ci or [c.speedup, c.speedup]
    base = incumbent.speedup or 0.0
    return replace(m, time_ms=incumbent.time_ms / c.speedup,
                   time_ci_ms=[incumbent.time_ms / hi, incumbent.time_ms / lo],
                   speedup=base * c.speedup or None, speedup_ci=[base * lo, base * hi] if base else None)
