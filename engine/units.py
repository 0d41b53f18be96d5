"""How the product writes a duration for people: one rule for progress lines, time-left estimates and reports."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """`0.4 s`, `42 s`, `2 min 05 s`, `3 h 07 min`: the precision a person reads at that size."""
    s = max(0.0, float(seconds))
    if s < 0.95:
        return f"{s:.1f} s"
    if s < 99.5:
        return f"{s:.0f} s"
    whole = int(round(s))
    if whole < 6000:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def left(seconds: float) -> str:
    """`about 2 min 05 s left`: an estimate of the time left."""
    return f"about {duration(seconds)} left"
