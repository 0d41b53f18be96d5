"""How far a repeat of a measurement moves on this machine: the spread between bursts, learned from pairs.

A timing's own interval (engine.measure.timing) is the spread of its rounds inside one burst of about a second. The
host's state changes on a scale of seconds, so a repeat of the same measurement a moment later lands outside
that interval more often than 5% of the time (measured on a 2-core Intel Xeon VM, steady rounds only: the
conv2d sample's parallel schedule stated +-3.7% and its repeats fell inside 72% of the time). The engine
therefore keeps, per machine (engine.measure.roofline.Peaks.repeats), the last WINDOW log-ratios of two measurements
of the same code taken at different moments:

- the untransformed program timed alone and again paired with each schedule (every measurement of a
  schedule makes one: the baseline is timed in both, seconds or days apart);
- a schedule measured again: against each earlier figure of it the engine took (up to engine.engine.SEEN:
  on the same VM the conv2d sample's parallel schedule drifted 5% over a minute in steps of 1%, so
  consecutive pairs alone miss it), else against the cache's (`--no-cache`, benchmarks);
- `mlir-rl-tui doctor`'s repeats, all pairs.

A reported interval is at least as wide as the 95th percentile of those (`floor`; its upper 90% confidence
bound: the window is a sample, and an interval that claims 95% must not cover less; but never the single
largest pair once there are MIN_PAIRS), so it covers the next measurement of the same thing as often as it
claims. With fewer than MIN_PAIRS pairs the machine is new and
the interval is at least PRIOR wide: a narrow interval is earned, never assumed.
"""

from __future__ import annotations

import math

WINDOW = 128  # pairs kept per machine, the latest
MIN_PAIRS = 10  # before this many, the floor is at least PRIOR
PRIOR = 0.10  # relative half-width on a machine with too few pairs
LEVEL = 0.95
CONFIDENCE = 0.90  # the floor is an upper confidence bound of the LEVEL quantile at this confidence


def add(window: list[float], a: float | None, b: float | None) -> list[float]:
    """`window` with the pair (a, b) of figures of one thing added as |log(a / b)|, the latest WINDOW."""
    if not a or not b or a <= 0 or b <= 0 or not math.isfinite(a / b):
        return window
    return [*window, abs(math.log(a / b))][-WINDOW:]


def floor(window: list[float]) -> float:
    """The relative half-width a reported interval has at least: the upper CONFIDENCE bound of the LEVEL
    quantile of the pairs' log ratios (an order statistic), as a relative factor minus one; at least PRIOR
    with few pairs."""
    if not window:
        return PRIOR
    xs = sorted(window)
    # once there are MIN_PAIRS, never the largest pair: one wild pair (a busy moment the flags missed) would
    # otherwise set every interval until WINDOW more pairs pushed it out
    q = xs[min(upper_rank(len(xs)), len(xs) - 1 if len(xs) >= MIN_PAIRS else len(xs)) - 1]
    rel = math.exp(q) - 1
    return max(rel, PRIOR) if len(xs) < MIN_PAIRS else rel


def upper_rank(n: int, level: float = LEVEL, confidence: float = CONFIDENCE) -> int:
    """The smallest k (1-based) with P(X_(k) >= the `level` quantile) >= `confidence` for n samples: the
    number of samples under the quantile is Binomial(n, level), and X_(k) is above it when that is < k."""
    acc = 0.0
    for k in range(1, n + 1):
        acc += math.comb(n, k - 1) * level ** (k - 1) * (1 - level) ** (n - k + 1)  # P(count = k - 1)
        if acc >= confidence:
            return k
    return n
