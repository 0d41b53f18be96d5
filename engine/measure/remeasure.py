"""Schedules measured again, fresh and side by side: the one protocol of every comparison of final schedules
(`evaluate` and its comparison of several policies, the teacher's rule checks).

Each round measures every schedule once, A B C A B C ..., never from the cache. The machine has slow spells of
seconds to a minute that the far-cores probe (engine.measure.contention) does not see: in one evaluation a
convolution's schedule ran 45x, 99x, 45x where earlier evaluations had measured it at 103-106x, and hill
climbing's schedule beside it 44x, 112x, 113x. So while a schedule's runs are split
(its slowest run over its fastest above SPLIT), another round of all of them follows, up to `max_rounds`
(default 2 x rounds + 1). So it does while every run of a schedule is far (the probe saw the host's far-cores
state, engine.measure.contention, around each of them: such runs agree with each other and are not a split): in one
evaluation on an AMD EPYC VM hill climbing's parallel schedule of the sample max pooling ran 1.81x, 1.59x,
1.59x, 5 of that program's timings flagged far, where the same schedule alone took 3.84-3.92x afterwards.

A schedule's figure is its fastest run (`figure`), and the untransformed program's time in the remeasurement is
the fastest of the baselines timed beside the runs (`pooled_baseline`): noise on this machine only ever
adds time (engine.measure.timing's rounds take their fastest run for the same reason), and the slow spells are
states of the host, not of the code. With the median of the runs as the figure,
two evaluations of the same policy, same schedules, disagreed on the policy / hill climbing ratio by a
mean 5.4% per program (up to 1.26x: a 113x113 pooling's two schedules both ran at 2.5x in some rounds and
4.8x in others, and the median took whichever state had more rounds); with the fastest run, 1.3% (up to
1.05x), and with the median of the rounds' paired ratios 3.2%.
"""

from __future__ import annotations

from mlir_rl_tui.engine import Engine, Measurement, Program, Schedule, to_text

#: runs of one schedule whose slowest is more than this over its fastest are split: more rounds follow
SPLIT = 1.3


def split(runs: list[Measurement]) -> bool:
    """The times of one schedule's runs disagree beyond SPLIT (failures are not a split: they repeat)."""
    ts = [m.time_ms for m in runs if m.ok and m.time_ms]
    return len(ts) > 1 and max(ts) > SPLIT * min(ts)


def all_far(runs: list[Measurement]) -> bool:
    """Every successful run of one schedule was timed in the far-cores state (none to trust as its figure)."""
    ok = [m for m in runs if m.ok]
    return bool(ok) and all(m.far for m in ok)


def remeasure(engine: Engine, program: Program, schedules: list[Schedule], rounds: int = 3,
              max_rounds: int | None = None) -> dict[str, list[Measurement]]:
    """Every distinct schedule (by its text) measured fresh, interleaved, `rounds` rounds, then more rounds
    while any is split or all far, up to `max_rounds` (2 x rounds + 1 when None): {schedule text: its runs}."""
    by_text = {to_text(s): s for s in schedules}
    runs: dict[str, list[Measurement]] = {t: [] for t in by_text}
    limit = max(rounds, 2 * rounds + 1 if max_rounds is None else max_rounds)
    done = 0
    while done < rounds or (done < limit and any(split(ms) or all_far(ms) for ms in runs.values())):
        for text, sched in by_text.items():
            runs[text].append(engine.measure(program, sched, use_cache=False))
        done += 1
    return runs


def pooled_baseline(runs: dict[str, list[Measurement]]) -> float | None:
    """The untransformed program's time in this remeasurement: the fastest of the baselines paired with every run
    of every schedule. One baseline for all of them, so their figures compare as their times do: the
    serial baseline timed beside each measurement moves with where its buffers land (the matmul sample's
    12.5 ms beside one schedule's three runs and 18.7 ms beside the other's, in one remeasurement, while both
    schedules ran at 96-97% of FMA peak: 86x against 121x paired)."""
    base = [m.baseline_ms for ms in runs.values() for m in ms if m.ok and m.baseline_ms]
    return min(base) if base else None


def speedups(runs: dict[str, list[Measurement]]) -> dict[str, list[float]]:
    """Each run's speedup over the remeasurement's pooled baseline (0 for a failed run), by schedule text; the
    untransformed program (text "") is 1 by definition."""
    base = pooled_baseline(runs)

    def of(text: str, m: Measurement) -> float:
        if not (m.ok and m.time_ms and base):
            return 0.0
        return 1.0 if text == "" else base / m.time_ms

    return {t: [of(t, m) for m in ms] for t, ms in runs.items()}


def figure(xs: list[float]) -> float:
    """A schedule's figure in a remeasurement from its runs' speedups (`speedups`): the fastest run; 0 when a run
    failed (a schedule that fails once is not one to keep)."""
    return max(xs) if xs and all(xs) else 0.0
