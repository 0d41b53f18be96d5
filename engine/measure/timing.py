"""The timing protocol: how one kernel is timed, next to its baseline, until the figure is trustworthy.

Measured on the 2-core VM this project runs on (benchmarks/measurement_noise.py): single runs of a
parallel kernel jump by 2x for tens of milliseconds at a time (the host takes the second core), and the
first runs after compiling are slower. So:

- warm-up until stable: windows of runs until two successive window medians agree within 3%;
- rounds: the runs are grouped in rounds of about `round_s` each; a round's fastest run is one sample
  (noise only ever adds time), so a burst of slow runs costs one round, not the figure;
- interleaved: a round of the baseline follows every few rounds of the candidate (A B A B), so a
  speedup is the ratio of two figures from the same moment;
- enough rounds for the target: rounds continue until the 95% confidence interval of the median over
  rounds is within `target_rel` of it, or the time budget is spent; the interval is reported (the engine
  widens it to how far a repeat moves on this machine: engine.measure.interval_floor);
- slow kernels: a run over `slow_ms` is a round of its own, and when `min_rounds` of them would cost more
  than `slow_budget_s`, fewer rounds (never under `min_slow_rounds`) do (a 2048^3 matmul's untransformed
  run takes 8.6 s: 30 runs of it were 4 minutes); the interval of fewer rounds is wider, as it should be;
- a deadline (`apply --max-seconds`): no round starts that would end after it, once each series has one;
- a runaway's cap: a candidate whose checked run took a good share of its time limit (engine.run.worker) is
  timed only while its runs fit before the cap (its limit past the first run, plus a grace): no warm-up
  run, round or baseline round starts that would end after it, and when no round fits, the checked run
  itself is the figure (`Timed.stopped` "limit"): a kernel this slow needs a rank, not three digits;
- steady rounds only: on a cloud VM the host's other tenants slow a core's cache-resident code by up to 1.6x
  in spells of 0.1-15 s (engine.measure.contention, "the state probe"). A fixed reference kernel (the probe) is
  timed before the first round, after every `probe_every` candidate rounds and after the last; a round
  is steady when the probes on both sides of it were within the machine's steady limit, and the figure is
  the steady rounds' (when there are at least `min_steady` of them: otherwise every round's, and the
  caller times again or flags the figure).

Pure Python on callables, so it is tested without MLIR; `engine.run.worker` runs it on jitted kernels.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TimingConfig:
    """Knobs of the protocol (defaults measured on a 2-core VM, see the module docstring)."""

    round_s: float = 0.004  # a round of a fast kernel lasts about this long ...
    round_runs: int = 3  # ... and has at least this many runs (for a baseline: when they cost < 20 ms each)
    min_rounds: int = 10
    max_rounds: int = 60
    target_rel: float = 0.01  # stop when the 95% CI half-width of the median is within 1% of it
    budget_s: float = 1.5  # kernel time spent timing the candidate, at most (beyond min_rounds)
    warmup_s: float = 0.05  # at least this much warm-up ...
    max_warmup_s: float = 0.5  # ... and at most this much while waiting for stable windows
    stable_rel: float = 0.03
    baseline_share: float = 0.5  # baseline rounds cost at most this share of the candidate's time ...
    min_baseline_rounds: int = 3  # ... but there are at least this many
    slow_ms: float = 20.0  # a run slower than this is a round of its own
    slow_budget_s: float = 10.0  # the least rounds of a slow kernel cost at most this much ...
    min_slow_rounds: int = 3  # ... but there are at least this many
    probe_every: int = 2  # candidate rounds between two state probes
    min_steady: int = 5  # steady rounds a figure needs (fewer: every round counts, and the figure is unsteady)


@dataclass
class Series:
    """Timed runs of one kernel, grouped in rounds. A round's sample is its fastest run: noise on a shared
    machine only ever adds time (Chen & Revels, "Robust benchmarking in noisy environments", 2016), and
    on this VM a round's minimum drifted 1.14x over 12 s where its median drifted 1.32x."""

    rounds: list[list[float]] = field(default_factory=list)  # ms per run, per round
    #: per round, the index (into Timed.probes) of the last state probe before it; -1: none
    probe_at: list[int] = field(default_factory=list)
    #: per round, whether the probes around it were steady (Timed.mark_steady); empty: all are
    steady: list[bool] = field(default_factory=list)

    @property
    def samples(self) -> list[float]:
        return [min(r) for r in self.rounds if r]

    @property
    def steady_rounds(self) -> int:
        return sum(self.steady) if self.steady else len(self.rounds)

    def used(self, min_steady: int = 1) -> list[float]:
        """The samples the figure comes from: the steady rounds', when there are `min_steady` of them."""
        if not self.steady or sum(self.steady) < min_steady:
            return self.samples
        return [min(r) for r, ok in zip(self.rounds, self.steady) if r and ok]

    @property
    def runs(self) -> int:
        return sum(len(r) for r in self.rounds)

    @property
    def typical_ms(self) -> float:
        """Median of every run: what one run typically took, interference included."""
        return median([t for r in self.rounds for t in r])

    def estimate(self, min_steady: int = 1) -> tuple[float, float, float]:
        """(median of the round samples, 95% CI low, CI high), in ms (steady rounds only: `used`)."""
        xs = sorted(self.used(min_steady))
        if not xs:
            return math.nan, math.nan, math.nan
        lo, hi = median_ci(len(xs))
        return median(xs), xs[lo], xs[hi]

    def rel_halfwidth(self, min_steady: int = 1) -> float:
        m, lo, hi = self.estimate(min_steady)
        return (hi - lo) / 2 / m if m > 0 else math.inf


