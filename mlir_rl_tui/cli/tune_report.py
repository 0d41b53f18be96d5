"""`tune`'s text: its progress line while it works and its report at the end (the `--json` answer is
engine.tune.tuner.TuneResult.to_json)."""

from __future__ import annotations

import time


def progress_text(t) -> str:
    """The progress line of a tuning (engine.tune.tuner.Tuner's state `t`): workloads done, the model's time
    now, at the start and untransformed, the time left and the stage."""
    best = t.best
    n = len(t.workloads)
    parts = [f"tune: {t.done}/{n} workloads"]
    if best is not None and best.time_ms:
        parts.append(f"model {best.time_ms:.3f} ms")
        if t.start_m is not None and t.start_m.time_ms:
            parts.append(f"start {t.start_m.time_ms:.3f}")
        if best.baseline_ms:
            parts.append(f"untransformed {best.baseline_ms:.3f}")
    from mlir_rl_tui.engine.units import duration

    left = max(0.0, t.deadline - time.monotonic())
    parts.append(f"{duration(left)} left")
    nodes = getattr(t.engine, "status", None)  # on a Ray cluster: each node's work (engine.cluster)
    return ", ".join(parts) + f" ({t.stage})" + (f" [{nodes()}]" if nodes is not None else "")


def report(r, out: str, interrupted: bool) -> str:
    """A tuning's result `r` (engine.tune.tuner.TuneResult) in words: the model's time, each workload's line,
    the schedule, and how PyTorch code calls the library `out`."""
    lines = [f"{out}: {len(r.workloads)} distinct workloads in {sum(len(w.ops) for w in r.workloads)} ops; "
             f"{r.best.time_ms:.3f} ms (start {r.start.time_ms:.3f} ms, untransformed {r.baseline.time_ms:.3f} ms, "
             f"{r.best.speedup:.2f}x) after {r.measurements} measurements in {r.seconds:.0f} s"
             + (" (interrupted)" if interrupted else "")]
    if not r.searched:
        lines.append("every workload was tuned before (the tuning database): no search")
    cut = sum(w.state in ("cut", "unreached") for w in r.workloads)
    if cut:
        lines.append(f"{cut} workloads were cut short or not reached before the deadline: they keep what they have "
                     "in later runs; `--continue` searches them further")
    lines.append(f"{'workload':44} {'ops':>4} {'ms':>8} {'start':>9} {'tries':>6} {'paired':>6} {'kept':>5} "
                 f"{'s':>5}  state")
    for w in sorted(r.workloads, key=lambda w: -w.ms):
        lines.append(f"{w.label[:44]:44} {len(w.ops):>4} {w.ms:>8.3f} {w.start:>9} {w.measurements:>6} {w.compared:>6} "
                     f"{w.kept:>5} {w.seconds:>5.0f}  {w.state}" + (" (alone)" if w.alone else "")
                     + (f", {w.restarts} restarts" if w.restarts else ""))
    lines.append(f"schedule: {r.schedule or '(none)'}")
    lines.append(f"from PyTorch: import mlir_rl_tui.torch; model = mlir_rl_tui.torch.load({out!r})")
    return "\n".join(lines)
