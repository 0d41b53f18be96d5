"""`evaluate`'s presentation: the evaluation (agent.evaluate.evaluation) as a table and as a bar plot, in the
terminal (plotext) or as a PNG (matplotlib)."""

from __future__ import annotations

import os
import sys

from mlir_rl_tui.cli.paths import replacing


def table(rows: list[dict], summary: dict, budgets: list[int], rounds: int, others: dict[str, str] | None = None) -> None:
    """The evaluation as a table; `budgets`: the hill-climbing budgets (none: no search), `rounds`: the final
    schedules' re-measurements; `others`: each further policy's key ("policy_B") and checkpoint."""
    from mlir_rl_tui.agent.evaluate import hill_key

    hills = [hill_key(b) for b in sorted(budgets)]
    others = others or {}
    print(f"{'program':34} {'policy':>9}  {'+fallbk':>9} {'%peak':>5} " + "".join(f"{_short(k):>9}  " for k in others)
          + "".join(f"{k:>9} {'%peak':>5} {'(found)':>9} " for k in hills) + f"{'torch':>9}  policy schedule")

    def pct(x) -> str:
        return f"{100 * x:4.0f}%" if x else "    -"

    def own(r: dict, k: str) -> str:
        shown = _fmt(r.get(k)) if r.get(k) or r.get(f"{k}_status", "ok") == "ok" else f"{r[f'{k}_status']:>9}"
        return shown + ("<" if r.get(f"{k}_below_baseline") else " ")

    for r in rows:
        print(f"{os.path.basename(r['program'])[:34]:34} {own(r, 'policy')} {_fmt(r.get('policy_with_fallback'))} "
              f"{pct(r.get('policy_peak'))} " + "".join(f"{own(r, k)} " for k in others)
              + "".join(f"{_fmt(r.get(k))} {pct(r.get(k + '_peak'))} {_fmt(r.get(k + '_found'))} " for k in hills)
              + f"{_fmt(r.get('torch'))}  {r['policy_schedule'] or '(untransformed)'}")
    print(f"{'geometric mean':34} {_fmt(summary['policy'])}  {_fmt(summary.get('policy_with_fallback'))} {'':5} "
          + "".join(f"{_fmt(summary.get(k))}  " for k in others)
          + "".join(f"{_fmt(summary.get(k))} {'':5} {_fmt(summary.get(k + '_found'))} " for k in hills)
          + f"{_fmt(summary.get('torch'))}")
    print(f"speedups over the untransformed program; policy: its own schedule, +fallbk: what `optimize` delivers "
          f"(the untransformed program when the policy's schedule fails or is slower); policy and hill@N: their final "
          f"schedules measured again {rounds} times, interleaved (the fastest run); (found): the fastest of the search's "
          "N measurements; %peak: of the machine's roofline (FMA peak or bandwidth); <: below the baseline"
          + (f"; -: not measured, every policy schedules it alike ({summary['not_timed']} of {summary['programs']} programs; "
             "1.0 in the ratios)"
             if summary.get("not_timed") else ""))
    print(_below_line(summary))
    for k in others:
        print(f"{_short(k)} ({others[k]}): {_fmt(summary.get(k)).strip()}; " + _below_line(summary, k))
        if summary.get(f"{k}_over_policy"):
            spread = summary.get(f"{k}_over_policy_spread")
            print(f"{_short(k)} / policy: {summary[f'{k}_over_policy']:.3f} per program"
                  + (f" (x/ {spread:.3f})" if spread else "")
                  + f", more than 5% faster on {summary[f'{k}_ahead']}, slower on {summary[f'{k}_behind']}, "
                  f"the same schedule on {summary[f'{k}_same_schedule']}")
    for k in hills:
        for p in ["policy", *others]:
            if summary.get(f"{p}_over_{k}"):
                print(f"{_short(p)} / {k}: {summary[f'{p}_over_{k}']:.2f}" + (
                    f" ({k}'s candidates: {summary.get(f'{k}_measured', 0)} timed now, "
                    f"{summary.get(f'{k}_replayed', 0)} from the cache or repeats)" if p == "policy" else ""))


def _below_line(summary: dict, k: str = "policy") -> str:
    """The programs where policy `k`'s own schedule failed or is under 0.95x, and the fallback count."""
    from mlir_rl_tui.agent.fallback import BELOW_BASELINE

    first = k == "policy"
    below, failed_key = ("below_baseline", "policy_failed") if first else (f"{k}_below_baseline", f"{k}_failed")
    names = summary.get(f"{below}_programs") or []
    failed = f", {summary[failed_key]} failed" if summary.get(failed_key) else ""
    return (("policy's own schedule" if first else "its own schedule")
            + f" below {BELOW_BASELINE}x of the baseline (or failed): {summary[below]} "
            f"of {summary['programs']} programs{failed}" + (f" ({', '.join(names)})" if names else "")
            + f"; optimize's fallback fires on {summary['fallbacks' if first else f'{k}_fallbacks']}")


def _short(k: str) -> str:
    """A further policy's column: "policy_B" -> "B"."""
    return k.removeprefix("policy_")


def _fmt(x) -> str:
    return f"{x:8.2f}x" if x else "       -"


def plot(rows: list[dict], png: str | None) -> None:
    import plotext as plt

    names = [os.path.splitext(os.path.basename(r["program"]))[0][:16] for r in rows]
    seen = list(dict.fromkeys(k for r in rows for k in r))  # an untimed row (--only-differing) has no figures
    policies = ["policy", *(k for k in seen if k.startswith("policy_") and k[7:].isupper())]
    keys = [*policies, *sorted((k for k in seen if k.startswith("hill@") and "_" not in k), key=lambda k: int(k[5:])),
            "torch"]
    series = [(k, [r.get(k) or 0.0 for r in rows]) for k in keys if any(r.get(k) for r in rows)]
    plt.clear_figure()
    if not sys.stdout.isatty():
        plt.theme("clear")  # no colour codes in files and pipes
    plt.multiple_bar(names, [s for _, s in series], labels=[_short(k) for k, _ in series])
    plt.title("speedup over the untransformed baseline")
    if png:
        plt.plotsize(120, 30)
        _png(names, series, png)  # matplotlib is there: checked before the measurements
        return
    plt.show()


def _png(names, series, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as mp
    import numpy as np

    fig, ax = mp.subplots(figsize=(max(6, len(names) * 0.8), 4))
    w = 0.8 / max(len(series), 1)
    for i, (k, s) in enumerate(series):
        ax.bar(np.arange(len(names)) + i * w, s, w, label=_short(k))
    ax.set_xticks(np.arange(len(names)) + 0.4 - w / 2, names, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("speedup")
    ax.legend()
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, format="png")
