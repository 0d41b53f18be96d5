"""`mlir-rl-tui ensemble OUT A.pt B.pt ...`: several policies as one checkpoint that decides with all of them;
`mlir-rl-tui ensemble --member K OUT ENSEMBLE.pt`: one of them again, as a policy of its own."""

from __future__ import annotations

import argparse
import os

from mlir_rl_tui.cli.options import add_json, positive_int
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import output_file, replacing

DESCRIPTION = """Writes OUT, a policy checkpoint holding the policies A, B, ... (2 to 4, of one layout). It schedules
like one policy (optimize, evaluate, the app's suggestion): with --decode vote (the shipped policy's rule)
each member decides the transformation on its own distribution and the one more than half chose is taken,
with the tile sizes of the member whose vector the ensemble finds most probable, so a near-tie that one
cloning run broke one way and another run the other is decided by all of them. Each member adds about
3 ms to a decision. Training (train --init) starts from one policy, not from an ensemble: with --member K,
OUT is the K-th member (from 1) of the one ensemble given (e.g. of the shipped policy)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="OUT", help="where to write the ensemble's checkpoint (not one of the POLICY "
                                              "files; written once it loads, else left as it was)")
    p.add_argument("members", metavar="POLICY", nargs="+", help="policy checkpoints (2 to 4); with --member, "
                   "the one ensemble to take a member of")
    p.add_argument("--member", type=positive_int, metavar="K", help="write the K-th member (from 1) of the ensemble POLICY "
                   "as a policy checkpoint of its own")
    p.add_argument("--decode", choices=("grouped", "consensus", "vote"), default="vote",
                   help="how the ensemble decodes (agent/explain.py): 'grouped' takes each tile size as the most "
                   "probable of the mean of the members' distributions; 'consensus' takes the tile sizes of the "
                   "member whose vector the ensemble finds most probable, never a mix no member proposed; 'vote' is "
                   "'consensus' with the transformation more than half of the members chose, each on its own "
                   "distribution (default: %(default)s)")
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.agent.policy import save_ensemble, save_member
    from mlir_rl_tui.agent.suggest import load_policy

    for m in args.members:
        if not os.path.exists(m):
            raise CliError(f"{m}: no such policy checkpoint")
    output_file(args.out, args.members, regular=True)  # read back after writing: a file, not a device
    if args.member is not None:
        if len(args.members) != 1:
            raise CliError(f"--member takes one ensemble, not {len(args.members)} files")
        with replacing(args.out) as tmp:  # OUT is replaced only by a checkpoint that loads
            save_member(args.members[0], args.member, tmp)
            load_policy(tmp)
        if args.json:
            emit({"out": args.out, "member": args.member, "of": args.members[0]})
        else:
            print(f"{args.out}: member {args.member} of {args.members[0]}")
        return 0
    with replacing(args.out) as tmp:
        save_ensemble(args.members, tmp, args.decode)
        load_policy(tmp)  # the written file must load as the product loads it
    if args.json:
        emit({"out": args.out, "members": args.members, "decode": args.decode})
    else:
        print(f"{args.out}: an ensemble of {len(args.members)} policies (decode {args.decode})")
    return 0
