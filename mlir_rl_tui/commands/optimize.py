"""`mlir-rl-tui optimize FILE`: the policy schedules the program in one pass; the result is measured."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.engine import check_measurable, load_program, make_engine
from mlir_rl_tui.cli.options import Deadline, add_entry, add_json, add_max_seconds, add_program, add_runs, checkpoint
from mlir_rl_tui.cli.output import emit


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_program(p)
    add_entry(p)
    p.add_argument("--policy", type=checkpoint("policy checkpoint"), help="policy checkpoint (default: the shipped one)")
    add_json(p)
    add_runs(p, 5, "a one-pass answer")
    p.add_argument("--no-cache", action="store_true", help="measure even if the cache has an answer")
    add_max_seconds(p)
    p.add_argument("--no-fallback", action="store_true",
                   help="report the policy's schedule even when it fails or is slower than the baseline (by "
                        "default the untransformed program is kept then, and the output says so: \"fallback\" in "
                        "--json)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.agent.fallback import optimize
    from mlir_rl_tui.progress import ProgressLine

    prog = load_program(args)
    check_measurable(prog, args.file, args.max_seconds)
    from mlir_rl_tui.agent.suggest import load_policy  # imports torch: not for --help

    pol = load_policy(args.policy, required=True)
    with ProgressLine() as line, make_engine(args) as eng, Deadline(args.max_seconds) as limit:
        line.update("optimize: the policy schedules the program")
        answer = optimize(eng, pol, prog, fallback=not args.no_fallback, use_cache=not args.no_cache,
                          on_progress=line.phase("optimize"), cancel=limit.cancel, deadline=limit.at)
        m, fallback, below = answer.measurement, answer.fallback, answer.below
        if m.status == "cancelled":
            doing = line.text
            line.clear()
            return limit.stopped(doing)
    out = {**m.to_json(), "policy_ms": round(pol.ms_per_decision, 3), "decisions": len(pol.decision_ms),
           "fallback_fired": fallback is not None, "policy_below_baseline": below}
    if fallback:
        out["fallback"] = fallback
    if args.json:
        emit(out)
        return 0 if m.ok else 1
    if fallback:
        how = f"{fallback['speedup']:.2f}x" if fallback["speedup"] else fallback["status"]
        print(f"fallback: the policy's schedule ({fallback['schedule']}) gave {how}: kept the untransformed program "
              "(--no-fallback: report the policy's schedule anyway)")
    elif below:
        print(f"the policy's schedule is below the baseline (--no-fallback): {m.status}, "
              + (f"{m.speedup:.2f}x" if m.speedup else "no speedup"))
    if m.ok:
        print(f"{m.schedule or '(no transformation)'}\n{m.status}: {m.time_ms:.3f} ms (baseline "
              f"{m.baseline_ms:.3f} ms, speedup {m.speedup:.2f}x), validated; policy {out['policy_ms']:.2f} ms "
              f"per decision x {out['decisions']}")
    else:
        print(f"{m.schedule}\n{m.status}: {m.error}")
    return 0 if m.ok else 1
