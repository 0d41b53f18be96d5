"""The policy's one pass with its fallback (`optimize`), and when the policy's own schedule counts as worse
than doing nothing, in one place for `optimize` (which then keeps the untransformed program) and `evaluate`
(which counts those programs: "never worse than doing nothing").

Two thresholds on purpose: `optimize` falls back on anything slower than the baseline in its one measurement
(keeping the baseline costs nothing), while "below the baseline" in an evaluation is a clear loss, beyond the
timing noise of re-measured medians (acceptance: no program below 0.95x with the policy's own schedule).
An empty schedule (NT on every op) is the baseline itself: it never falls back and is never below it.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass
class Answer:
    """What `optimize` hands back: the measurement it delivers, the policy's own one when the fallback fired
    ({"schedule", "status", "speedup", "error"}), and whether the policy's schedule was below the baseline."""

    measurement: object  # engine.Measurement
    fallback: dict | None
    below: bool


def optimize(eng, policy, program, *, fallback: bool = True, use_cache: bool = True, on_progress=None,
             cancel=None, deadline: float | None = None) -> Answer:
    """The policy's one pass, measured; when it fails or is slower than the baseline (`fallback_fires`), the
    untransformed program is measured and delivered instead (never something broken or slower), unless
    `fallback` is off. A cancelled measurement is handed back as it is."""
    from mlir_rl_tui.engine import Schedule

    m = eng.measure(program, policy.one_pass(program, eng.openmp), use_cache=use_cache, on_progress=on_progress,
                    cancel=cancel, deadline=deadline)
    below = below_baseline(m.schedule, m.ok, m.speedup)
    fired = None
    if m.status != "cancelled" and fallback and fallback_fires(m.schedule, m.ok, m.speedup):
        fired = {"schedule": m.schedule, "status": m.status, "speedup": m.speedup, "error": m.error}
        m = eng.measure(program, Schedule({}), use_cache=use_cache, cancel=cancel, deadline=deadline)
    return Answer(m, fired, below)