@dataclass
class Timed:
    """What timing gave: the candidate's series and, when paired, the baseline's."""

    candidate: Series
    baseline: Series | None = None
    warmup_runs: int = 0
    stopped: str = ""  # "target", "budget", "max-rounds", "deadline", "limit" (a runaway's cap), "timeout"
    timeout_run: float | None = None  # ms of the run that went over the limit, if one did
    #: per baseline round, the index of the first candidate round after it (for paired ratios)
    baseline_at: list[int] = field(default_factory=list)
    probes: list[float] = field(default_factory=list)  # ms of each state probe, in order
    steady_limit_ms: float | None = None  # the probe time up to which a round counted as steady

    def mark_steady(self, limit_ms: float | None) -> None:
        """Mark each round of both series steady when the probes before and after it took at most
        `limit_ms` (None: STEADY_FACTOR times the fastest probe of this timing). Without probes: no marks."""
        if not self.probes:
            return
        limit = limit_ms if limit_ms is not None else min(self.probes) * STEADY_FACTOR
        self.steady_limit_ms = limit
        ok = [p <= limit for p in self.probes]
        for s in (self.candidate, self.baseline):
            if s is not None:
                s.steady = [i >= 0 and ok[i] and (i + 1 >= len(ok) or ok[i + 1]) for i in s.probe_at]

    def ratios(self, min_steady: int = 1) -> list[float]:
        """Paired speedups: each baseline round's sample over the median sample of the candidate rounds
        between it and the next baseline round (the same moment, so machine drift cancels); steady pairs
        only, when there are `min_steady` of them."""
        if self.baseline is None:
            return []
        c, b = self.candidate.samples, self.baseline.samples
        cs = self.candidate.steady or [True] * len(c)
        bs = self.baseline.steady or [True] * len(b)
        out, steady = [], []
        for i, start in enumerate(self.baseline_at):
            end = self.baseline_at[i + 1] if i + 1 < len(self.baseline_at) else len(c)
            idx = list(range(start, min(end, len(c)))) or list(range(max(0, start - 1), min(start + 1, len(c))))
            if idx and i < len(b):
                out.append(b[i] / median([c[j] for j in idx]))
                steady.append(bs[i] and all(cs[j] for j in idx))
        if sum(steady) >= min_steady:
            return [r for r, ok in zip(out, steady) if ok]
        return out

    def speedup_rel_ci(self, min_steady: int = 1) -> tuple[float, float]:
        """The 95% interval of the paired ratios' median, relative to that median (lo <= 1 <= hi)."""
        rs = sorted(self.ratios(min_steady))
        if len(rs) < 2:
            return 1.0, 1.0
        lo, hi = median_ci(len(rs))
        m = median(rs)
        return min(1.0, rs[lo] / m), max(1.0, rs[hi] / m)


