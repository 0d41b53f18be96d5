"""`mlir-rl-tui build FILE --schedule TEXT -o OUT.so`: a scheduled program as a callable kernel (engine.run.native)."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.engine import make_engine
from mlir_rl_tui.cli.options import add_program
from mlir_rl_tui.cli.output import emit
from mlir_rl_tui.cli.paths import library_file


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_program(p)
    p.add_argument("--schedule", required=True, help='the schedule, e.g. "op0: TP(32,32,0) T(8,32,1) V; op1: NT"')
    p.add_argument("-o", "--output", required=True, help="the shared library to write (OUT.so; OUT.so.json beside it)")
    p.add_argument("--json", action="store_true", help="print the kernel's description as one JSON object")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine import load_file, parse
    from mlir_rl_tui.runtime import build_checked  # numpy: not for --help

    library_file(args.output, [args.file])
    prog = load_file(args.file)
    sched = parse(args.schedule)
    with make_engine(args) as eng:
        desc, checked = build_checked(eng, prog, sched, args.output, args.file)
    if args.json:
        emit({"library": args.output, **desc, "checked": checked})
    else:
        print(f"{args.output}: {desc['symbol']} ({desc['runtime']}), schedule {desc['schedule'] or '(none)'}, "
              f"checked against {'PyTorch' if checked == 'PyTorch' else 'the untransformed program'}\n"
              f"from Python: from mlir_rl_tui import runtime; kernel = runtime.load({args.output!r})")
    return 0
