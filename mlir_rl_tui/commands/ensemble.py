"""`mlir-rl-tui ensemble OUT A.pt B.pt ...`: several policies as one checkpoint that decides with all of them."""

from __future__ import annotations

import argparse
import os

from mlir_rl_tui.commands.common import CliError, add_json, emit

DESCRIPTION = """Writes OUT, a policy checkpoint holding the policies A, B, ... (2 to 4, of one layout). It schedules
like one policy (optimize, evaluate, the app's suggestion, train --start-from): at each decision every
head's distribution is the mean of the members' (agent.policy.Ensemble), so a near-tie that one cloning
run broke one way and another run the other is decided by all of them. Each member adds about 3 ms to a
decision. Training (train --init, PPO) starts from one policy, not from an ensemble."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="OUT", help="where to write the ensemble's checkpoint")
    p.add_argument("members", metavar="POLICY", nargs="+", help="policy checkpoints (2 to 4)")
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.agent.policy import save_ensemble
    from mlir_rl_tui.agent.suggest import load_policy

    for m in args.members:
        if not os.path.exists(m):
            raise CliError(f"{m}: no such policy checkpoint")
    save_ensemble(args.members, args.out)
    load_policy(args.out)  # the written file must load as the product loads it
    if args.json:
        emit({"out": args.out, "members": args.members})
    else:
        print(f"{args.out}: an ensemble of {len(args.members)} policies")
    return 0
