"""`mlir-rl-tui inspect FILE`: the program as the agent sees it, without measuring anything."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.engine import load_program
from mlir_rl_tui.cli.options import add_entry, add_json, add_program
from mlir_rl_tui.cli.output import emit


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_program(p)
    add_entry(p)
    add_json(p)


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine import Session
    from mlir_rl_tui.engine.schedule.state import action_mask

    prog = load_program(args)
    sess = Session(prog)
    masks = {o.id: action_mask(sess.states[o.id], prog, sess.limits, sess.openmp) for o in prog.ops}
    if args.json:
        from mlir_rl_tui.engine.rl.features import features

        ops = [{"id": o.id, "name": o.name, "type": o.op_type, "location": o.location,
                "loops": [{"bound": lp.bound, "iterator": lp.iterator} for lp in o.loops],
                "producers": o.producers, "consumers": o.consumers, "fusion_producer": o.fusion_producer,
                "features": [float(x) for x in features(sess.states[o.id])], "mask": masks[o.id].to_json()}
               for o in prog.ops]
        emit({"program": args.file, "sha256": prog.sha256, "function": prog.func_name, "ops": ops})
        return 0
    print(f"{args.file}: @{prog.func_name}, {len(prog.ops)} linalg ops (traversal order: last consumer first)")
    for o in prog.ops:
        loops = " ".join(f"{lp.bound}{'r' if lp.iterator == 'reduction' else 'p'}" for lp in o.loops)
        links = []
        if o.producers:
            links.append("producers " + ",".join(o.producers))
        if o.consumers:
            links.append("consumers " + ",".join(o.consumers))
        print(f"  {o.id:>5}  {o.name} {o.shape_text}  loops [{loops}]  line {o.location}  {'; '.join(links)}")
        for k, c in masks[o.id].transformation.items():
            if not c.allowed:
                print(f"         {k:>2} masked: {c.reason}")
    return 0
