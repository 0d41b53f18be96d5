"""The timing protocol (engine.timing) on fake kernels, the roofline arithmetic, and ties in comparisons."""

from __future__ import annotations

import itertools
import math

from mlir_rl_tui.engine.engine import Measurement
from mlir_rl_tui.engine.program import TensorSpec
from mlir_rl_tui.engine.roofline import Peaks, measure_peaks, place
from mlir_rl_tui.engine.timing import Series, TimingConfig, median_ci, time_kernel

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
    lo, hi = t.speedup_rel_ci()
    assert lo <= 1.0 <= hi


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
    nbytes = 3 * 512 * 1024 * 4  # two inputs and the result: 6 MiB, past the 1 MiB level
    b = place(add, 2 * nbytes / 20.0 / 1e6, False, peaks)
    assert b.bound == "memory" and math.isclose(b.peak_fraction, 0.5)
    assert Peaks.from_json(peaks.to_json()) == peaks


def test_peaks_take_the_best_try_and_record_the_drift():
    calls = itertools.count()

    def run(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool) -> float:
        return 1.0 + 0.1 * (next(calls) % 2)  # alternately 1.0 and 1.1 ms

    p = measure_peaks(run, cores=2)
    assert p is not None and p.cores == 2 and p.fma_gflops_all == 2 * p.fma_gflops_1
    assert math.isclose(p.drift_compute, 0.05) and len(p.bandwidth_1) == len(p.bandwidth_all) == 5
    assert measure_peaks(lambda *a: None, cores=2) is None


def test_a_difference_inside_the_noise_is_a_tie():
    def m(speedup: float, rel: float) -> Measurement:
        return Measurement("ok", "x", time_ms=1.0, baseline_ms=speedup, speedup=speedup,
                           speedup_ci=[speedup / (1 + rel), speedup * (1 + rel)])

    assert not m(10.3, 0.03).beats(m(10.0, 0.03))  # 3% apart, +-3% each
    assert m(11.0, 0.03).beats(m(10.0, 0.03))  # 10% apart
    assert m(1.01, 0.0).beats(m(1.0, 0.0))  # no spread known: plain comparison
    assert m(1.0, 0.5).beats(Measurement("crash", "y")) and not Measurement("crash", "y").beats(m(1.0, 0.0))


def test_a_slow_kernel_is_timed_in_fewer_rounds_of_one_run():
    """A 2048^3 matmul's untransformed run takes 8.6 s: ten rounds of three runs were four minutes."""
    t = time_kernel(fake([8600.0, 8700.0]), 8600.0, TimingConfig())
    assert t.candidate.runs == len(t.candidate.rounds) == TimingConfig().min_slow_rounds
    # a fast schedule paired with that baseline: its rounds as usual, the baseline's capped the same way
    t = time_kernel(fake([100.0]), 100.0, TimingConfig(), baseline=fake([8600.0]), baseline_first_ms=8600.0)
    assert len(t.candidate.rounds) == TimingConfig().min_rounds and t.candidate.runs == 10
    assert t.baseline is not None and t.baseline.runs == len(t.baseline.rounds) == TimingConfig().min_slow_rounds


def test_no_round_starts_that_would_end_after_the_deadline(monkeypatch):
    from mlir_rl_tui.engine import timing

    clock = [1000.0]

    def kernel(ms):
        def run():
            clock[0] += ms / 1e3
            return ms
        return run

    monkeypatch.setattr(timing.time, "time", lambda: clock[0])
    t = time_kernel(kernel(8600.0), 8600.0, TimingConfig(), deadline=1030.0)
    assert t.stopped == "deadline" and len(t.candidate.rounds) == 2  # warm-up 8.6 s, rounds at 17.2, 25.8 s
    assert clock[0] <= 1030.0
    # each series gets one round, even past the deadline
    t = time_kernel(kernel(1.0), 1.0, FAST, baseline=kernel(2.0), baseline_first_ms=2.0, deadline=clock[0])
    assert t.stopped == "deadline" and len(t.candidate.rounds) == 1 and len(t.baseline.rounds) == 1
