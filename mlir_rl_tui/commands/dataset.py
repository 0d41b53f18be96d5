"""`mlir-rl-tui dataset generate --out DIR --n N`: programs in the style of the paper's data set (engine.dataset)."""

from __future__ import annotations

import argparse
import time

from mlir_rl_tui.commands.common import CliError, emit, make_engine


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="dataset_command", metavar="ACTION")
    g = sub.add_parser("generate", help="write N programs and manifest.json (paper Sec. VI-A)")
    g.add_argument("--out", required=True, help="output folder")
    g.add_argument("--n", type=int, default=50, help="number of programs (default 50)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--eval-fraction", type=float, default=0.2, help="share of programs in the eval split")
    g.add_argument("--no-baseline", action="store_true", help="do not measure baselines (faster; no times)")
    g.add_argument("--runs", type=int, default=5, help="timed runs per baseline (median reported)")
    g.add_argument("--json", action="store_true", help="print the manifest as one JSON object")
    p.set_defaults(usage_help=p.print_help)  # `mlir-rl-tui dataset` alone: its help, status 2


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine import dataset
    from mlir_rl_tui.progress import ProgressLine

    if args.dataset_command != "generate":
        args.usage_help()
        return 2
    if not 0 <= args.eval_fraction <= 1:
        raise CliError(f"--eval-fraction must be between 0 and 1, not {args.eval_fraction}")
    start = time.monotonic()
    eng = None if args.no_baseline else make_engine(args)
    try:
        with ProgressLine() as line:
            man = dataset.generate(args.out, args.n, args.seed, engine=eng, eval_fraction=args.eval_fraction,
                                   on_progress=lambda i, n, name: line.update(f"dataset: {i}/{n} {name}"))
    finally:
        if eng is not None:
            eng.close()
    if args.json:
        emit(man)
        return 0
    kinds = {k: sum(1 for e in man["programs"] if e["kind"] == k) for k in ("single", "sequence")}
    print(f"{args.out}: {len(man['programs'])} programs ({kinds['single']} single ops, {kinds['sequence']} "
          f"sequences), {len(man['train'])} train / {len(man['eval'])} eval, manifest.json, "
          f"{time.monotonic() - start:.1f} s")
    return 0
