"""`costmodel`'s text: the model's accuracy (agent.costmodel_train.evaluate) and its calibrated interval
(agent.costmodel_train.calibrate) in words."""

from __future__ import annotations

import math


def _f(x: float) -> str:
    return "  -  " if math.isnan(x) else f"{x:+.2f}"


def accuracy_line(what: str, r: dict) -> str:
    """The accuracy `r` on `what` ("held out", "train (fit)") in one line."""
    return (f"{what}: {r['samples']} measurements of {r['programs']} programs: spearman {_f(r['spearman'])} "
            f"(per program {_f(r['spearman_per_program'])}), mean error {100 * r['mean_rel_error']:.0f}% "
            f"(median {100 * r['median_rel_error']:.0f}%, |log| {r['mean_abs_log_error']:.2f}), "
            f"{100 * r['within_2_std']:.0f}% within 2 std, model's pick {r['top1_gmean']:.2f} of the best"
            + (f", {100 * r['within_interval']:.0f}% inside its {100 * r['interval_level']:.0f}% interval"
               if "within_interval" in r else ""))


def per_program_lines(r: dict) -> list[str]:
    """The accuracy `r` program by program, a line each."""
    return [f"    {name:<60} {p['samples']:>4} samples  spearman {_f(p['spearman'])}  "
            f"model's pick {p['top1']:.2f} of the best" for name, p in r["per_program"].items()]


def interval_line(out: str, c: dict) -> str:
    """The calibrated interval `c` of the model written to `out`, and how often it held on held-out programs."""
    return (f"{out}: {100 * c['level']:.0f}% interval = exp(log prediction -+ {c['q']:.2f} x (members' spread + "
            f"{c['floor']:.3f})); on held-out programs it held {100 * c['coverage']:.0f}% of {c['samples']} measured "
            f"speedups of {c['programs']} programs (each half checked against the other's calibration)")