#: A round is steady when the probes around it took at most this times the machine's fastest probe (or,
#: before one is known, this timing's fastest): the probe's fast state spreads 1.03-1.06x, its slow one is
#: 1.3-1.7x (engine.measure.contention).
STEADY_FACTOR = 1.15


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_ci(n: int, level: float = 0.95) -> tuple[int, int]:
    """Indexes (into the sorted sample) of a distribution-free confidence interval for the median: the
    order statistics j < k with P(X_(j) <= median <= X_(k)) >= level under Binomial(n, 1/2)."""
    if n < 3:
        return 0, n - 1
    cdf = [0.0] * (n + 1)
    acc = 0.0
    for i in range(n + 1):
        acc += math.comb(n, i) / 2 ** n
        cdf[i] = acc
    j = 0
    while j + 1 < n and 1 - 2 * cdf[j + 1] >= level:  # coverage of [X_(j+2), X_(n-j-1)] in 1-based terms
        j += 1
    return j, n - 1 - j


def warm_up(call: Callable[[], float], first_ms: float, cfg: TimingConfig) -> tuple[int, float]:
    """Run until two successive windows agree within `stable_rel` (and `warmup_s` has passed); returns
    the runs made and the last window's median (a better estimate of a run than the cold first run)."""
    if first_ms > 50:  # a slow kernel is as warm as it gets after one run
        return 1, call()
    window = max(3, min(20, int(cfg.warmup_s * 1e3 / 4 / max(first_ms, 1e-3))))
    runs, prev, t0 = 0, None, time.perf_counter()
    while True:
        cur = median([call() for _ in range(window)])
        runs += window
        spent = time.perf_counter() - t0
        if spent >= cfg.max_warmup_s or (prev is not None and spent >= cfg.warmup_s
                                         and abs(cur - prev) <= cfg.stable_rel * prev):
            return runs, cur
        prev = cur


