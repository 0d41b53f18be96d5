"""Does the mask tell the truth? Random masked episodes, checked by really compiling (and running) them.

An episode is what a random masked agent does (engine.env): `action_space.sample(mask=info["action_mask"])`
until every op is finished, over the samples and the torch-mlir exports of tests/data/torch. Each
schedule is then transformed, lowered and JIT-compiled in a worker (`--compile-only`: no run, no timing,
`Engine.compile_only`), and every `--measure-every`-th one is fully measured (run, checked against the
untransformed program, timed briefly) to catch wrong results. A masked-legal schedule that ends in
transform-error or compile-error is a mask that lied.

    .venv/bin/python benchmarks/mask_fuzz.py --episodes 2000 --compile-only [--measure-every 20] [--shrink]

Prints the outcomes per program and the failure kinds (error text with numbers and SSA names folded),
each with its shortest example; `--shrink` reduces each kind's example to the fewest actions that still
fail the same way (the rule to put in the mask).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mlir_rl_tui.engine import Engine, Program, Schedule, ScheduleError, load_file, parse, to_text
from mlir_rl_tui.engine.config import MeasureConfig
from mlir_rl_tui.engine.mask import check_schedule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "samples", "*.mlir"))) + \
    sorted(glob.glob(os.path.join(ROOT, "tests", "data", "torch", "*.mlir")))
FAILURES = ("transform-error", "compile-error")
#: Statuses in table order; "illegal" is an action the env refused although the mask allowed it.
OUTCOMES = ("ok", "transform-error", "compile-error", "crash", "timeout", "wrong-result", "illegal")
#: A brief measurement: enough to run and check the result, not to time it well.
QUICK = MeasureConfig(runs=1, target_rel=1.0, budget_s=0.01, exclusive=False)


def program_name(program: Program) -> str:
    """samples/matmul.mlir -> matmul.mlir, tests/data/torch/mlp.mlir -> torch/mlp.mlir."""
    if program.path is None:
        return program.sha256[:12]
    rel = os.path.relpath(program.path, ROOT)
    return rel.removeprefix("samples/").removeprefix("tests/data/")


def random_episode(env, program: Program, seed: int) -> tuple[Schedule, str]:
    """The schedule a random masked agent builds on `program`, and the env's complaint ("" if none)."""
    env.action_space.seed(seed)
    _, info = env.reset(seed=seed, options={"program": program})
    while True:
        _, _, terminated, _, info = env.step(env.action_space.sample(mask=info["action_mask"]))
        if "invalid_action" in info:
            return parse(info["schedule"]), info["invalid_action"]
        if terminated:
            return env.session.schedule, ""


def failure_kind(error: str) -> str:
    """The error line with what varies between instances folded: numbers, SSA names, types, locations."""
    e = error.split("\n")[0]
    e = re.sub(r"^baseline: ", "", e)
    e = re.sub(r"%[\w#]+", "%v", e)
    e = re.sub(r"'[^']*'", "'..'", e)
    e = re.sub(r"(tensor|memref|vector)<[^>]*>", r"\1<..>", e)
    e = re.sub(r"\d+", "N", e)
    return e.strip()[:140]


@dataclass
class Outcome:
    program: str
    seed: int
    schedule: str
    status: str
    error: str = ""
    measured: bool = False  # run and checked (not only compiled)

    @property
    def kind(self) -> str:
        return failure_kind(self.error) if self.status != "ok" else ""


def quick_engine() -> Engine:
    """An engine for the fully measured episodes, with its own cache folder: its lock files then keep its
    timing apart from its own compiles only. Under the main engine's locks, timing a parallel kernel
    waits for an exclusive CPU lock that the fuzz's never-ending compiles (shared holders) starve, until
    the pool gives up: a `timeout` that says nothing about the schedule."""
    from mlir_rl_tui.engine.cache import Cache, default_cache_dir

    folder = os.path.join(default_cache_dir(), "mask-fuzz")
    os.makedirs(folder, exist_ok=True)
    return Engine(config=QUICK, workers=1, cache=Cache(os.path.join(folder, "measurements.sqlite")))


def check(engine: Engine, quick: Engine | None, program: Program, schedule: Schedule) -> tuple[str, str]:
    """(status, error) of a schedule: compiled only, or fully measured when `quick` is given."""
    m = quick.measure(program, schedule, use_cache=False) if quick is not None else engine.compile_only(program, schedule)
    return m.status, m.error


def shrink(engine: Engine, program: Program, schedule: Schedule, status: str, kind: str) -> Schedule:
    """Fewest actions (mask-legal) that still end in the same status and failure kind."""
    def fails(s: Schedule) -> bool:
        try:
            check_schedule(program, s, engine.limits, engine.openmp)
        except ScheduleError:
            return False
        st, err = check(engine, None, program, s)
        return st == status and failure_kind(err) == kind

    best = schedule
    changed = True
    while changed:
        changed = False
        for op_id in sorted(best.ops, key=lambda o: -int(o[2:])):  # whole ops first (producers first)
            cand = Schedule({k: v for k, v in best.ops.items() if k != op_id})
            if best.ops.get(op_id) and fails(cand):
                best, changed = cand, True
        for op_id in list(best.ops):
            for i in range(len(best.ops[op_id]) - 1, -1, -1):
                acts = best.ops[op_id]
                if i >= len(acts) or acts[i].kind == "V":
                    continue
                cand = Schedule({**best.ops, op_id: acts[:i] + acts[i + 1:]})
                if fails(cand):
                    best, changed = cand, True
    return best


