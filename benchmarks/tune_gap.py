"""How much of a long tune a short one finds, per model, on this CPU.

For each model of a zoo file (benchmarks/model_zoo.py's form: a factory per name, `MODELS` their input shapes):
1. `mlir-rl-tui tune FILE.py:NAME --minutes SHORT` and `--minutes LONG`, each with a fresh tuning database, as a
   user runs them (a tune ends before its minutes once every workload's climb and restarts ended);
2. the three schedules on the imported model, paired in one burst each (Engine.compare): `tune`'s start (the
   policy's one pass) against the short tune's result, the start against the long one's, and the short
   against the long;
3. the share of the long tune's gain the short one found: (start - short) / (start - long), the times taken
   from the paired ratios start / short and start / long (no share when the long tune did not beat the start
   beyond the noise).

    .venv/bin/python benchmarks/tune_gap.py --zoo benchmarks/model_kinds.py [--short 3] [--long 30] [--only a,b]

Run it on an otherwise idle machine: it takes up to (SHORT + LONG + 2) minutes per model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import ZOO, load_zoo, paired, tune  # noqa: E402  (this folder's scripts)


def share(a: tuple[float, float, float] | None, b: tuple[float, float, float] | None) -> float | None:
    """(start - short) / (start - long) from a = start / short and b = start / long (paired ratios)."""
    if not a or not b or b[1] <= 1.0:  # the long tune not beyond the noise of its start
        return None
    return (1 - 1 / a[0]) / (1 - 1 / b[0])


def fmt(r: tuple[float, float, float] | None) -> str:
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" if r else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=ZOO, help="a file of models like benchmarks/model_zoo.py")
    ap.add_argument("--only", help="comma-separated model names (default: all of the zoo's MODELS)")
    ap.add_argument("--short", type=float, default=3.0, help="the short tune's minutes")
    ap.add_argument("--long", type=float, default=30.0, help="the long tune's minutes")
    ap.add_argument("--out", help="folder for the libraries and databases (default: a temporary one)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    from mlir_rl_tui.engine import load_file

    zoo = os.path.abspath(args.zoo)
    models = load_zoo(zoo).MODELS
    out = args.out or tempfile.mkdtemp(prefix="mlir-rl-tune-gap-")
    os.makedirs(out, exist_ok=True)
    rows = []
    for name in args.only.split(",") if args.only else list(models):
        runs = {}
        for kind, minutes in (("short", args.short), ("long", args.long)):
            db = os.path.join(out, f"{name}.{kind}.tuning.sqlite")
            if os.path.exists(db):
                os.remove(db)
            try:
                runs[kind] = tune(zoo, name, models[name], minutes, os.path.join(out, f"{name}.{kind}.so"), db)
            except RuntimeError as e:
                print(e, flush=True)
                break
        if len(runs) < 2:
            continue
        short, long_ = runs["short"][0], runs["long"][0]
        program = load_file(short["program"])
        start = short.get("start_schedule", "")
        a = paired(program, short["schedule"], start)
        b = paired(program, long_["schedule"], start)
        c = paired(program, long_["schedule"], short["schedule"])
        row = {"model": name, "start_ms": short["start_ms"], "short_ms": short["best_ms"], "long_ms": long_["best_ms"],
               "short_s": short["seconds"], "long_s": long_["seconds"],
               "short_measurements": short["measurements"], "long_measurements": long_["measurements"],
               "start_over_short": a, "start_over_long": b, "short_over_long": c, "share": share(a, b)}
        rows.append(row)
        print(f"{name}: start {row['start_ms']:.3f} ms; {args.short:g} min -> {row['short_ms']:.3f} ms "
              f"({row['short_s']:.0f} s, {fmt(a)} paired); {args.long:g} min -> {row['long_ms']:.3f} ms "
              f"({row['long_s']:.0f} s, {fmt(b)}); short / long {fmt(c)}", flush=True)
    print()
    print(f"| model | start ms | {args.short:g}-minute tune ms (s) | {args.long:g}-minute tune ms (s) | start / short, "
          "paired | start / long, paired | short / long, paired | share of the long tune's gain |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        s = f"{100 * r['share']:.0f}%" if r["share"] is not None else "(no gain beyond the noise)"
        print(f"| {r['model']} | {r['start_ms']:.3f} | {r['short_ms']:.3f} ({r['short_s']:.0f}) | "
              f"{r['long_ms']:.3f} ({r['long_s']:.0f}) | {fmt(r['start_over_short'])} | {fmt(r['start_over_long'])} | "
              f"{fmt(r['short_over_long'])} | {s} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not rows:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
