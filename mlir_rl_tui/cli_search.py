"""`search`, `replay` and `dataset` sub-commands (mlir_rl_tui.cli picks up COMMANDS)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from mlir_rl_tui.cli import CliError, add_entry, check_measurable, emit, load_program, make_engine
from mlir_rl_tui.progress import ProgressLine

_line: ProgressLine | None = None


def _status_line(text: str) -> None:
    """The command's progress line on stderr (mlir_rl_tui.progress: after a second, then rewritten in
    place on a terminal, a line every few seconds in a log)."""
    global _line
    if _line is None:
        _line = ProgressLine()
    _line.update(text)


def _clear_progress() -> None:
    global _line
    if _line is not None:
        _line.clear()
    _line = None


def _fmt_speedup(s) -> str:
    return f"{s:.2f}x" if isinstance(s, int | float) else "-"


# ------------------------------------------------------------------------------------------------
def _add_search(p: argparse.ArgumentParser) -> Callable:
    from engine.search import METHODS

    p.add_argument("file")
    add_entry(p)
    p.add_argument("--method", choices=list(METHODS), default="hill")
    p.add_argument("--budget", type=int, default=30, help="measurements the search may make (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--trace", help="append the best schedule as a trace episode to this JSONL file")
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median reported)")

    def run(args: argparse.Namespace) -> int:
        from engine.search import search

        if args.budget < 1:
            raise CliError(f"--budget must be at least 1, not {args.budget}")
        prog = load_program(args)
        check_measurable(prog, args.file)
        start = time.monotonic()

        def progress(r) -> None:
            _status_line(f"{args.method}: {r.evaluated} measured, {r.cache_hits} cache hits, budget "
                         f"{args.budget}, best {_fmt_speedup(r.best.speedup)} "
                         f"({time.monotonic() - start:.0f} s)")

        with make_engine(args) as eng:
            _status_line(f"{args.method}: measuring the baseline")
            try:
                r = search(eng, prog, args.method, args.budget, seed=args.seed, trace=args.trace,
                           on_progress=progress)
            finally:
                _clear_progress()
        if args.json:
            emit(r.to_json())
            return 0 if r.best.ok else 1
        m = r.best
        if not r.schedule.ops:
            print(f"{args.method}: nothing beat the baseline ({m.time_ms:.3f} ms)")
        else:
            print(f"{args.method}: {_fmt_speedup(m.speedup)} ({m.time_ms:.3f} ms, baseline {m.baseline_ms:.3f} ms), "
                  f"{'validated' if m.validated else m.status}")
            print(f"schedule: {m.schedule}")
        print(f"{r.evaluated} measured, {r.cache_hits} cache hits, {r.candidates} candidates, "
              f"stopped: {r.stopped}, {time.monotonic() - start:.1f} s"
              + (f"; trace appended to {args.trace}" if args.trace else ""))
        return 0 if m.ok else 1

    return run


# ------------------------------------------------------------------------------------------------
def _resolve_program(ep, trace_path: str, entry: str | None = None):
    """The episode's program: its path (as recorded, then beside the trace), or the text it carries."""
    from engine import load, load_file

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


def _add_replay(p: argparse.ArgumentParser) -> Callable:
    p.add_argument("trace", help="JSONL trace written by search, the env or the app")
    add_entry(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--runs", type=int, default=5, help="timed runs per measurement (median reported)")

    def run(args: argparse.Namespace) -> int:
        from engine.state import replay
        from engine.trace import read_trace

        try:
            tr = read_trace(args.trace)
        except OSError as e:
            raise CliError(f"cannot read {args.trace}: {e.strerror}") from None
        episodes = tr.episodes()
        if not episodes:
            raise CliError(f"{args.trace}: no whole trace record" + (" (truncated)" if tr.truncated else ""))
        rows = []
        with make_engine(args) as eng:
            for i, ep in enumerate(episodes):
                prog = _resolve_program(ep, args.trace, args.entry)
                sched = ep.schedule
                replay(prog, sched, eng.limits, eng.openmp)  # ScheduleError (one line) if the trace is not legal
                _status_line(f"replay: episode {i + 1}/{len(episodes)}: measuring {sched}")
                try:
                    m = eng.measure(prog, sched, use_cache=False)
                finally:
                    _clear_progress()
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
            now = _fmt_speedup(r["speedup"]) if r["status"] == "ok" else r["status"]
            rec = _fmt_speedup(r["recorded_speedup"]) if r["recorded_status"] in ("ok", None) else r["recorded_status"]
            note = "" if r["complete"] else "  (incomplete episode)"
            print(f"{os.path.basename(r['program'])[:36]:<36} {rec:>9} {now:>9}  {r['schedule']}{note}")
        return 0 if ok else 1

    return run


# ------------------------------------------------------------------------------------------------
def _add_dataset(p: argparse.ArgumentParser) -> Callable:
    sub = p.add_subparsers(dest="dataset_command", metavar="ACTION")
    g = sub.add_parser("generate", help="write N programs and manifest.json (paper Sec. VI-A)")
    g.add_argument("--out", required=True, help="output folder")
    g.add_argument("--n", type=int, default=50, help="number of programs (default 50)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--eval-fraction", type=float, default=0.2, help="share of programs in the eval split")
    g.add_argument("--no-baseline", action="store_true", help="do not measure baselines (faster; no times)")
    g.add_argument("--runs", type=int, default=5, help="timed runs per baseline (median reported)")
    g.add_argument("--json", action="store_true", help="print the manifest as one JSON object")

    def run(args: argparse.Namespace) -> int:
        from engine import dataset

        if args.dataset_command != "generate":
            p.print_help()
            return 2
        if not 0 <= args.eval_fraction <= 1:
            raise CliError(f"--eval-fraction must be between 0 and 1, not {args.eval_fraction}")
        start = time.monotonic()

        def progress(i: int, n: int, name: str) -> None:
            _status_line(f"dataset: {i}/{n} {name} ({time.monotonic() - start:.0f} s)")

        eng = None if args.no_baseline else make_engine(args)
        try:
            man = dataset.generate(args.out, args.n, args.seed, engine=eng, eval_fraction=args.eval_fraction,
                                   on_progress=progress)
        finally:
            _clear_progress()
            if eng is not None:
                eng.close()
        if args.json:
            emit(man)
            return 0
        kinds = {k: sum(1 for e in man["programs"] if e["kind"] == k) for k in ("single", "sequence")}
        print(f"{args.out}: {len(man['programs'])} programs ({kinds['single']} single ops, {kinds['sequence']} "
              f"sequences), {len(man['train'])} train / {len(man['eval'])} eval, manifest.json, "
              f"{time.monotonic() - start:.1f} s")
        return 0

    return run


COMMANDS = {
    "search": ("search for a fast schedule with a budget of measurements", _add_search),
    "replay": ("re-apply and re-measure the schedules of a trace", _add_replay),
    "dataset": ("generate a training data set of programs (dataset generate --out DIR --n N)", _add_dataset),
}
