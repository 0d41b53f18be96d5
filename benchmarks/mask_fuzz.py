"""Does a legal schedule compute the right answer? Random masked episodes, really compiled, run and checked.

An episode is what a random masked agent does (engine.rl.env): `action_space.sample(mask=info["action_mask"])`
until every op is finished. Each schedule is transformed, lowered, JIT-compiled, run and checked against the
untransformed program on the same seeded inputs, in a worker (`--compile-only`: no run, and only every
`--measure-every`-th episode run). A masked-legal schedule that ends in transform-error, compile-error, crash
or wrong-result is a mask (or transform) that lied; a time-out is counted with the time it took against its
bound (compile limit + 4x the run limit of 10x the baseline).

The program sets (`--sets`, default all):
  samples          samples/*.mlir
  torch            tests/data/torch/*.mlir: torch-mlir exports as they come (what `import --passes none` gives)
  blocks-none      the model blocks of tests/data/torch/blocks.py, imported with `--passes none`
  blocks           the same, imported with the default passes (NHWC convolutions, folded batch norm, ...)
  generated        engine.corpus.generator programs (single ops and chains), seeded
The imported and generated sets are made once into `--workdir` (torch-mlir needed for the blocks).

    .venv/bin/python benchmarks/mask_fuzz.py --episodes 2000 [--sets samples,torch] [--workers 2]

Prints the outcomes per program and set and the failure kinds (error text with numbers and SSA names
folded), each with its shortest example shrunk automatically to the fewest actions that still fail the same
way (`--no-shrink` to skip): the regression test to write, or the rule to put in the mask.
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
from mlir_rl_tui.engine.schedule.state import check_schedule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SETS = ("samples", "torch", "blocks-none", "blocks", "generated")
#: A compile-time failure of a legal schedule: the mask or a transform lied.
FAILURES = ("transform-error", "compile-error")
#: Every outcome that is a bug: the schedule was legal and did not compute the right answer.
WRONG = (*FAILURES, "crash", "wrong-result", "illegal")
#: Statuses in table order; "illegal" is an action the env refused although the mask allowed it.
OUTCOMES = ("ok", "transform-error", "compile-error", "crash", "timeout", "wrong-result", "illegal")
#: Brief baselines: their time only sets a checked run's limit (10x the baseline).
QUICK = MeasureConfig(runs=1, target_rel=1.0, budget_s=0.01, exclusive=False)


def program_name(program: Program) -> str:
    """samples/matmul.mlir -> matmul.mlir, tests/data/torch/mlp.mlir -> torch/mlp.mlir, WORKDIR/blocks/x.mlir
    -> blocks/x.mlir."""
    if program.path is None:
        return program.sha256[:12]
    parent = os.path.basename(os.path.dirname(program.path))
    if parent in SETS:
        return f"{parent}/{os.path.basename(program.path)}"
    rel = os.path.relpath(program.path, ROOT)
    return rel.removeprefix("samples/").removeprefix("tests/data/")


def _blocks(out: str, passes: str) -> list[str]:
    """tests/data/torch/blocks.py's modules imported into `out` (once) in a child process (torch-mlir)."""
    import subprocess

    blocks = os.path.join(ROOT, "tests", "data", "torch", "blocks.py")
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(blocks)!r})\n"
            "from blocks import INPUTS\n"
            "from mlir_rl_tui.agent.torch_import import import_module, parse_passes\n"
            "for name, shape in INPUTS.items():\n"
            f"    import_module({blocks!r} + ':' + name, [shape], {out!r} + '/' + name + '.mlir', "
            f"passes=parse_passes({passes!r}))\n")
    os.makedirs(out, exist_ok=True)
    if not glob.glob(os.path.join(out, "*.mlir")):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            raise SystemExit(f"mask_fuzz: importing the model blocks failed: {last}")
    return sorted(glob.glob(os.path.join(out, "*.mlir")))


