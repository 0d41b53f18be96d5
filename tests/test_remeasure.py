"""agent.remeasure: the final schedules timed again side by side, with more rounds while a slow spell splits
one's runs, each figure over the sitting's pooled baseline (the rule on a scripted engine; evaluate's and
the teacher's tests run it on real MLIR)."""

from __future__ import annotations

import statistics

from mlir_rl_tui.agent.remeasure import SPLIT, pooled_baseline, remeasure, speedups, split
from mlir_rl_tui.engine import Measurement, Schedule, parse, to_text


def run(time_ms: float, baseline_ms: float = 10.0) -> Measurement:
    if not time_ms:
        return Measurement(status="crash", schedule="")
    return Measurement(status="ok", schedule="", time_ms=time_ms, baseline_ms=baseline_ms,
                       speedup=baseline_ms / time_ms)


class Scripted:
    """An engine whose fresh measurements of each schedule are the given (time, paired baseline) in turn."""

    def __init__(self, script: dict[str, list[tuple[float, float]]]) -> None:
        self.left = {k: list(v) for k, v in script.items()}
        self.calls: list[tuple[str, bool]] = []

    def measure(self, program, schedule: Schedule, use_cache: bool = True) -> Measurement:
        text = to_text(schedule)
        self.calls.append((text, use_cache))
        return run(*self.left[text].pop(0))


A, B = parse("op0: T(8,32,1) V"), parse("op0: TP(32,32,0) T(8,32,1) V")


def test_steady_runs_take_the_rounds_asked_for_interleaved_and_fresh():
    eng = Scripted({to_text(A): [(1.0, 10.0), (1.05, 10.0), (1.02, 10.0)],
                    to_text(B): [(0.5, 10.0), (0.52, 10.0), (0.49, 10.0)]})
    runs = remeasure(eng, None, [A, B, A], rounds=3)
    assert [len(v) for v in runs.values()] == [3, 3]
    assert [t for t, _ in eng.calls] == [to_text(A), to_text(B)] * 3 and not any(c for _, c in eng.calls)
    assert statistics.median(speedups(runs)[to_text(A)]) == 10.0 / 1.02


def test_a_split_schedule_gets_more_rounds_and_a_short_spell_no_longer_decides():
    slow, fast = 2.2, 1.0  # a convolution's schedule in one evaluation sitting: 45x, 99x, 45x
    eng = Scripted({to_text(A): [(t, 10.0) for t in (slow, fast, slow, fast, fast, fast, fast)],
                    to_text(B): [(0.9, 10.0)] * 7})
    runs = remeasure(eng, None, [A, B], rounds=3)
    assert [len(v) for v in runs.values()] == [7, 7]  # 2 x 3 + 1: every schedule in every round
    assert statistics.median(speedups(runs)[to_text(A)]) == 10.0 / fast
    eng = Scripted({to_text(A): [(t, 10.0) for t in (slow, slow, fast, slow, slow)], to_text(B): [(0.9, 10.0)] * 5})
    runs = remeasure(eng, None, [A, B], rounds=3, max_rounds=5)
    assert len(runs[to_text(A)]) == 5 and statistics.median(speedups(runs)[to_text(A)]) == 10.0 / slow


def test_figures_share_the_sittings_baseline():
    """The matmul sample in one sitting: both schedules at 96-97% of FMA peak, one's runs paired with 12.5 ms
    baselines, the other's with 18.7 ms (86x against 121x paired): over the pooled baseline they compare as
    their times do."""
    runs = {"a": [run(0.146, 12.5)] * 3, "b": [run(0.148, 18.7)] * 3, "": [run(12.6, 12.6)] * 3}
    assert pooled_baseline(runs) == 12.6
    fig = speedups(runs)
    assert fig["a"][0] / fig["b"][0] == 0.148 / 0.146 and fig[""] == [1.0] * 3
    assert speedups({"a": [run(0.0), run(1.0)]})["a"] == [0.0, 10.0]  # a failed run counts as 0


def test_split_is_beyond_the_factor_and_failures_are_not_a_split():
    assert not split([run(1.0), run(SPLIT * 0.99)]) and split([run(1.0), run(SPLIT * 1.01)])
    assert not split([run(1.0), run(0.0), run(1.05)]) and not split([run(0.0), run(0.0)])
