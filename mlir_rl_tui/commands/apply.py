"""`mlir-rl-tui apply FILE --schedule TEXT`: apply a schedule, measure it against the baseline, report."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.engine import check_measurable, load_program, make_engine
from mlir_rl_tui.cli.options import Deadline, add_entry, add_json, add_max_seconds, add_program, add_runs
from mlir_rl_tui.cli.output import CliError, emit, fail, note
from mlir_rl_tui.cli.paths import output_file, same_file, write_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_program(p)
    add_entry(p)
    p.add_argument("--schedule", default="", help="e.g. 'op0: TP(64,64,0) T(8,32,1) V' ('' = baseline)")
    add_json(p)
    p.add_argument("-o", "--output", help="write the transformed module (before lowering) here (when the "
                                          "measurement is ok; a failed one leaves the file as it was)")
    p.add_argument("--emit-transform", help="write payload + transform script that mlir-opt --transform-interpreter "
                                            "replays (when the measurement is ok, like -o)")
    add_runs(p)
    p.add_argument("--no-cache", action="store_true", help="measure even if the cache has an answer")
    add_max_seconds(p)
    p.add_argument("--per-op", action="store_true", help="also each op's share of the time (profiled with markers "
                                                          "between the ops; fused producers count in their consumer)")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.schedule.state import check_schedule
    from mlir_rl_tui.progress import ProgressLine

    # the files to write (not the program, not each other), checked now and written once the measurement is ok
    for path in (args.output, args.emit_transform):
        if path:
            output_file(path, [args.file])
    if args.output and args.emit_transform and same_file(args.output, args.emit_transform):
        raise CliError(f"-o and --emit-transform both name {args.output}; give each its own file")
    prog = load_program(args)
    sched = parse(args.schedule)
    check_schedule(prog, sched)  # one-line ScheduleError before any work
    check_measurable(prog, args.file, args.max_seconds)
    texts: dict[str, str] = {}
    if args.emit_transform:
        from mlir_rl_tui.engine.ir.export import replayable

        texts[args.emit_transform] = replayable(prog, sched)
    with ProgressLine() as line, make_engine(args) as eng, Deadline(args.max_seconds) as limit:
        if args.output:
            status, text = eng.transformed_ir(prog, sched)
            if status != "ok":
                line.clear()
                return fail(f"{status}: {text}", 1)
            texts[args.output] = text
        m = eng.measure(prog, sched, on_progress=line.phase("apply"), cancel=limit.cancel, deadline=limit.at)
        if m.status == "cancelled":
            doing = line.text
            line.clear()
            return limit.stopped(doing)
        groups = eng.per_op(prog, sched) if args.per_op and m.ok and not limit.cancel.is_set() else None
    if m.ok:
        for path, text in texts.items():
            write_text(path, text)
    elif texts:
        note(f"{' and '.join(texts)} not written: the measurement is not ok")
    if args.json:
        emit({**m.to_json(), **({"per_op": groups} if groups is not None else {})})
    elif m.ok:
        state = f" (machine {m.state})" if m.state and not m.cached else ""
        print(describe(m) + f", validated{' (cached)' if m.cached else ''}{state}")
        if m.stages_ms and not m.cached:
            print("stages: " + ", ".join(f"{k} {v:.1f} ms" for k, v in m.stages_ms.items()))
        if groups:
            names = {o.id: o.name.removeprefix("linalg.") for o in prog.ops}
            marked = sum(g["ms"] for g in groups)
            print(f"per op (share of the time; profiled runs with a marker between the ops take {marked:.3f} ms in "
                  f"all, the measurement without markers {m.time_ms:.3f} ms):")
            for g in sorted(groups, key=lambda g: -g["share"]):
                ops = " + ".join(f"{i} {names.get(i, '?')}" for i in g["ops"])
                fused = f"  (fused into {g['fused_into']}: timed there)" if g.get("fused_into") else ""
                print(f"  {100 * g['share']:5.1f}%  {g['ms']:8.4f} ms  {ops}{fused}")
    else:
        print(f"{m.status}: {m.error}")
    return 0 if m.ok else 1


def describe(m) -> str:
    """One line for an ok Measurement: time with its spread, speedup with its interval, roofline."""
    err = f" +-{100 * m.rel_error:.1f}%" if m.rel_error is not None else ""
    sp = f"{m.speedup:.2f}x"
    if m.speedup_ci:
        sp += f" ({m.speedup_ci[0]:.2f}-{m.speedup_ci[1]:.2f})"
    text = f"{m.status}: {m.time_ms:.3f} ms{err} (baseline {m.baseline_ms:.3f} ms), speedup {sp}"
    if m.gflops is not None:
        text += f", {m.gflops:.1f} GFLOP/s"
    if m.peak_fraction is not None:
        what = "FMA peak" if m.bound == "compute" else "bandwidth"
        text += f", {100 * m.peak_fraction:.0f}% of {what} ({m.runtime})"
    if m.handoff_us is not None:  # engine.measure.contention: what a parallel region's fork and join cost meanwhile
        text += f", hand-off {m.handoff_us:.2f} us"
    if m.contended:
        text += f"; CONTENDED: other processes used {m.foreign_cores:.1f} cores while it was timed (not cached)"
    if m.far:
        text += "; FAR: the host kept the cores far apart through every retry (the hand-off probe), not cached"
    if m.unsteady:
        text += ("; UNSTEADY: the state probe said the host slowed the cores through every retry (the interval "
                 "reaches down to what the steady machine may do), not cached")
    if m.cut_short:
        text += f"; timing cut short by --max-seconds ({m.runs} timed runs), not cached"
    return text
