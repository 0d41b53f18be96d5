"""This machine in words: its CPU's model name, and its timing state in one word (quiet, noisy, unstable).

`doctor` states both; every measurement carries the state word (Measurement.state), and the machine key and
recipes' records name the CPU."""

from __future__ import annotations

import platform

#: max/min of fresh measurements at or under which timing is `quiet` / `noisy` (serial, parallel); beyond:
#: `unstable`. Steal above STEAL_NOISY of the CPU time makes it at least noisy, above STEAL_UNSTABLE unstable.
QUIET = (1.05, 1.10)
NOISY = (1.10, 1.15)
STEAL_NOISY, STEAL_UNSTABLE = 0.02, 0.10
#: Other processes using this many cores on average during the check make it at least noisy / unstable.
BUSY_NOISY, BUSY_UNSTABLE = 0.5, 1.0


def cpu_model(fallback: str | None = None) -> str:
    """The CPU's model name as `lscpu` shows it (/proc/cpuinfo's "model name"); without one, `fallback`, or
    the platform's machine name when no fallback is given."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return (platform.machine() or "unknown") if fallback is None else fallback


def state_of(serial: float | None, parallel: float | None, steal: float | None,
             foreign_cores: float | None = None) -> str:
    """The one word for the spreads (max/min) of the serial and parallel reference, the steal and the other
    processes' CPU use (a busy machine's quiet spell is not a quiet machine)."""
    def level(x: float | None, quiet: float, noisy: float) -> int:
        return 0 if x is None or x <= quiet else 1 if x <= noisy else 2

    worst = max(level(serial, QUIET[0], NOISY[0]), level(parallel, QUIET[1], NOISY[1]),
                level(steal, STEAL_NOISY, STEAL_UNSTABLE), level(foreign_cores, BUSY_NOISY, BUSY_UNSTABLE))
    return ("quiet", "noisy", "unstable")[worst]
