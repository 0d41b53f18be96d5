"""The measurement protocol: timing rounds, contention and the hand-off probe, the interval floor, the roofline,
interleaved re-measurement, per-op time shares, and `doctor`."""