def program_paths(sets: list[str], workdir: str, generated: int = 12, seed: int = 0) -> dict[str, list[str]]:
    """The .mlir files of each program set (made into `workdir` where they are not in the repository)."""
    out: dict[str, list[str]] = {}
    for name in sets:
        if name == "samples":
            out[name] = sorted(glob.glob(os.path.join(ROOT, "samples", "*.mlir")))
        elif name == "torch":
            out[name] = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "torch", "*.mlir")))
        elif name in ("blocks", "blocks-none"):
            out[name] = _blocks(os.path.join(workdir, name), "all" if name == "blocks" else "none")
        elif name == "generated":
            import numpy as np

            from mlir_rl_tui.engine.corpus.generator import draw

            d = os.path.join(workdir, "generated")
            os.makedirs(d, exist_ok=True)
            rng = np.random.default_rng(seed)
            paths = []
            for i in range(generated):
                g = draw(rng, i)
                path = os.path.join(d, f"{i:02d}_{g.name[:60]}.mlir")
                if not os.path.exists(path):
                    with open(path, "w") as f:
                        f.write(g.text)
                paths.append(path)
            out[name] = paths
        else:
            raise SystemExit(f"mask_fuzz: unknown program set {name!r}; choose from {', '.join(SETS)}")
    return out


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
    seconds: float = 0.0  # wall time of the check
    bound_s: float = 0.0  # the longest a check of this program may take before it is stopped

    @property
    def kind(self) -> str:
        return failure_kind(self.error) if self.status != "ok" else ""


def quick_engine(workers: int = 1) -> Engine:
    """An engine for the checked episodes (`Engine.validate`), with its own cache folder: its lock files
    then keep its baselines' timing apart from its own compiles only. Under the main engine's locks, a
    timing waits for an exclusive CPU lock that the fuzz's never-ending compiles (shared holders) starve."""
    from mlir_rl_tui.engine.store.cache import Cache, default_cache_dir

    folder = os.path.join(default_cache_dir(), "mask-fuzz")
    os.makedirs(folder, exist_ok=True)
    return Engine(config=QUICK, workers=workers, cache=Cache(os.path.join(folder, "measurements.sqlite")))


def bound_s(quick: Engine, program: Program) -> float:
    """How long a check of `program` may take before the engine stops it: the compile limit plus the run
    limit (`Engine._run`: 4x the time-out of 10x the baseline, plus 5 s)."""
    c = quick.config
    base = quick.baseline(program)
    limit = max(c.timeout_factor * (base.time_ms or 0.0) / 1e3, c.timeout_floor_s)
    return c.compile_timeout_s + 4 * limit + 5


def check(engine: Engine, quick: Engine | None, program: Program, schedule: Schedule) -> tuple[str, str]:
    """(status, error) of a schedule: compiled only, or run once and checked (`Engine.validate`, no timing)
    when `quick` is given."""
    m = quick.validate(program, schedule) if quick is not None else engine.compile_only(program, schedule)
    return m.status, m.error


