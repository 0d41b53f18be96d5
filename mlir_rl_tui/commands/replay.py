"""`mlir-rl-tui replay TRACE`: re-apply and re-measure the schedule of every episode of a trace."""

from __future__ import annotations

import argparse
import os

from mlir_rl_tui.cli.engine import make_engine
from mlir_rl_tui.cli.options import add_entry, add_json, add_runs
from mlir_rl_tui.cli.output import CliError, emit, fmt_speedup


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="JSONL trace written by search, the env or the app")
    add_entry(p)
    add_json(p)
    add_runs(p, 5, "many schedules")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine.rl.trace import read_trace
    from mlir_rl_tui.engine.schedule.state import check_schedule
    from mlir_rl_tui.progress import ProgressLine

    try:
        tr = read_trace(args.trace)
    except OSError as e:
        raise CliError(f"cannot read {args.trace}: {e.strerror}") from None
    episodes = tr.episodes()
    if not episodes and tr.bad_lines:  # lines, none of them a record: another kind of file
        raise CliError(f"{args.trace}: not a trace (no line of it is a trace record)")
    if not episodes:
        raise CliError(f"{args.trace}: no whole trace record" + (" (truncated)" if tr.truncated else " (empty)"))
    rows = []
    with ProgressLine() as line, make_engine(args) as eng:
        for i, ep in enumerate(episodes):
            prog = _resolve_program(ep, args.trace, args.entry)
            sched = ep.schedule
            check_schedule(prog, sched, eng.limits, eng.openmp)  # ScheduleError (one line) if the trace is not legal
            line.update(f"replay: episode {i + 1}/{len(episodes)}: measuring {sched}")
            m = eng.measure(prog, sched, use_cache=False)
            rec = ep.measurement or {}
            rows.append({"program": ep.program, "schedule": str(sched), "steps": len(ep.records),
                         "complete": all(sched.actions(o.id) and sched.actions(o.id)[-1].terminal
                                         for o in prog.ops),
                         "recorded_status": rec.get("status"), "recorded_speedup": rec.get("speedup"),
                         "status": m.status, "speedup": m.speedup, "validated": m.validated,
                         **({"error": m.error} if m.error else {})})
    ok = all(r["status"] == "ok" for r in rows)
    if args.json:
        emit({"trace": args.trace, "records": len(tr.records), "truncated": tr.truncated,
              "bad_lines": tr.bad_lines, "episodes": rows})
        return 0 if ok else 1
    if tr.truncated:
        print(f"{args.trace}: truncated in the middle of a line; replaying its {len(tr.records)} whole records")
    if tr.bad_lines:
        print(f"{args.trace}: {tr.bad_lines} unreadable lines skipped")
    print(f"{'program':<36} {'recorded':>9} {'now':>9}  schedule")
    for r in rows:
        now = fmt_speedup(r["speedup"]) if r["status"] == "ok" else r["status"]
        rec = fmt_speedup(r["recorded_speedup"]) if r["recorded_status"] in ("ok", None) else r["recorded_status"]
        note = "" if r["complete"] else "  (incomplete episode)"
        print(f"{os.path.basename(r['program'])[:36]:<36} {rec:>9} {now:>9}  {r['schedule']}{note}")
    return 0 if ok else 1


def _resolve_program(ep, trace_path: str, entry: str | None = None):
    """The episode's program: its path (as recorded, then beside the trace), or the text it carries."""
    from mlir_rl_tui.engine import load, load_file

    text = ep.program_text
    if text is not None:
        prog = load(text, name=ep.program_sha256[:12], entry=entry)
    else:
        cands = [ep.program, os.path.join(os.path.dirname(os.path.abspath(trace_path)), ep.program)]
        found = next((c for c in cands if os.path.isfile(c)), None)
        if found is None:
            raise CliError(f"{trace_path}: program {ep.program} not found (run replay from the folder the "
                           "trace was recorded in)")
        prog = load_file(found, entry)
    if prog.sha256 != ep.program_sha256:
        if len(prog.functions) > 1:
            raise CliError(f"{trace_path}: {ep.program} changed since the trace was recorded, or the trace is of "
                           f"another function than @{prog.func_name} (sha256 differs); pass its --entry")
        raise CliError(f"{trace_path}: {ep.program} changed since the trace was recorded (sha256 differs)")
    return prog
