"""`mlir-rl-tui tune MODEL --minutes M -o OUT.so`: a whole model tuned within a wall-clock budget with the
tuning database (engine.tune.tuner), built into a library PyTorch code can call (mlir_rl_tui.torch.load)."""

from __future__ import annotations

import argparse
import contextlib
import os
import threading
import time

from mlir_rl_tui.commands.common import (
    CliError,
    build_checked,
    checkpoint,
    emit,
    input_shape,
    library_file,
    make_engine,
    open_tuning_db,
    output_file,
    positive,
)

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
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def import_model(args: argparse.Namespace) -> tuple[str, dict]:
    """The program to tune: MODEL itself, or MODEL imported from PyTorch (OUT.mlir); and what import said."""
    if ".py:" not in args.model:
        if args.input:
            raise CliError("--input is for a PyTorch module (FILE.py:NAME); a .mlir file has its shapes")
        from mlir_rl_tui.commands.common import program_arg

        return program_arg(args.model), {}
    try:
        from mlir_rl_tui.agent.torch_import import import_module, parse_passes
    except ImportError as e:
        raise CliError(f"importing from PyTorch needs torch and torch-mlir: pip install 'mlir-rl-tui[import]' "
                       f"({e})") from None
    out = os.path.splitext(args.output)[0] + ".mlir"
    info = import_module(args.model, args.input, staged(out), passes=parse_passes("all"))
    return staged(out), info


def staged(out: str) -> str:
    """Where `tune` imports OUT.mlir (and its reference) while it works: beside it, taking OUT.mlir's place
    only with the library, so a tune that fails or is killed leaves the OUT.mlir that was there."""
    folder, name = os.path.split(out)
    return os.path.join(folder, f".{name}.{os.getpid()}.tuning.mlir")


def publish(staging: str, out: str) -> None:
    """The imported program and its reference take OUT.mlir's place, the reference first (it names its
    program's sha256: a reader never takes a new reference for the old program)."""
    os.replace(staging + ".torch.npz", out + ".torch.npz")
    os.replace(staging, out)


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.progress import ProgressLine

    model_file = args.model.rsplit(":", 1)[0] if ".py:" in args.model else args.model
    library_file(args.output, [model_file])  # before the minutes of tuning; and the imported program beside it
    imported = ".py:" in args.model
    final = os.path.splitext(args.output)[0] + ".mlir" if imported else args.model
    if imported:
        output_file(final, [model_file, args.output])
    db = open_tuning_db(args.db)
    with ProgressLine() as line:
        line.update(f"tune: importing {args.model}" if imported else f"tune: loading {args.model}")
        path, info = import_model(args)
        try:
            r, desc, checked, interrupted = _tune(args, db, line, path, info)
            if imported:
                publish(path, final)  # with the library: both or neither are the new ones
        finally:
            if imported:  # a staged import not published (a failure, Ctrl-C at import): nothing left of it
                for f in (path + ".torch.npz", path):
                    with contextlib.suppress(OSError):
                        os.remove(f)
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


def progress_text(t) -> str:
    best = t.best
    n = len(t.workloads)
    parts = [f"tune: {t.done}/{n} workloads"]
    if best is not None and best.time_ms:
        parts.append(f"model {best.time_ms:.3f} ms")
        if t.start_m is not None and t.start_m.time_ms:
            parts.append(f"start {t.start_m.time_ms:.3f}")
        if best.baseline_ms:
            parts.append(f"untransformed {best.baseline_ms:.3f}")
    from mlir_rl_tui.engine.units import duration

    left = max(0.0, t.deadline - time.monotonic())
    parts.append(f"{duration(left)} left")
    return ", ".join(parts) + f" ({t.stage})"


def report(r, out: str, interrupted: bool) -> str:
    lines = [f"{out}: {len(r.workloads)} distinct workloads in {sum(len(w.ops) for w in r.workloads)} ops; "
             f"{r.best.time_ms:.3f} ms (start {r.start.time_ms:.3f} ms, untransformed {r.baseline.time_ms:.3f} ms, "
             f"{r.best.speedup:.2f}x) after {r.measurements} measurements in {r.seconds:.0f} s"
             + (" (interrupted)" if interrupted else "")]
    if not r.searched:
        lines.append("every workload was tuned before (the tuning database): no search")
    cut = sum(w.state in ("cut", "unreached") for w in r.workloads)
    if cut:
        lines.append(f"{cut} workloads were cut short or not reached before the deadline: they keep what they have "
                     "in later runs; `--continue` searches them further")
    lines.append(f"{'workload':44} {'ops':>4} {'ms':>8} {'start':>9} {'tries':>6} {'paired':>6} {'kept':>5} "
                 f"{'s':>5}  state")
    for w in sorted(r.workloads, key=lambda w: -w.ms):
        lines.append(f"{w.label[:44]:44} {len(w.ops):>4} {w.ms:>8.3f} {w.start:>9} {w.measurements:>6} {w.compared:>6} "
                     f"{w.kept:>5} {w.seconds:>5.0f}  {w.state}" + (" (alone)" if w.alone else "")
                     + (f", {w.restarts} restarts" if w.restarts else ""))
    lines.append(f"schedule: {r.schedule or '(none)'}")
    lines.append(f"from PyTorch: import mlir_rl_tui.torch; model = mlir_rl_tui.torch.load({out!r})")
    return "\n".join(lines)