def shrink(engine: Engine, program: Program, schedule: Schedule, status: str, kind: str,
           quick: Engine | None = None) -> Schedule:
    """Fewest actions (mask-legal) that still end in the same status and failure kind; a wrong result or a
    crash is re-run (with `quick`), a compile failure only compiled."""
    run = quick if status not in FAILURES else None

    def fails(s: Schedule) -> bool:
        try:
            check_schedule(program, s, engine.limits, engine.openmp)
        except ScheduleError:
            return False
        st, err = check(engine, run, program, s)
        return st == status and (status == "wrong-result" or failure_kind(err) == kind)

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
         measure_every: int = 0, compile_only: bool = False, workers: int = 2,
         progress: bool = False) -> list[Outcome]:
    """Run `episodes` random masked episodes (round robin over `programs`) and check each schedule: run and
    compared with the untransformed program, or with `compile_only` only compiled (and every
    `measure_every`-th one run)."""
    from mlir_rl_tui.engine.rl.env import ScheduleEnv

    own = engine is None
    engine = engine or Engine(workers=workers)
    quick = quick_engine(workers) if (measure_every or not compile_only) else None
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
            t = time.time()
            st, err = check(engine, quick if measured else None, prog, sched)
            bound = bound_s(quick, prog) if measured else engine.config.compile_timeout_s
            return Outcome(name, s, to_text(sched), st, err, measured, time.time() - t, bound)

        with ThreadPoolExecutor(max(1, workers)) as pool:
            for o in pool.map(run, jobs):
                out.append(o)
                done += 1
                if progress and done % 50 == 0:
                    bad = sum(1 for x in out if x.status in WRONG)
                    print(f"  {done}/{episodes} episodes, {bad} failed, "
                          f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        return out
    finally:
        env.close()
        if quick is not None:
            quick.close()
        if own:
            engine.close()


def table(outcomes: list[Outcome], sets: dict[str, str] | None = None) -> str:
    """Markdown: outcomes per program (and per set), the time-outs against their bound, then the failure
    kinds with their shortest example."""
    sets = sets or {}
    rows = ["| set | program | episodes | " + " | ".join(OUTCOMES) + " | run and checked |",
            "|---" * (len(OUTCOMES) + 4) + "|"]
    by_prog: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        by_prog[o.program][o.status] += 1
        by_prog[o.program]["measured"] += o.measured
    total = Counter()
    for name in sorted(by_prog, key=lambda n: (sets.get(n, ""), n)):
        c = by_prog[name]
        total.update(c)
        n = sum(c[s] for s in OUTCOMES)
        rows.append(f"| {sets.get(name, '')} | {name} | {n} | " + " | ".join(str(c[s]) for s in OUTCOMES)
                    + f" | {c['measured']} |")
    n = len(outcomes)
    rows.append(f"| | **all** | {n} | " + " | ".join(str(total[s]) for s in OUTCOMES) + f" | {total['measured']} |")
    bad = sum(total[s] for s in FAILURES)
    rows.append(f"\ntransform-error or compile-error: {bad} of {n} episodes ({100 * bad / max(1, n):.2f}%); "
                f"wrong results: {total['wrong-result']}; crashes: {total['crash']}")
    slow = [o for o in outcomes if o.status == "timeout"]
    if slow:
        worst = max(slow, key=lambda o: o.seconds / max(o.bound_s, 1e-9))
        over = sum(1 for o in slow if o.seconds > o.bound_s)
        rows.append(f"time-outs: {len(slow)}, {over} of them over their bound; the closest to its bound took "
                    f"{worst.seconds:.0f} s of {worst.bound_s:.0f} s ({worst.program})")
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
    from mlir_rl_tui.engine.store.cache import default_cache_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sets", default=",".join(SETS), help=f"program sets, comma-separated: {', '.join(SETS)}")
    ap.add_argument("--programs", nargs="*", default=None, help="these .mlir files instead of --sets")
    ap.add_argument("--workdir", default=os.path.join(default_cache_dir(), "mask-fuzz", "programs"),
                    help="where the imported and generated program sets are made (once)")
    ap.add_argument("--compile-only", action="store_true",
                    help="only transform, lower and JIT (no run), but every --measure-every-th episode")
    ap.add_argument("--measure-every", type=int, default=20,
                    help="with --compile-only, run and check every N-th episode; 0: none")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-shrink", action="store_true", help="do not shrink each failure kind's example")
    ap.add_argument("--json", help="write every outcome to this JSONL file")
    args = ap.parse_args()
    if args.programs:
        paths = {"files": args.programs}
    else:
        paths = program_paths([x.strip() for x in args.sets.split(",") if x.strip()], args.workdir, seed=args.seed)
    programs, set_of = [], {}
    for name, files in paths.items():
        for path in files:
            prog = load_file(path)
            programs.append(prog)
            set_of[program_name(prog)] = name
    print(f"{len(programs)} programs: " + ", ".join(f"{k} {len(v)}" for k, v in paths.items()), file=sys.stderr)
    t0 = time.time()
    with Engine(workers=args.workers) as engine:
        outcomes = fuzz(programs, args.episodes, args.seed, engine, args.measure_every, args.compile_only,
                        args.workers, progress=True)
        print(table(outcomes, set_of))
        print(f"\n{len(outcomes)} episodes over {len(programs)} programs in {time.time() - t0:.0f} s "
              f"({'compiled' if args.compile_only else 'each run and checked'}"
              f"{f', every {args.measure_every}th run and checked' if args.compile_only and args.measure_every else ''})")
        if args.json:
            with open(args.json, "w") as f:
                for o in outcomes:
                    f.write(json.dumps(o.__dict__) + "\n")
        failing = [(k, v) for k, v in sorted(group(outcomes).items(), key=lambda kv: -len(kv[1])) if k[0] in WRONG
                   and k[0] != "illegal"]
        if failing and not args.no_shrink:
            by_name = {program_name(p): p for p in programs}
            quick = quick_engine(1)
            try:
                print("\n| status | failure kind | shrunk schedule |\n|---|---|---|")
                for (status, kind), items in failing:
                    ex = min(items, key=lambda o: len(o.schedule))
                    small = shrink(engine, by_name[ex.program], parse(ex.schedule), status, kind, quick)
                    print(f"| {status} | {kind} | `{ex.program}: {to_text(small)}` |", flush=True)
            finally:
                quick.close()


if __name__ == "__main__":
    main()
