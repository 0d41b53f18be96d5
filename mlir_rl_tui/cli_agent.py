"""`mlir-rl-tui optimize | train | evaluate`: the trained policy from the command line."""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from mlir_rl_tui.cli import CliError, emit, make_engine


def _policy(path: str | None):
    from agent.suggest import load_policy

    pol = load_policy(path)
    if pol is None:
        raise CliError("no shipped policy (agent/checkpoints/default.pt); train one with `mlir-rl-tui train` "
                       "and pass --policy")
    return pol


def _gmean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


# ------------------------------------------------------------------------------------------------
def _add_optimize(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("file")
    p.add_argument("--policy", help="policy checkpoint (default: the shipped one)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--runs", type=int, default=5, help="timed runs (median reported)")
    p.add_argument("--no-cache", action="store_true", help="measure even if the cache has an answer")
    p.add_argument("--no-fallback", action="store_true",
                   help="report the policy's schedule even when it fails or is slower than the baseline")

    def run(args: argparse.Namespace) -> int:
        from agent.suggest import to_measure
        from engine import Schedule, Session, load_file

        prog = load_file(args.file)
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
def torch_eager_ms(prog, warmups: int = 10, runs: int = 11, threads: int | None = None) -> float | None:
    """PyTorch eager time of the program when it is one op PyTorch has (paper protocol: 10 warm-ups,
    median of 11); None otherwise."""
    import torch
    import torch.nn.functional as F

    names = [o.name for o in prog.ops if o.name != "linalg.fill"]
    if len(names) != 1:
        return None
    name, shapes = names[0], [a.shape for a in prog.args]
    torch.set_num_threads(threads or os.cpu_count() or 1)
    g = torch.Generator().manual_seed(0)
    x = [torch.randn(*s, generator=g) for s in shapes]
    strides = re.findall(r"strides = dense<(\d+)>", prog.text)
    stride = int(strides[0]) if strides else 1
    out_shape = prog.results[0].shape
    if name == "linalg.matmul" and len(x) == 2:
        def fn():
            return torch.mm(x[0], x[1])
    elif name == "linalg.add" and len(x) == 2:
        def fn():
            return torch.add(x[0], x[1])
    elif name == "linalg.generic" and len(x) == 1 and "arith.maximumf" in prog.text and len(prog.ops) == 1:
        def fn():
            return torch.relu(x[0])
    elif name == "linalg.conv_2d_nhwc_hwcf" and len(x) == 2:
        inp, w = x[0].permute(0, 3, 1, 2).contiguous(), x[1].permute(3, 2, 0, 1).contiguous()

        def fn():
            return F.conv2d(inp, w, stride=stride)
    elif name == "linalg.pooling_nhwc_max" and len(x) == 1:
        inp = x[0].permute(0, 3, 1, 2).contiguous()
        kh = (x[0].shape[1] - (out_shape[1] - 1) * stride)

        def fn():
            return F.max_pool2d(inp, kh, stride)
    else:
        return None
    with torch.no_grad():
        for _ in range(warmups):
            fn()
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


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
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median)")
    p.add_argument("--no-cache", action="store_true",
                   help="measure everything again (baselines, the policy, every hill-climbing candidate) without "
                        "reading or writing the cache, e.g. to compare both on a quiet machine in one run")

    def run(args: argparse.Namespace) -> int:
        from agent.data import program_paths
        from agent.expert import search_best
        from agent.suggest import set_inference_threads, to_measure
        from engine import Session, load_file

        paths = program_paths(args.programs, args.split)
        pol = _policy(args.policy)
        set_inference_threads(1)  # the cores are for the kernels being timed
        rows: list[dict] = []
        with make_engine(args) as eng:
            def one(path: str) -> dict:
                prog = load_file(path)
                sess = pol.schedule(Session(prog, openmp=eng.openmp))
                # the final schedules of the policy and of the search are measured the same way: once, fresh
                m = eng.measure(prog, to_measure(sess.schedule), use_cache=False)
                row = {"program": path, "policy_schedule": m.schedule, "policy": m.speedup if m.ok else None,
                       "policy_status": m.status, "baseline_ms": m.baseline_ms}
                if not args.no_search:
                    s, hm = search_best(eng, prog, args.budget, args.seed)
                    # The search keeps the fastest of its `budget` noisy measurements, which overstates
                    # its schedule (winner's curse); `hill` is that schedule measured again, once, like the
                    # policy's; `hill_found` is the value the search saw.
                    again = eng.measure(prog, s, use_cache=False) if str(s) else hm
                    row.update(hill=again.speedup if again.ok else None, hill_schedule=str(s),
                               hill_found=hm.speedup if hm.ok else None)
                return row

            n = len(paths)
            with ThreadPoolExecutor(2) as ex:
                for i, row in enumerate(ex.map(one, paths)):
                    rows.append(row)
                    if not args.json:
                        sys.stderr.write(f"\r\033[K{i + 1}/{n} {os.path.basename(row['program'])}")
        if not args.json:
            sys.stderr.write("\r\033[K")
        threads = os.cpu_count() or 1
        if not args.no_torch:
            for row in rows:
                t = torch_eager_ms(load_file(row["program"]), threads=threads)
                row["torch_ms"] = t
                row["torch"] = (row["baseline_ms"] / t) if (t and row["baseline_ms"]) else None
        summary = {"policy": _gmean([r["policy"] for r in rows])}
        if not args.no_search:
            summary["hill"] = _gmean([r.get("hill") for r in rows])
            summary["hill_found"] = _gmean([r.get("hill_found") for r in rows])
            if summary["policy"] and summary["hill"]:
                summary["policy_over_hill"] = summary["policy"] / summary["hill"]
        if not args.no_torch:
            summary["torch"] = _gmean([r.get("torch") for r in rows])
        out = {"programs": rows, "gmean": summary, "hill_budget": None if args.no_search else args.budget,
               "policy": pol.path, "policy_ms": round(pol.ms_per_decision, 3), "threads": threads}
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
    print(f"{'program':40} {'policy':>9} {'hill@' + str(args.budget):>9} {'(found)':>9} {'torch':>9}  "
          "policy schedule")
    for r in rows:
        print(f"{os.path.basename(r['program'])[:40]:40} {_fmt(r['policy'])} {_fmt(r.get('hill'))} "
              f"{_fmt(r.get('hill_found'))} {_fmt(r.get('torch'))}  {r['policy_schedule'] or '(untransformed)'}")
    print(f"{'geometric mean':40} {_fmt(summary['policy'])} {_fmt(summary.get('hill'))} "
          f"{_fmt(summary.get('hill_found'))} {_fmt(summary.get('torch'))}")
    print("hill@N: the search's best schedule measured again once, like the policy's; (found): the fastest "
          "of its N measurements during the search")
    if summary.get("policy_over_hill"):
        print(f"policy / hill climbing: {summary['policy_over_hill']:.2f}")


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


COMMANDS = {
    "optimize": ("the policy's schedule in one pass, measured", _add_optimize),
    "train": ("train the policy with PPO (optionally behaviour cloning on traces first)", _add_train),
    "evaluate": ("policy vs hill climbing vs PyTorch eager on a set of programs", _add_evaluate),
}