def time_kernel(call: Callable[[], float], first_ms: float, cfg: TimingConfig = TimingConfig(),
                baseline: Callable[[], float] | None = None, baseline_first_ms: float = 0.0,
                limit_ms: float | None = None, on_round: Callable[[int, int], None] | None = None,
                place: Callable[[int], None] | None = None, deadline: float | None = None,
                probe: Callable[[], float] | None = None, steady_ms: float | None = None,
                cap: float | None = None) -> Timed:
    """Time `call` (runs the kernel once, returns its ms) with rounds of `baseline` interleaved.

    `place(k)` is called before the k-th round of either kernel: the worker moves the kernels to another
    copy of their arguments, so the figure does not depend on where one copy landed in memory. A candidate
    run slower than `limit_ms` ends the timing (`Timed.timeout_run`). With a `deadline` (time.time()), no
    round starts that would end after it once each kernel has one (`Timed.stopped` "deadline").

    `probe()` times the state probe once (its ms); with it, rounds are marked steady against `steady_ms`
    (the machine's steady limit for the probe; None: relative to this timing's fastest probe), the
    figure comes from steady rounds, and the target is only met with `min_steady` of them.

    With a `cap` (time.monotonic()), nothing starts that would end after it by its estimate; when not one
    candidate round fits, the first run (`first_ms`) is the candidate's only round (`Timed.stopped` "limit")."""
    place = place or (lambda k: None)
    out = Timed(Series(), Series() if baseline else None)

    def capped(ms: float) -> bool:
        return cap is not None and time.monotonic() + ms / 1e3 > cap

    if cap is not None:  # a runaway is as warm as it gets after its checked run
        est = first_ms
    else:
        out.warmup_runs, est = warm_up(call, first_ms, cfg)
    est = max(est, 1e-4)
    base_est = 1e-4
    if baseline is not None:  # a runaway's baseline is not warmed up: its rounds are what the cap leaves
        base_est = max(baseline_first_ms if cap is not None else warm_up(baseline, baseline_first_ms, cfg)[1], 1e-4)
    per_round = 1 if est > cfg.slow_ms else max(cfg.round_runs, int(cfg.round_s * 1e3 / est))
    base_per_round = 1 if base_est > cfg.slow_ms else max(cfg.round_runs, int(cfg.round_s * 1e3 / base_est))
    min_rounds = least_rounds(cfg, cfg.min_rounds, per_round * est)
    # baseline rounds: at least min_baseline_rounds, else at most a share of the candidate's time
    affordable = int(cfg.baseline_share * min_rounds * per_round * est / (base_per_round * base_est))
    n_base = least_rounds(cfg, max(cfg.min_baseline_rounds, min(min_rounds, affordable)), base_per_round * base_est)
    max_base = least_rounds(cfg, 2 * n_base, base_per_round * base_est)  # interleaved rounds, at most
    every = max(1, min_rounds // n_base)

    def late(round_ms: float) -> bool:
        return deadline is not None and time.time() + round_ms / 1e3 > deadline

    def probe_now() -> None:
        if probe is not None:
            out.probes.append(probe())

    def baseline_round() -> None:
        place(len(out.baseline.rounds))
        out.baseline.rounds.append([baseline() for _ in range(base_per_round)])
        out.baseline.probe_at.append(len(out.probes) - 1)
        out.baseline_at.append(r)

    need = cfg.min_steady if probe is not None else 1
    spent_ms = 0.0
    r = 0
    probe_now()
    while True:
        if out.baseline is not None and r % every == 0 and len(out.baseline.rounds) < max_base and \
                not (out.baseline.rounds and late(base_per_round * base_est + per_round * est)) and \
                not capped(base_per_round * base_est + per_round * est):
            baseline_round()
        if r and late(per_round * est):
            out.stopped = "deadline"
            break
        if capped(per_round * est):
            if not out.candidate.rounds:  # the checked run is the figure
                out.candidate.rounds.append([first_ms])
                out.candidate.probe_at.append(len(out.probes) - 1)
            out.stopped = "limit"
            break
        place(r)
        runs = []
        for _ in range(per_round):
            t = call()
            runs.append(t)
            if limit_ms is not None and t > limit_ms:
                out.candidate.rounds.append(runs)
                out.candidate.probe_at.append(len(out.probes) - 1)
                out.timeout_run = t
                out.stopped = "timeout"
                return out
        out.candidate.rounds.append(runs)
        out.candidate.probe_at.append(len(out.probes) - 1)
        spent_ms += sum(runs)
        r += 1
        if probe is not None and r % cfg.probe_every == 0:
            probe_now()
        if on_round is not None:
            on_round(r, min_rounds)
        if r < min_rounds:
            continue
        out.mark_steady(steady_ms)
        if out.candidate.steady_rounds >= need and out.candidate.rel_halfwidth(need) <= cfg.target_rel:
            out.stopped = "target"
        elif r >= cfg.max_rounds:
            out.stopped = "max-rounds"
        elif spent_ms >= cfg.budget_s * 1e3:
            out.stopped = "budget"
        else:
            continue
        break
    while out.baseline is not None and len(out.baseline.rounds) < n_base and not late(base_per_round * base_est) \
            and not capped(base_per_round * base_est):
        baseline_round()
    probe_now()
    out.mark_steady(steady_ms)
    return out


def least_rounds(cfg: TimingConfig, rounds: int, round_ms: float) -> int:
    """`rounds`, or fewer (never under `min_slow_rounds`) when they would cost more than `slow_budget_s`."""
    if rounds * round_ms <= cfg.slow_budget_s * 1e3:
        return rounds
    return min(rounds, max(cfg.min_slow_rounds, int(cfg.slow_budget_s * 1e3 / round_ms)))
