"""`mlir-rl-tui lesson [NAME|FILE]`: guided lessons on loop transformations, run live in the app."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.paths import trace_file

DESCRIPTION = """Opens the app on a lesson: each step applies a schedule, measures it on this machine and
explains it; ] next step, [ back, l back to the lesson after trying your own steps. Without NAME, lists the
shipped lessons. A lesson is a small TOML file (docs/models.md, "Lessons")."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME|FILE", help="a shipped lesson (see the list) or a .toml file")
    p.add_argument("--record", type=trace_file, help="append a trace of the steps you take (not the lesson's own "
                                                       "jumps) to this JSONL file (its folder must exist)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui import lessons

    if not args.name:
        for name in lessons.shipped():
            les = lessons.load(name)
            print(f"{name.split('-', 1)[-1]:12} {les.title} ({len(les.steps)} steps)")
        return 0
    les = lessons.load(args.name)
    from mlir_rl_tui.app import run_app
    from mlir_rl_tui.engine import load_file

    return run_app(load_file(les.program), record=args.record, lesson=les)