def fuzz(programs: list[Program], episodes: int, seed: int = 0, engine: Engine | None = None,
         measure_every: int = 0, compile_only: bool = True, workers: int = 2,
         progress: bool = False) -> list[Outcome]:
    """Run `episodes` random masked episodes (round robin over `programs`) and check each schedule."""
    from mlir_rl_tui.engine.env import ScheduleEnv

    own = engine is None
    engine = engine or Engine(workers=workers)
    quick = quick_engine() if (measure_every or not compile_only) else None
    env = ScheduleEnv(programs[0], engine=engine, measure="never")
    try:
        jobs = []
        picker = random.Random(seed)  # which episodes are measured: any program, not every n-th one
        for i in range(episodes):
            prog = programs[i % len(programs)]
            sched, illegal = random_episode(env, prog, seed * 1_000_003 + i)
            measured = not compile_only or (measure_every > 0 and picker.random() < 1 / measure_every)
            jobs.append((prog, seed * 1_000_003 + i, sched, illegal, measured))
        out: list[Outcome] = []
        t0, done = time.time(), 0

        def run(job) -> Outcome:
            prog, s, sched, illegal, measured = job
            name = program_name(prog)
            if illegal:
                return Outcome(name, s, to_text(sched), "illegal", illegal)
            st, err = check(engine, quick if measured else None, prog, sched)
            return Outcome(name, s, to_text(sched), st, err, measured)

        with ThreadPoolExecutor(max(1, workers)) as pool:
            for o in pool.map(run, jobs):
                out.append(o)
                done += 1
                if progress and done % 50 == 0:
                    bad = sum(1 for x in out if x.status in FAILURES)
                    print(f"  {done}/{episodes} episodes, {bad} transform/compile errors, "
                          f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        return out
    finally:
        env.close()
        if quick is not None:
            quick.close()
        if own:
            engine.close()


def table(outcomes: list[Outcome]) -> str:
    """Markdown: outcomes per program, then failure kinds with their shortest example."""
    rows = ["| program | episodes | " + " | ".join(OUTCOMES) + " | measured |", "|---" * (len(OUTCOMES) + 3) + "|"]
    by_prog: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        by_prog[o.program][o.status] += 1
        by_prog[o.program]["measured"] += o.measured
    total = Counter()
    for name in sorted(by_prog):
        c = by_prog[name]
        total.update(c)
        n = sum(c[s] for s in OUTCOMES)
        rows.append(f"| {name} | {n} | " + " | ".join(str(c[s]) for s in OUTCOMES) + f" | {c['measured']} |")
    n = len(outcomes)
    rows.append(f"| **all** | {n} | " + " | ".join(str(total[s]) for s in OUTCOMES) + f" | {total['measured']} |")
    bad = sum(total[s] for s in FAILURES)
    rows.append(f"\ntransform-error or compile-error: {bad} of {n} episodes ({100 * bad / max(1, n):.2f}%)")
    kinds = group(outcomes)
    if kinds:
        rows += ["", "| count | status | failure kind | programs | shortest example |", "|---|---|---|---|---|"]
        for (status, kind), items in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            ex = min(items, key=lambda o: len(o.schedule))
            progs = ", ".join(sorted({o.program for o in items}))
            rows.append(f"| {len(items)} | {status} | {kind} | {progs} | `{ex.program}: {ex.schedule}` |")
    return "\n".join(rows)


def group(outcomes: list[Outcome]) -> dict[tuple[str, str], list[Outcome]]:
    kinds: dict[tuple[str, str], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        if o.status != "ok":
            kinds[(o.status, o.kind)].append(o)
    return kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile-only", action="store_true",
                    help="only transform, lower and JIT (no run, no timing), but every --measure-every-th")
    ap.add_argument("--measure-every", type=int, default=20,
                    help="with --compile-only, fully measure (run + check) every N-th episode; 0: none")
    ap.add_argument("--programs", nargs="*", default=None, help="default: samples/*.mlir and tests/data/torch/*.mlir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shrink", action="store_true", help="reduce each failure kind's example to its rule")
    ap.add_argument("--json", help="write every outcome to this JSONL file")
    args = ap.parse_args()
    programs = [load_file(p) for p in (args.programs or PROGRAMS)]
    t0 = time.time()
    with Engine(workers=args.workers) as engine:
        outcomes = fuzz(programs, args.episodes, args.seed, engine, args.measure_every, args.compile_only,
                        args.workers, progress=True)
        print(table(outcomes))
        print(f"\n{len(outcomes)} episodes over {len(programs)} programs in {time.time() - t0:.0f} s "
              f"({'compile only' if args.compile_only else 'measured'}"
              f"{f', every {args.measure_every}th measured' if args.compile_only and args.measure_every else ''})")
        if args.json:
            with open(args.json, "w") as f:
                for o in outcomes:
                    f.write(json.dumps(o.__dict__) + "\n")
        if args.shrink:
            by_path = {program_name(p): p for p in programs}
            print("\n| status | failure kind | shrunk schedule |\n|---|---|---|")
            for (status, kind), items in sorted(group(outcomes).items(), key=lambda kv: -len(kv[1])):
                if status not in FAILURES:
                    continue
                ex = min(items, key=lambda o: len(o.schedule))
                small = shrink(engine, by_path[ex.program], parse(ex.schedule), status, kind)
                print(f"| {status} | {kind} | `{ex.program}: {to_text(small)}` |", flush=True)


if __name__ == "__main__":
    main()
