"""`mlir-rl-tui build`: a scheduled program as a shared library with a C interface, callable from Python."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from mlir_rl_tui.cli import emit, make_engine


def _add_build(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("file")
    p.add_argument("--schedule", required=True, help='the schedule, e.g. "op0: TP(32,32,0) T(8,32,1) V; op1: NT"')
    p.add_argument("-o", "--output", required=True, help="the shared library to write (OUT.so; OUT.so.json beside it)")
    p.add_argument("--json", action="store_true", help="print the kernel's description as one JSON object")

    def run(args: argparse.Namespace) -> int:
        from engine import load_file, parse
        from engine.native import build_library

        prog = load_file(args.file)
        sched = parse(args.schedule)
        with make_engine(args) as eng:
            desc = build_library(eng, prog, sched, args.output)
        if args.json:
            emit({"library": args.output, **desc})
        else:
            print(f"{args.output}: {desc['symbol']} ({desc['runtime']}), schedule {desc['schedule'] or '(none)'}\n"
                  f"from Python: from mlir_rl_tui import runtime; kernel = runtime.load({args.output!r})")
        return 0

    return run


COMMANDS = {"build": ("a scheduled program as a shared library (C interface, callable from Python)", _add_build)}
