"""agent.remeasure: the final schedules timed again side by side, with more rounds while a slow spell splits
one's runs (the rule on a scripted engine; evaluate's and the teacher's tests run it on real MLIR)."""

from __future__ import annotations

from mlir_rl_tui.agent.remeasure import SPLIT, median_speedup, remeasure, split
from mlir_rl_tui.engine import Measurement, Schedule, parse, to_text


class Scripted:
    """An engine whose fresh measurements of each schedule are the given speedups in turn."""

    def __init__(self, speedups: dict[str, list[float]]) -> None:
        self.left = {k: list(v) for k, v in speedups.items()}
        self.calls: list[tuple[str, bool]] = []

    def measure(self, program, schedule: Schedule, use_cache: bool = True) -> Measurement:
        text = to_text(schedule)
        self.calls.append((text, use_cache))
        x = self.left[text].pop(0)
        return Measurement(status="ok", schedule=text, speedup=x) if x else Measurement(status="crash", schedule=text)


A, B = parse("op0: T(8,32,1) V"), parse("op0: TP(32,32,0) T(8,32,1) V")


def test_steady_runs_take_the_rounds_asked_for_interleaved_and_fresh():
    eng = Scripted({to_text(A): [10.0, 10.5, 10.2], to_text(B): [20.0, 19.0, 21.0]})
    runs = remeasure(eng, None, [A, B, A], rounds=3)
    assert [len(v) for v in runs.values()] == [3, 3]
    assert [t for t, _ in eng.calls] == [to_text(A), to_text(B)] * 3 and not any(c for _, c in eng.calls)
    assert median_speedup(runs[to_text(A)]) == 10.2


def test_a_split_schedule_gets_more_rounds_and_a_short_spell_no_longer_decides():
    slow, fast = 45.0, 100.0  # a convolution's schedule in one evaluation sitting: 45x, 99x, 45x
    eng = Scripted({to_text(A): [slow, fast, slow, fast, fast, fast, fast, fast],
                    to_text(B): [110.0, 112.0, 111.0, 110.0, 113.0, 111.0, 112.0, 110.0]})
    runs = remeasure(eng, None, [A, B], rounds=3)
    assert [len(v) for v in runs.values()] == [7, 7]  # 2 x 3 + 1: every schedule in every round
    assert median_speedup(runs[to_text(A)]) == fast
    eng = Scripted({to_text(A): [slow] * 2 + [fast] + [slow] * 6, to_text(B): [110.0] * 9})
    runs = remeasure(eng, None, [A, B], rounds=3, max_rounds=5)
    assert len(runs[to_text(A)]) == 5 and median_speedup(runs[to_text(A)]) == slow  # slow throughout: slow


def test_split_is_beyond_the_factor_and_failures_are_not_a_split():
    def ms(*xs):
        return [Measurement(status="ok", schedule="", speedup=x) if x else Measurement(status="crash", schedule="")
                for x in xs]

    assert not split(ms(10.0, 10.0 * SPLIT * 0.99)) and split(ms(10.0, 10.0 * SPLIT * 1.01))
    assert not split(ms(10.0, 0.0, 10.5)) and not split(ms(0.0, 0.0))
    assert median_speedup(ms(0.0, 5.0, 6.0)) == 5.0  # a failed run counts as 0
