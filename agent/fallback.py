"""When the policy's own schedule counts as worse than doing nothing, in one place for `optimize` (which then
keeps the untransformed program) and `evaluate` (which counts those programs, issue 14: "never worse than
doing nothing").

Two thresholds on purpose: `optimize` falls back on anything slower than the baseline in its one measurement
(keeping the baseline costs nothing), while "below the baseline" in an evaluation is a clear loss, beyond the
timing noise of re-measured medians (acceptance: no program below 0.95x with the policy's own schedule).
An empty schedule (NT on every op) is the baseline itself: it never falls back and is never below it.
"""

from __future__ import annotations

FALLBACK_UNDER = 1.0
"""`optimize` keeps the untransformed program when the policy's schedule fails or is slower than this"""
BELOW_BASELINE = 0.95
"""an evaluation counts the policy's own schedule as below the baseline under this speedup (or failed)"""


def fallback_fires(schedule: str, ok: bool, speedup: float | None) -> bool:
    """Whether `optimize` would hand back the untransformed program instead of this measured schedule."""
    return bool(schedule) and (not ok or not speedup or speedup < FALLBACK_UNDER)


def below_baseline(schedule: str, ok: bool, speedup: float | None) -> bool:
    """Whether the policy's own schedule is a loss: it failed, or its speedup is under BELOW_BASELINE."""
    return bool(schedule) and (not ok or not speedup or speedup < BELOW_BASELINE)


def with_fallback(schedule: str, ok: bool, speedup: float | None) -> float | None:
    """The speedup `optimize` delivers: the schedule's, or 1.0 (the untransformed program against itself)
    when the fallback fires."""
    return 1.0 if fallback_fires(schedule, ok, speedup) else speedup
