"""`mlir-rl-tui convert-checkpoint OLD NEW`: a checkpoint of an older mlir-rl-tui in the current format."""

from __future__ import annotations

import argparse
import os

from mlir_rl_tui.cli.options import add_json
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import output_file, replacing

DESCRIPTION = """Converts a policy checkpoint or a PPO resume state (last.pt) written by an older mlir-rl-tui,
whose limits and metadata were pickled Python objects, to the current format: tensors plus JSON, which
mlir-rl-tui reads without unpickling anything. This command does unpickle OLD, with torch's weights-only
unpickler (tensors, numbers, strings, containers, numpy values): a file naming any other Python object is
refused, not run. Convert only files you trust all the same: the weights decide what the policy suggests."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", metavar="OLD", help="checkpoint in the older format (a file you trust)")
    p.add_argument("new", metavar="NEW", help="where to write the converted checkpoint (written once it converted "
                                              "and loads; a failed conversion leaves NEW as it was)")
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.agent.checkpoint import convert

    if not os.path.exists(args.old):
        raise CliError(f"{args.old}: no such checkpoint")
    output_file(args.new, [args.old], regular=True)  # read back after writing: a file, not a device
    with replacing(args.new) as tmp:  # NEW is replaced only by a checkpoint that converted and loads
        kind = convert(args.old, tmp)
        if kind == "policy":
            from mlir_rl_tui.agent.policy import load
            from mlir_rl_tui.engine.errors import EngineError

            try:
                load(tmp)  # the converted policy must load like any other
            except EngineError as e:  # its cause is in OLD: name it
                raise CliError(str(e).replace(tmp, args.old)) from None
    if args.json:
        emit({"old": args.old, "new": args.new, "kind": kind})
    else:
        print(f"{args.new}: {kind} checkpoint in the current format (tensors + JSON)")
    return 0
