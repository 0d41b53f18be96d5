"""Two (or more) policies' one-pass schedules on the same programs, measured interleaved: which one to ship.

    .venv/bin/python benchmarks/policy_ab.py --a A.pt --b B.pt [C.pt ...] --programs DIR... [--rounds 3] [--json F]

For choosing between training recipes on programs neither policy trained on (a validation set, e.g. model
blocks drawn with a seed no recipe used: `python -m mlir_rl_tui.agent.block_programs OUT 44 2`), so that the
evaluation programs of `mlir-rl-tui evaluate` stay unseen by every choice. Per program each policy schedules
in one pass (no measurement), then the distinct schedules are measured fresh, A B A B ... for --rounds
rounds and more while one's runs are split (agent.remeasure), each a speedup over the untransformed
program's time in that sitting (pooled); a policy's figure is its fastest run (agent.remeasure.figure). Prints one line per program whose
schedules differ and the geometric means, their ratio B / A with its spread over programs, and the
programs where each is under 0.95x of the baseline; and how many timings the engine flagged as contended
or far (engine.contention) after its retries, per program and in all: a sitting's absolute figures are
only as good as its cores were.
With several --b checkpoints (named B, C, D, ... in that order) all are measured in the same rounds and
each is compared with A. Timing-dependent: run with nothing else on the machine.
`--rows FILE` keeps each finished program's row (JSON lines after a header of the policies' sha256 and the
rounds) and the same call again measures only the rest: a validation over 155 programs takes hours on a slow
machine, and a stopped one then loses at most the program in flight.
`--only-differing` times only the programs the policies schedule differently: one all of them schedule alike
would score exactly 1.0 in every ratio (the same runs count for each) and cannot be newly under 0.95x, so it
counts 1.0 in the ratios untimed and is left out of the absolute gmeans (`not_timed` counts them). A validation
where most schedules agree then takes minutes instead of an hour.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, help="policy checkpoint A")
    p.add_argument("--b", nargs="+", required=True, help="policy checkpoint B (more: C, D, ... each against A)")
    p.add_argument("--programs", nargs="+", required=True, help="data set folders, folders or .mlir files")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the rows and the summary here")
    p.add_argument("--rows", help="keep finished rows here; the same call again measures only the rest")
    p.add_argument("--only-differing", action="store_true",
                   help="time only programs the policies schedule differently (the rest count 1.0 in the ratios)")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from mlir_rl_tui.agent.evaluate import RowsError, RowsFile, file_sha256, gmean
    from mlir_rl_tui.agent.suggest import load_policy, set_inference_threads, to_measure
    from mlir_rl_tui.commands.dataset import program_paths
    from mlir_rl_tui.engine import Engine, Session, load_file
    from mlir_rl_tui.engine.remeasure import figure, remeasure, speedups

    set_inference_threads(1)
    names = {"A": a.a, **{chr(ord("B") + i): path for i, path in enumerate(a.b)}}
    policies = {k: load_policy(path) for k, path in names.items()}

    class ABRows(RowsFile):
        FORMAT = "mlir-rl-tui policy_ab rows 1"
        COMMAND = "benchmarks/policy_ab.py --rows"

    try:
        kept = ABRows(a.rows, {"policies": {k: file_sha256(path) for k, path in names.items()},
                               "rounds": a.rounds, **({"only_differing": True} if a.only_differing else {})}
                      ) if a.rows else None
    except RowsError as e:
        print(f"policy_ab: error: {e}", file=sys.stderr)
        return 2
    rows = []
    with Engine() as eng:
        for path in program_paths(a.programs):
            if kept and (row := kept.get(path)):
                rows.append(row)
                continue
            prog = load_file(path)
            sched = {k: to_measure(pol.schedule(Session(prog, openmp=eng.openmp)).schedule)
                     for k, pol in policies.items()}
            distinct = list(dict.fromkeys(str(s) for s in sched.values()))
            row = {"program": path, "sha256": file_sha256(path), **{f"{k}_schedule": str(s) for k, s in sched.items()},
                   "timed": not (a.only_differing and len(distinct) == 1)}
            if row["timed"]:
                measured = remeasure(eng, prog, list(sched.values()), a.rounds)  # more rounds while split
                runs = speedups(measured)
                row |= {**{k: figure(runs[str(s)]) for k, s in sched.items()},
                        # timings the engine flagged after its retries (engine.contention): other processes on
                        # the cores, or the host keeping them far apart; a sitting with many is not one to decide by
                        "contended": sum(m.contended for ms in measured.values() for m in ms),
                        "far": sum(m.far for ms in measured.values() for m in ms),
                        **{f"{k}_spread": [min(runs[str(s)]), max(runs[str(s)])] for k, s in sched.items()}}
            rows.append(row)
            if kept:
                kept.add(row)
            if len(distinct) > 1:
                others = "  ".join(f"{k} {row[k]:7.2f}x {k}/A {row[k] / row['A'] if row['A'] else float('inf'):5.2f}"
                                   for k in names if k != "A")
                flags = "".join(f"  {row[k]} {k}" for k in ("contended", "far") if row[k])
                print(f"{pathlib.Path(path).stem:48s} A {row['A']:7.2f}x  {others}{flags}", flush=True)
    timed = [r for r in rows if r.get("timed", True)]  # rows of older files have no "timed": all were timed
    summary = {"programs": len(rows), "not_timed": len(rows) - len(timed),
               **{k: gmean([r[k] for r in timed]) if timed else None for k in names},
               "failed": {k: sum(1 for r in timed if not r[k]) for k in names},
               "contended_measurements": sum(r["contended"] for r in timed),
               "far_measurements": sum(r["far"] for r in timed),
               "A_below_0.95": [pathlib.Path(r["program"]).stem for r in timed if r["A"] < 0.95]}
    for k in names:
        if k == "A":
            continue
        ratios = [r[k] / r["A"] for r in timed if r["A"] and r[k]] + [1.0] * (len(rows) - len(timed))
        logs = [math.log(x) for x in ratios]
        summary |= {f"{k}_over_A": math.exp(statistics.mean(logs)) if logs else None,
                    f"{k}_over_A_spread": math.exp(statistics.stdev(logs)) if len(logs) > 1 else None,
                    f"{k}_same_schedule": sum(1 for r in rows if r["A_schedule"] == r[f"{k}_schedule"]),
                    f"{k}_better": sum(1 for x in ratios if x > 1.05),
                    f"A_better_than_{k}": sum(1 for x in ratios if x < 1 / 1.05),
                    f"{k}_below_0.95": [pathlib.Path(r["program"]).stem for r in timed if r[k] < 0.95]}
    print(json.dumps(summary, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"policies": names, "rounds": a.rounds, "rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
