"""The timing protocol (engine.measure.timing) on fake kernels, the roofline arithmetic, and ties in comparisons."""

from __future__ import annotations

import itertools
import math

from mlir_rl_tui.engine.ir.program import TensorSpec
from mlir_rl_tui.engine.measure.measurement import Measurement
from mlir_rl_tui.engine.measure.roofline import Peaks, measure_peaks, place, stream_sizes
from mlir_rl_tui.engine.measure.timing import Series, TimingConfig, median_ci, time_kernel

FAST = TimingConfig(round_s=0.0005, min_rounds=6, max_rounds=20, warmup_s=0.0, max_warmup_s=0.01, budget_s=0.05)


def fake(values):
    """A kernel whose runs take the given ms in turn (no real waiting)."""
    it = itertools.cycle(values)
    return lambda: next(it)


def test_median_ci_uses_binomial_order_statistics():
    assert median_ci(10) == (1, 8)  # 2nd and 9th of 10: coverage 97.9% >= 95%
    assert median_ci(3) == (0, 2)
    lo, hi = median_ci(60)
    assert 20 < lo < 30 and hi == 59 - lo


def test_a_round_counts_its_fastest_run():
    """Noise only adds time: a burst of slow runs inside a round does not move the figure."""
    s = Series([[1.0, 5.0, 1.1], [1.2, 1.0, 9.0], [1.05, 1.0, 1.0]])
    assert s.samples == [1.0, 1.0, 1.0]
    assert s.estimate()[0] == 1.0 and s.runs == 9
    assert s.typical_ms > 1.0


def test_baseline_rounds_are_interleaved_and_paired():
    t = time_kernel(fake([0.10, 0.11]), 0.1, FAST, baseline=fake([1.0, 1.05]), baseline_first_ms=1.0)
    assert t.baseline is not None and len(t.baseline.rounds) >= FAST.min_baseline_rounds
    # baseline rounds sit between candidate rounds, not all at the end
    assert t.baseline_at[0] == 0 and len(set(t.baseline_at)) == len(t.baseline_at)
    ratios = t.ratios()
    assert len(ratios) == len(t.baseline.rounds) and all(abs(r - 10) < 0.6 for r in ratios)
    assert t.speedup_rel_ci() == (1.0, 1.0)  # each round's fastest run: every paired ratio alike, no spread


