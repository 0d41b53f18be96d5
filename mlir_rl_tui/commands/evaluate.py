"""`mlir-rl-tui evaluate --programs ...`: agent.evaluate's protocol (policy vs hill climbing vs PyTorch eager),
shown as a table and a bar plot."""

from __future__ import annotations

import argparse
import os
import sys

from mlir_rl_tui.cli.engine import make_engine
from mlir_rl_tui.cli.evaluate_report import plot, table
from mlir_rl_tui.cli.options import PROGRAMS_HELP, PROGRAMS_METAVAR, add_json, add_runs, checkpoint, positive_int
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import output_file

#: Policies one evaluation measures side by side (each adds its schedules to every round).
MAX_POLICIES = 8


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--programs", nargs="+", required=True, metavar=PROGRAMS_METAVAR, help=PROGRAMS_HELP)
    p.add_argument("--split", choices=["train", "eval", "all"], default="eval",
                   help="split of a dataset manifest (default eval; all: every program)")
    p.add_argument("--policy", nargs="+", metavar="CHECKPOINT", type=checkpoint("policy checkpoint"),
                   help="policy checkpoint (default: the shipped one); several (--policy A.pt B.pt): each one's "
                        "schedules measured in the same rounds, B, C, ... compared with the first program by program")
    p.add_argument("--budget", type=positive_int, nargs="+", default=[50],
                   help="hill-climbing measurements per program; several (--budget 50 100): one column each")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch eager timings")
    p.add_argument("--no-search", action="store_true", help="skip hill climbing")
    p.add_argument("--only-differing", action="store_true",
                   help="with several --policy: a program they all schedule alike is not measured (it counts 1.0 in "
                        "their ratios; choosing between policies on a validation set then takes minutes, not hours)")
    add_json(p)
    p.add_argument("--png", help="also save the plot as a PNG here")
    add_runs(p)
    p.add_argument("--rounds", type=positive_int, default=3,
                   help="the final schedules of the policy and of the search are measured again this many times, "
                        "interleaved (A B A B); the fastest run is reported (noise only adds time)")
    p.add_argument("--rows", metavar="FILE",
                   help="keep each finished program's row in FILE (JSON lines) as it finishes; the same call again "
                        "measures only the programs FILE has no row for (an evaluation stopped midway loses one "
                        "program, not hours)")
    p.add_argument("--no-cache", action="store_true",
                   help="measure every search candidate again instead of taking it from the cache")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.agent.evaluate import RowsError, RowsFile, evaluation, settings
    from mlir_rl_tui.engine.corpus.programs import program_paths
    from mlir_rl_tui.progress import ProgressLine

    paths = program_paths(args.programs, None if args.split == "all" else args.split)
    if args.png:  # checked before hours of measuring
        if not args.png.lower().endswith(".png"):
            raise CliError(f"--png {args.png}: give a file name ending in .png")
        output_file(args.png, paths)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--png needs matplotlib (pip install matplotlib)") from None
    given = args.policy or [None]
    if len(given) > MAX_POLICIES:
        raise CliError(f"--policy takes at most {MAX_POLICIES} checkpoints, not {len(given)}")
    if args.only_differing and len(given) < 2:
        raise CliError("--only-differing compares several policies: give two or more to --policy")
    from mlir_rl_tui.agent.suggest import load_policy  # imports torch: not for --help

    pols = [load_policy(path, required=True) for path in given]
    budgets = [] if args.no_search else args.budget
    try:
        rows_file = RowsFile(args.rows, settings(pols, budgets, args.seed, args.rounds, not args.no_torch,
                                                 args.only_differing)) if args.rows else None
    except RowsError as e:
        raise CliError(str(e)) from None
    if rows_file is not None and rows_file.rows:
        print(f"evaluate: {sum(1 for p in paths if rows_file.get(p))} of {len(paths)} programs already in {args.rows}",
              file=sys.stderr)
    with ProgressLine() as line, make_engine(args) as eng:
        line.update(f"evaluate: 0/{len(paths)} programs")
        out = evaluation(eng, pols, paths, budgets, args.seed, args.rounds,
                         not args.no_torch, lambda i, n, row: line.update(
                             f"evaluate: {i}/{n} programs (last {os.path.basename(row['program'])})"), rows_file,
                         args.only_differing)
    rows = out["programs"]
    if args.png:
        plot(rows, args.png)
    if args.json:
        emit(out)
        return 0
    table(rows, out["gmean"], budgets, args.rounds,
          {k: v for k, v in out.items() if k.startswith("policy_") and k[7:].isupper()})
    plot(rows, None)
    return 0
