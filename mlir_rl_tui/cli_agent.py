"""`mlir-rl-tui optimize | train | evaluate`: the trained policy from the command line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from mlir_rl_tui.cli import CliError, add_entry, check_measurable, emit, load_program, make_engine


def _policy(path: str | None):
    from agent.suggest import load_policy

    pol = load_policy(path)
    if pol is None:
        raise CliError("no shipped policy (agent/checkpoints/default.pt); train one with `mlir-rl-tui train` "
                       "and pass --policy")
    return pol


# ------------------------------------------------------------------------------------------------
def _add_optimize(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("file")
    add_entry(p)
    p.add_argument("--policy", help="policy checkpoint (default: the shipped one)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--runs", type=int, default=5, help="timed runs (median reported)")
    p.add_argument("--no-cache", action="store_true", help="measure even if the cache has an answer")
    p.add_argument("--no-fallback", action="store_true",
                   help="report the policy's schedule even when it fails or is slower than the baseline")

    def run(args: argparse.Namespace) -> int:
        from agent.suggest import to_measure
        from engine import Schedule, Session

        prog = load_program(args)
        check_measurable(prog, args.file)
        pol = _policy(args.policy)
        fallback = None
        with make_engine(args) as eng:
            sess = pol.schedule(Session(prog, openmp=eng.openmp))
            m = eng.measure(prog, to_measure(sess.schedule), use_cache=not args.no_cache)
            if not args.no_fallback and m.schedule and (not m.ok or (m.speedup or 0) < 1.0):
                # never hand back something broken or slower: keep the untransformed program, say why
                fallback = {"schedule": m.schedule, "status": m.status, "speedup": m.speedup, "error": m.error}
                m = eng.measure(prog, Schedule({}), use_cache=not args.no_cache)
        out = {**m.to_json(), "policy_ms": round(pol.ms_per_decision, 3), "decisions": len(pol.decision_ms)}
        if fallback:
            out["fallback"] = fallback
        if args.json:
            emit(out)
            return 0 if m.ok else 1
        if fallback:
            how = f"{fallback['speedup']:.2f}x" if fallback["speedup"] else fallback["status"]
            print(f"the policy's schedule ({fallback['schedule']}) gave {how}: kept the untransformed program")
        if m.ok:
            print(f"{m.schedule or '(no transformation)'}\n{m.status}: {m.time_ms:.3f} ms (baseline "
                  f"{m.baseline_ms:.3f} ms, speedup {m.speedup:.2f}x), validated; policy {out['policy_ms']:.2f} ms "
                  f"per decision x {out['decisions']}")
        else:
            print(f"{m.schedule}\n{m.status}: {m.error}")
        return 0 if m.ok else 1

    return run


# ------------------------------------------------------------------------------------------------
def _add_train(p: argparse.ArgumentParser) -> Callable:
    from agent import ppo

    ppo.add_arguments(p)
    p.add_argument("--bc", nargs="*", default=[], metavar="TRACE",
                   help="behaviour cloning on these traces first (pre-training), then PPO from the result")
    p.add_argument("--bc-epochs", type=int, default=100)

    def run(args: argparse.Namespace) -> int:
        from agent import bc
        from agent.data import load_programs
        from agent.policy import ActorCritic, load, save

        a = ppo.args_from(args)
        if args.bc:
            progs = load_programs(a.programs, split="train")
            examples = [e for t in args.bc for e in bc.examples_from_trace(t, progs)]
            model = load(a.init)[0] if a.init else ActorCritic()
            losses = bc.behaviour_cloning(model, examples, args.bc_epochs, seed=a.seed)
            os.makedirs(a.out, exist_ok=True)
            a.init = os.path.join(a.out, "bc.pt")
            save(model, a.init, {"trained_by": "bc", "traces": args.bc, "final_loss": losses[-1]})
            print(f"behaviour cloning: {len(examples)} decisions, loss {losses[0]:.3f} -> {losses[-1]:.3f}",
                  file=sys.stderr)
        path = ppo.train(a)
        print(path)
        return 0

    return run


# ------------------------------------------------------------------------------------------------
def _add_evaluate(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("--programs", nargs="+", required=True, help="folder, dataset manifest or .mlir files")
    p.add_argument("--split", default="eval", help="split of a dataset manifest (default eval)")
    p.add_argument("--policy", help="policy checkpoint (default: the shipped one)")
    p.add_argument("--budget", type=int, default=50, help="hill-climbing measurements per program")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch eager timings")
    p.add_argument("--no-search", action="store_true", help="skip hill climbing")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--png", help="also save the plot as a PNG here")
    p.add_argument("--runs", type=int, default=None, help="at least this many timing rounds per measurement")
    p.add_argument("--rounds", type=int, default=3,
                   help="the final schedules of the policy and of the search are measured again this many times, "
                        "interleaved (A B A B); the median is reported")
    p.add_argument("--no-cache", action="store_true",
                   help="measure every search candidate again instead of taking it from the cache")

    def run(args: argparse.Namespace) -> int:
        from agent.data import program_paths
        from agent.evaluate import evaluate
        from agent.suggest import set_inference_threads

        paths = program_paths(args.programs, args.split)
        pol = _policy(args.policy)
        set_inference_threads(1)  # the cores are for the kernels being timed

        def progress(i: int, n: int, row: dict) -> None:
            if not args.json:
                sys.stderr.write(f"\r\033[K{i}/{n} {os.path.basename(row['program'])}")

        with make_engine(args) as eng:
            rows, summary = evaluate(eng, pol, paths, None if args.no_search else args.budget, args.seed,
                                     args.rounds, not args.no_torch, progress)
        if not args.json:
            sys.stderr.write("\r\033[K")
        out = {"programs": rows, "gmean": summary, "hill_budget": None if args.no_search else args.budget,
               "policy": pol.path, "policy_ms": round(pol.ms_per_decision, 3),
               "threads": len(os.sched_getaffinity(0)), "rounds": args.rounds}
        if args.png:
            _plot(rows, args.png)
        if args.json:
            emit(out)
            return 0
        _table(rows, summary, args)
        _plot(rows, None)
        return 0

    return run


def _fmt(x) -> str:
    return f"{x:8.2f}x" if x else "       -"


def _table(rows: list[dict], summary: dict, args) -> None:
    print(f"{'program':34} {'policy':>9} {'%peak':>5} {'hill@' + str(args.budget):>9} {'%peak':>5} {'(found)':>9} "
          f"{'torch':>9}  policy schedule")

    def pct(x) -> str:
        return f"{100 * x:4.0f}%" if x else "    -"

    for r in rows:
        print(f"{os.path.basename(r['program'])[:34]:34} {_fmt(r['policy'])} {pct(r.get('policy_peak'))} "
              f"{_fmt(r.get('hill'))} {pct(r.get('hill_peak'))} {_fmt(r.get('hill_found'))} {_fmt(r.get('torch'))}  "
              f"{r['policy_schedule'] or '(untransformed)'}")
    print(f"{'geometric mean':34} {_fmt(summary['policy'])} {'':5} {_fmt(summary.get('hill'))} {'':5} "
          f"{_fmt(summary.get('hill_found'))} {_fmt(summary.get('torch'))}")
    print(f"speedups over the untransformed program; policy and hill@N: their final schedules measured again "
          f"{args.rounds} times, interleaved (median); (found): the fastest of the search's N measurements; %peak: "
          "of the machine's roofline (FMA peak or bandwidth)")
    if summary.get("policy_over_hill"):
        print(f"policy / hill climbing: {summary['policy_over_hill']:.2f}; programs below 0.95x with the policy: "
              f"{summary['below_baseline']}")


def _plot(rows: list[dict], png: str | None) -> None:
    import plotext as plt

    names = [os.path.splitext(os.path.basename(r["program"]))[0][:16] for r in rows]
    series = [(k, [r.get(k) or 0.0 for r in rows]) for k in ("policy", "hill", "torch") if any(r.get(k) for r in rows)]
    plt.clear_figure()
    if not sys.stdout.isatty():
        plt.theme("clear")  # no colour codes in files and pipes
    plt.multiple_bar(names, [s for _, s in series], labels=[k for k, _ in series])
    plt.title("speedup over the untransformed baseline")
    if png:
        plt.plotsize(120, 30)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            plt.save_fig(png if png.endswith((".txt", ".html")) else png + ".txt")
            raise CliError("--png needs matplotlib (pip install matplotlib); a text plot was saved instead") from None
        _png(names, series, png)
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
        ax.bar(np.arange(len(names)) + i * w, s, w, label=k)
    ax.set_xticks(np.arange(len(names)) + 0.4 - w / 2, names, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("speedup")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


# ------------------------------------------------------------------------------------------------
CONVERT_HELP = ("convert a checkpoint of an older mlir-rl-tui (pickled metadata) to the current format "
                "(tensors + JSON); it unpickles OLD: only for files you trust")


def _add_convert(p: argparse.ArgumentParser) -> Callable:
    p.description = (
        "Convert a policy checkpoint or a PPO resume state (last.pt) written by an older mlir-rl-tui, whose "
        "limits and metadata were pickled Python objects, to the current format: tensors plus JSON, which "
        "mlir-rl-tui reads without unpickling anything. This command does unpickle OLD, with torch's "
        "weights-only unpickler (tensors, numbers, strings, containers, numpy values): a file naming any other "
        "Python object is refused, not run. Convert only files you trust all the same: the weights decide "
        "what the policy suggests.")
    p.add_argument("old", metavar="OLD", help="checkpoint in the older format (a file you trust)")
    p.add_argument("new", metavar="NEW", help="where to write the converted checkpoint")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    def run(args: argparse.Namespace) -> int:
        from agent.checkpoint import convert

        if not os.path.exists(args.old):
            raise CliError(f"{args.old}: no such checkpoint")
        kind = convert(args.old, args.new)
        if kind == "policy":
            from agent.policy import load

            load(args.new)  # the converted policy must load like any other
        if args.json:
            emit({"old": args.old, "new": args.new, "kind": kind})
        else:
            print(f"{args.new}: {kind} checkpoint in the current format (tensors + JSON)")
        return 0

    return run


COMMANDS = {
    "convert-checkpoint": (CONVERT_HELP, _add_convert),
    "optimize": ("the policy's schedule in one pass, measured", _add_optimize),
    "train": ("train the policy with PPO (optionally behaviour cloning on traces first)", _add_train),
    "evaluate": ("policy vs hill climbing vs PyTorch eager on a set of programs", _add_evaluate),
}

