"""`mlir-rl-tui tune MODEL --minutes M -o OUT.so`: a whole model tuned within a wall-clock budget with the
tuning database (engine.tune.tuner), built into a library PyTorch code can call (mlir_rl_tui.torch.load)."""

from __future__ import annotations

import argparse
import threading

from mlir_rl_tui.cli.engine import make_engine, open_tuning_db
from mlir_rl_tui.cli.model import imported, model_program, program_file, source_file
from mlir_rl_tui.cli.options import add_ray, checkpoint, input_shape, positive
from mlir_rl_tui.cli.output import emit
from mlir_rl_tui.cli.paths import library_file, output_file
from mlir_rl_tui.cli.tune_report import progress_text, report

DESCRIPTION = """MODEL is a PyTorch module (FILE.py:NAME with --input for each input: imported like `mlir-rl-tui
import`, which RUNS FILE.py: only files you trust) or a .mlir file. Each op starts from the best known schedule of
its workload on this machine kind (the tuning database), the others from the policy's one pass; then the
workloads not tuned before are hill-climbed, the most time first, until the minutes are spent. Ctrl-C stops
the search and keeps the best schedule so far. The library is run and checked before it is written: against PyTorch's output saved at import, or, for a
.mlir file without one, against the untransformed program's output on the same inputs (the report's
"checked" says which)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="FILE.py:NAME (a PyTorch module) or a .mlir file")
    p.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]", type=input_shape,
                   help="(FILE.py:NAME) shape of each input, in order, e.g. 1x3x32x32")
    p.add_argument("--minutes", type=positive("minutes"), default=5.0, help="wall-clock budget (default 5)")
    p.add_argument("-o", "--output", required=True, help="the library to write (OUT.so, OUT.so.json beside it; "
                                                         "an imported model's program is OUT.mlir)")
    p.add_argument("--policy", type=checkpoint("policy checkpoint"),
                   help="policy checkpoint for the start (default: the shipped one)")
    p.add_argument("--no-policy", action="store_true", help="start the ops the database does not know untransformed")
    p.add_argument("--db", metavar="FILE", help="the tuning database (default: tuning.sqlite in the cache folder)")
    p.add_argument("--continue", dest="continue_cut", action="store_true",
                   help="search again the workloads an earlier run cut short, did not reach, or left as too small "
                        "(by default a workload an earlier run ended is not searched again)")
    p.add_argument("--seed", type=int, default=0)
    add_ray(p)
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.progress import ProgressLine

    # before the minutes of tuning; and the imported program beside it
    library_file(args.output, [source_file(args.model)])
    final = program_file(args.model, args.output)
    if imported(args.model):
        output_file(final, [source_file(args.model), args.output])
    db = open_tuning_db(args.db)
    with ProgressLine() as line:
        line.update(f"tune: importing {args.model}" if imported(args.model) else f"tune: loading {args.model}")
        with model_program(args.model, args.input, args.output) as (path, info):
            r, desc, checked, interrupted = _tune(args, db, line, path, info)
    out = {"library": args.output, "program": final, **r.to_json(), "interrupted": interrupted,
           "runtime": desc["runtime"], "checked": checked}
    if args.json:
        emit(out)
        return 0
    print(report(r, args.output, interrupted))
    return 0


def _tune(args: argparse.Namespace, db, line, path: str, info: dict):
    """Tune the program at `path` and build its checked library: (TuneResult, the library's description,
    what it was checked against, whether Ctrl-C stopped the search)."""
    from mlir_rl_tui.engine.ir.loader import load_file
    from mlir_rl_tui.engine.tune.tuner import Tuner
    from mlir_rl_tui.runtime import build_checked  # numpy: not for --help

    prog = load_file(path)
    interrupted = threading.Event()
    with make_engine(args) as eng:

        def start():  # the policy's one pass, for the ops the database does not cover
            if args.no_policy:
                return None
            line.update("tune: the policy's one pass")
            return policy_start(args, prog, eng)

        tuner = Tuner(eng, prog, db, args.minutes * 60, start, args.seed,
                      on_progress=lambda t: line.update(progress_text(t)), cancel=interrupted,
                      continue_cut=args.continue_cut)
        box: dict = {}

        def work() -> None:
            try:
                box["result"] = tuner.run()
            except BaseException as e:  # noqa: BLE001 - raised again in the command's thread
                box["error"] = e

        th = threading.Thread(target=work, daemon=True, name="tune")
        th.start()
        while th.is_alive():
            try:
                th.join(0.2)
            except KeyboardInterrupt:
                interrupted.set()
                line.update("tune: stopping (keeping the best schedule so far)")
        if "error" in box:
            raise box["error"]
        r = box["result"]
        line.update("tune: building the library")
        extra = {"model": {"spec": args.model, "inputs": info.get("inputs"), "forward": info.get("forward")},
                 "tuned": {"ms": r.best.time_ms, "baseline_ms": r.baseline.time_ms, "machine": eng.machine}}
        # checked against the reference before it takes OUT's place: a library that fails leaves OUT as it was
        desc, checked = build_checked(eng, prog, r.schedule, args.output, path, extra=extra)
    return r, desc, checked, interrupted.is_set()


def policy_start(args: argparse.Namespace, prog, eng):
    from mlir_rl_tui.agent.suggest import load_policy

    try:
        pol = load_policy(args.policy, required=True)
    except ImportError:
        return None  # no torch: the database and the search alone
    return pol.one_pass(prog, eng.openmp)