def test_the_speedups_interval_spans_the_paired_ratios():
    runs = itertools.count()  # the candidate's rounds take 1.0, 1.1, 1.2, 1.3 x 0.1 ms in turn
    t = time_kernel(lambda: 0.1 * (1 + 0.1 * (next(runs) // 7 % 4)), 0.1, FAST, baseline=fake([1.0]),
                    baseline_first_ms=1.0)
    rs = sorted(t.ratios())
    m = rs[len(rs) // 2] if len(rs) % 2 else (rs[len(rs) // 2 - 1] + rs[len(rs) // 2]) / 2
    lo, hi = t.speedup_rel_ci()
    assert lo < 1.0 < hi  # the ratios differ: an interval around their median
    assert rs[0] <= lo * m + 1e-9 and hi * m <= rs[-1] + 1e-9  # within the ratios seen


def test_a_steady_kernel_stops_at_the_target_and_a_noisy_one_goes_on():
    steady = time_kernel(fake([0.2]), 0.2, FAST)
    assert steady.stopped == "target" and len(steady.candidate.rounds) == FAST.min_rounds
    rounds = itertools.count()
    noisy = time_kernel(lambda: 0.2 * (1 + 0.5 * (next(rounds) // 13 % 2)), 0.2, FAST)
    assert noisy.stopped in ("max-rounds", "budget") and len(noisy.candidate.rounds) > FAST.min_rounds


def test_a_run_over_the_limit_ends_the_timing():
    t = time_kernel(fake([0.1, 0.1, 0.1, 50.0]), 0.1, FAST, limit_ms=10.0)
    assert t.stopped == "timeout" and t.timeout_run == 50.0


def test_roofline_places_compute_and_memory_bound_programs(matmul, add):
    peaks = Peaks(cores=2, fma_gflops_1=100.0, fma_gflops_all=200.0, bandwidth_1=[(1 << 20, 100.0), (1 << 30, 20.0)],
                  bandwidth_all=[(1 << 20, 150.0), (1 << 30, 40.0)])
    flops = 2 * 256 ** 3
    b = place(matmul, flops / 100.0 / 1e6, False, peaks)  # exactly at the serial FMA peak
    assert b.bound == "compute" and math.isclose(b.peak_fraction, 1.0) and math.isclose(b.gflops, 100.0)
    assert math.isclose(place(matmul, flops / 100.0 / 1e6, True, peaks).peak_fraction, 0.5)
    nbytes = 3 * 512 * 1024 * 4  # two inputs and the result: 6 MiB, past the 1 MiB level, under the 1 GiB one
    b = place(add, nbytes / 50.0 / 1e6, False, peaks)  # at 50 GB/s: half the 1 MiB level's, its limit
    assert b.bound == "memory" and math.isclose(b.peak_fraction, 0.5)
    assert Peaks.from_json(peaks.to_json()) == peaks


def test_a_bandwidth_limit_is_one_no_working_set_beats():
    """Bandwidth only falls as the working set grows: a program moving its data at the measured rate of any
    working set at least its own is at most 100% of its limit (the ReLU sample read 161% with the level
    above it)."""
    levels = [(1 << 15, 300.0), (1 << 20, 100.0), (10 << 20, 40.0), (1 << 30, 20.0)]
    peaks = Peaks(2, 100.0, 200.0, levels, levels)

    def curve(n: int) -> float:  # a monotone bandwidth curve through the levels, in log size
        sizes = [s for s, _ in levels]
        if n <= sizes[0]:
            return levels[0][1]
        for (s0, g0), (s1, g1) in zip(levels, levels[1:]):
            if n <= s1:
                return g0 + (g1 - g0) * math.log(n / s0) / math.log(s1 / s0)
        return levels[-1][1]

    for n in (1 << 12, 1 << 16, 3 << 20, 12 << 20, 2 << 30):
        assert peaks.bandwidth(n, False) >= curve(n)
    shuffled = Peaks(2, 100.0, 200.0, levels, [levels[0], levels[2], levels[1], levels[3]])  # sizes out of order
    assert shuffled.bandwidth(3 << 20, True) == 100.0


def test_the_roofline_measures_only_what_a_program_needs_on_first_use():
    kernels = []

    def run(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool) -> float:
        kernels.append(("fma" if "vector.fma" in text else "stream", parallel))
        return 1.0

    p = measure_peaks(run, cores=2, need=(True, 5 << 20))
    assert p is not None and p.fma_gflops_all > 0 and p.fma_gflops_1 == 0 and not p.knows()
    assert p.knows((True, 5 << 20)) and not p.knows((False, 5 << 20))
    assert {k for k in kernels} == {("fma", True), ("stream", True)}
    first = len(kernels)
    again = measure_peaks(run, cores=2, need=(True, 5 << 20), have=p)  # known: nothing measured
    assert len(kernels) == first and again.to_json() == p.to_json()
    full = measure_peaks(run, cores=2, have=p)
    assert full.knows() and full.fma_gflops_all == p.fma_gflops_all


def test_peaks_take_the_best_try():
    calls = itertools.count()

    def run(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool) -> float:
        return 1.0 + 0.1 * (next(calls) % 2)  # alternately 1.0 and 1.1 ms

    p = measure_peaks(run, cores=2)
    assert p is not None and p.cores == 2 and p.fma_gflops_all == 2 * p.fma_gflops_1
    assert len(p.bandwidth_1) == len(p.bandwidth_all) == len(stream_sizes())
    assert measure_peaks(lambda *a: None, cores=2) is None


def test_a_difference_inside_the_noise_is_a_tie():
    def m(speedup: float, rel: float) -> Measurement:
        return Measurement("ok", "x", time_ms=1.0, baseline_ms=speedup, speedup=speedup,
                           speedup_ci=[speedup / (1 + rel), speedup * (1 + rel)])

    assert not m(10.3, 0.03).beats(m(10.0, 0.03))  # 3% apart, +-3% each
    assert m(11.0, 0.03).beats(m(10.0, 0.03))  # 10% apart
    assert m(1.01, 0.0).beats(m(1.0, 0.0))  # no spread known: plain comparison
    assert m(1.0, 0.5).beats(Measurement("crash", "y")) and not Measurement("crash", "y").beats(m(1.0, 0.0))


def ticking(clock: list[float], ms: float):
    """A kernel whose every run takes `ms` on a fake clock (`clock[0]`, in seconds)."""
    def run() -> float:
        clock[0] += ms / 1e3
        return ms
    return run


def test_a_slow_kernel_is_timed_in_fewer_rounds_of_one_run():
    """A 2048^3 matmul's untransformed run takes 8.6 s: ten rounds of three runs were four minutes."""
    t = time_kernel(fake([8600.0, 8700.0]), 8600.0, TimingConfig())
    assert t.candidate.runs == len(t.candidate.rounds) == TimingConfig().min_slow_rounds
    # a fast schedule paired with that baseline: its rounds as usual, the baseline's capped the same way
    t = time_kernel(fake([100.0]), 100.0, TimingConfig(), baseline=fake([8600.0]), baseline_first_ms=8600.0)
    assert len(t.candidate.rounds) == TimingConfig().min_rounds and t.candidate.runs == 10
    assert t.baseline is not None and t.baseline.runs == len(t.baseline.rounds) == TimingConfig().min_slow_rounds


def test_no_round_starts_that_would_end_after_the_deadline(monkeypatch):
    from mlir_rl_tui.engine.measure import timing

    clock = [1000.0]

    def kernel(ms):
        return ticking(clock, ms)

    monkeypatch.setattr(timing.time, "time", lambda: clock[0])
    t = time_kernel(kernel(8600.0), 8600.0, TimingConfig(), deadline=1030.0)
    assert t.stopped == "deadline" and len(t.candidate.rounds) == 2  # warm-up 8.6 s, rounds at 17.2, 25.8 s
    assert clock[0] <= 1030.0
    # each series gets one round, even past the deadline
    t = time_kernel(kernel(1.0), 1.0, FAST, baseline=kernel(2.0), baseline_first_ms=2.0, deadline=clock[0])
    assert t.stopped == "deadline" and len(t.candidate.rounds) == 1 and len(t.baseline.rounds) == 1


def test_a_runaway_is_timed_only_until_its_cap(monkeypatch):
    """A candidate whose checked run took most of its limit: no warm-up, no run or baseline round that
    would end past the cap; when not one round fits, the checked run is the figure."""
    from mlir_rl_tui.engine.measure import timing

    clock = [0.0]

    def kernel(ms):
        return ticking(clock, ms)

    monkeypatch.setattr(timing.time, "monotonic", lambda: clock[0])
    # 0.45 s runs, the cap 1.5 s away: three rounds fit (1.35 s), a fourth would not; the 20 ms baseline's
    # rounds fit beside them
    t = time_kernel(kernel(450.0), 450.0, TimingConfig(), baseline=kernel(20.0), baseline_first_ms=20.0, cap=1.5)
    assert t.stopped == "limit" and t.warmup_runs == 0 and clock[0] <= 1.5
    assert len(t.candidate.rounds) == 3 and t.baseline is not None and len(t.baseline.rounds) >= 1
    # 0.9 s runs, the cap 0.6 s away: no run of the candidate starts, its checked run is its only round,
    # and the baseline's rounds are what fits
    clock[0] = 0.0
    t = time_kernel(kernel(900.0), 900.0, TimingConfig(), baseline=kernel(20.0), baseline_first_ms=20.0, cap=0.6)
    assert t.stopped == "limit" and 0.0 < clock[0] <= 0.6
    assert t.candidate.rounds == [[900.0]] and t.baseline is not None and t.baseline.runs == round(clock[0] / 0.02)
    clock[0] = 0.0
    t = time_kernel(kernel(900.0), 900.0, TimingConfig(), baseline=kernel(700.0), baseline_first_ms=700.0, cap=0.6)
    assert clock[0] == 0.0 and t.candidate.rounds == [[900.0]] and t.baseline is not None and t.baseline.rounds == []
    # without a cap the same kernel gets its least rounds
    t = time_kernel(kernel(450.0), 450.0, TimingConfig())
    assert t.stopped != "limit" and len(t.candidate.rounds) >= TimingConfig().min_slow_rounds


def test_the_figure_comes_from_the_rounds_the_state_probe_calls_steady():
    """A slow spell of the host (the probe 1.5x its steady time) slows the kernel too: the rounds beside a
    slow probe are left out, and the figure is the steady rounds'."""
    state = {"slow": False}
    probes = itertools.count()

    def probe() -> float:  # the 3rd and 4th probes are slow
        state["slow"] = 2 <= next(probes) <= 3
        return 0.3 if state["slow"] else 0.2

    t = time_kernel(lambda: 1.5 if state["slow"] else 1.0, 1.0, FAST, probe=probe, steady_ms=0.23)
    assert len(t.probes) >= 5 and t.steady_limit_ms == 0.23
    assert 0 < t.candidate.steady_rounds < len(t.candidate.rounds)  # both states were timed ...
    assert t.candidate.estimate(FAST.min_steady)[0] == 1.0  # ... and the figure is the steady one
    assert max(t.candidate.samples) == 1.5


def test_without_enough_steady_rounds_every_round_counts():
    t = time_kernel(lambda: 1.5, 1.0, FAST, probe=lambda: 0.3, steady_ms=0.23)  # slow throughout
    assert t.candidate.steady_rounds == 0 and t.candidate.estimate(FAST.min_steady)[0] == 1.5
    assert t.stopped in ("budget", "max-rounds")  # the target is not met without steady rounds
    first = time_kernel(lambda: 1.0, 1.0, FAST, probe=lambda: 0.3)  # no reference yet: this timing's own
    assert first.candidate.steady_rounds == len(first.candidate.rounds) and first.steady_limit_ms > 0.3


def test_paired_ratios_keep_the_steady_pairs():
    state = {"slow": False}
    probes = itertools.count()

    def probe() -> float:
        state["slow"] = next(probes) % 4 == 3  # one probe in four is slow
        return 0.3 if state["slow"] else 0.2

    t = time_kernel(lambda: 1.5 if state["slow"] else 1.0, 1.0, FAST, baseline=lambda: 4.0 if state["slow"] else 2.0,
                    baseline_first_ms=2.0, probe=probe, steady_ms=0.23)
    rs = t.ratios(2)
    assert rs and all(r == 2.0 for r in rs)
    assert any(r != 2.0 for r in t.ratios(10 ** 6))  # too few steady pairs asked for: every pair counts


def test_the_repeat_floor_is_earned_from_pairs():
    from mlir_rl_tui.engine.measure import interval_floor

    assert interval_floor.floor([]) == interval_floor.PRIOR  # a new machine: at least the prior
    few = interval_floor.add(interval_floor.add([], 1.0, 1.01), 1.0, 0.99)
    assert interval_floor.floor(few) == interval_floor.PRIOR  # two close pairs do not earn a narrow interval
    window: list[float] = []
    for i in range(200):  # 1% apart, with every 20th pair 6% apart (5% of them)
        window = interval_floor.add(window, 1.0, 1.06 if i % 20 == 0 else 1.01)
    assert len(window) == interval_floor.WINDOW
    # the 95th percentile's upper confidence bound covers the 5% of pairs 6% apart: a repeat lands inside
    assert math.isclose(interval_floor.floor(window), 0.06, rel_tol=1e-9)
    assert interval_floor.upper_rank(128) > 0.95 * 128 and interval_floor.upper_rank(10) == 10
    assert interval_floor.add(window, 0.0, 1.0) == window and interval_floor.add(window, None, 1.0) == window
    wild = interval_floor.add([0.01] * 30, 1.0, 1.5)  # one busy moment the flags missed does not set every interval
    assert interval_floor.floor(wild) < 0.02 and interval_floor.floor(wild[-5:]) > 0.4  # (with few pairs it does: not earned)
