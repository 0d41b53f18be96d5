"""Schedules measured again, fresh and side by side: the one protocol of every comparison of final schedules
(`evaluate`, the teacher's rule checks and `--confirm`, benchmarks/policy_ab.py).

Each round measures every schedule once, A B C A B C ..., each a paired speedup over the untransformed
program at that moment, never from the cache. The machine has slow spells of seconds to a minute that the
far-cores probe (engine.contention) does not see: in one evaluation sitting a convolution's schedule ran
45x, 99x, 45x where three sittings before had measured it at 103-106x, and hill climbing's schedule beside
it 44x, 112x, 113x (docs/agent-training.md). The median of three is one draw of such a spell. So while a
schedule's runs are split (its fastest run over its slowest above SPLIT), another round of all of them
follows, up to `max_rounds` (default 2 x rounds + 1), and each figure is the median of all its runs: a spell
shorter than the sitting no longer decides it, and a schedule that is slow throughout stays slow.
"""

from __future__ import annotations

import statistics

from mlir_rl_tui.engine import Engine, Measurement, Program, Schedule, to_text

#: runs of one schedule whose fastest is more than this over its slowest are split: more rounds follow
SPLIT = 1.3


def speedup_of(m: Measurement) -> float:
    """A run's figure: its paired speedup, 0 for a failure."""
    return (m.speedup or 0.0) if m.ok else 0.0


def split(runs: list[Measurement]) -> bool:
    """The runs of one schedule disagree beyond SPLIT (failures are not a split: they repeat)."""
    xs = [speedup_of(m) for m in runs if speedup_of(m) > 0]
    return len(xs) > 1 and max(xs) > SPLIT * min(xs)


def remeasure(engine: Engine, program: Program, schedules: list[Schedule], rounds: int = 3,
              max_rounds: int | None = None) -> dict[str, list[Measurement]]:
    """Every distinct schedule (by its text) measured fresh, interleaved, `rounds` rounds, then more rounds
    while any is split, up to `max_rounds` (2 x rounds + 1 when None): {schedule text: its runs}."""
    by_text = {to_text(s): s for s in schedules}
    runs: dict[str, list[Measurement]] = {t: [] for t in by_text}
    limit = max(rounds, 2 * rounds + 1 if max_rounds is None else max_rounds)
    done = 0
    while done < rounds or (done < limit and any(split(ms) for ms in runs.values())):
        for text, sched in by_text.items():
            runs[text].append(engine.measure(program, sched, use_cache=False))
        done += 1
    return runs


def median_speedup(runs: list[Measurement]) -> float:
    """The figure of a schedule's runs: the median of their paired speedups (a failed run counts as 0)."""
    return statistics.median(speedup_of(m) for m in runs)
