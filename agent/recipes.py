"""The recipe of the shipped policy, as code: `mlir-rl-tui train --recipe default --out DIR`.

From the repository alone it makes agent/checkpoints/default.pt (that checkpoint is its output), in five stages:

1. programs: the training programs of `PROGRAMS`, drawn with fixed seeds by `engine.corpus.generator` and
   `agent.block_programs` into DIR/programs; a program equal to an evaluation program (the main data set's
   eval split, the samples, tests/data/torch) is never trained on.
2. teacher: hill climbing (`engine.search`) with BUDGET measurements on each training program. The target is
   its schedule as found, or NT on every op when that is not KEEP_BASELINE times faster than the baseline;
   then each group of `agent.expert.RULE_GROUPS` in turn is timed beside the target, fresh and interleaved,
   and taken when it runs at least PREFER_RULES of the target's speed (`expert.checked_by_rules`). One line
   per program in DIR/targets.jsonl.
3. cloning: a policy cloned from scratch on the targets (policy and value heads, seed 0), BC_EPOCHS epochs:
   DIR/member1.pt (with --members N, N policies, seeds 0, 1, ...).
4. DIR/default.pt: that policy (with --members N, the members deciding together by vote,
   `agent.policy.save_ensemble`). One policy is the default: three deciding together measured 1.012 of it
   over the evaluation programs (AMD EPYC VM), within the noise of the comparison, at three times the
   decision time.
5. evaluation: the policy's one-pass schedule of every evaluation program, measured side by side with the
   shipped policy's (agent/checkpoints/default.pt, when it is another file) in the same rounds
   (`agent.evaluate`; rows kept in DIR/evaluation.rows): DIR/default.json records the policy's figures and
   its ratio to the shipped one with the command, the repository commit, the data, the stages' times and
   the machine, and each run of a resumed recipe (DIR/runs.jsonl: when, which commit, which machine).

Every stage resumes where it stopped: a stage's finished files are kept, a program with a target is not
searched again, and the measurement cache replays what an interrupted search had measured. `--ship` copies
default.pt and default.json to agent/checkpoints/, where the app, `optimize` and `evaluate` find the policy.
The teacher's measurements take most of the time: the shipped policy's run took 4 h 27 min on a 2-core AMD
EPYC VM with data/'s measurement files imported (teacher 3 h 44 min); on a 2-core Intel Xeon VM with an empty measurement
cache, about 1 minute per generated program and 2 minutes per model block, about 12 hours for the teacher.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields

from mlir_rl_tui.agent.evaluate import gmean
from mlir_rl_tui.engine import units
from mlir_rl_tui.engine.store import atomic, jsonl

CHECKPOINTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints")
RECIPES = ("default",)
#: The checkout this file belongs to (its tests/data/torch are evaluation programs; its commit is recorded).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Below this speedup of the teacher's best the target is NT on every op (the baseline).
KEEP_BASELINE = 1.1
#: A rule group replaces the target when it runs at least this fraction of the target's speed.
PREFER_RULES = 0.97
#: Rounds of the side-by-side timings of a rule check.
RULE_ROUNDS = 3
#: Timing rounds of each teacher measurement (engine.config.MeasureConfig.runs).
TEACHER_ROUNDS = 3
#: Cloning learning rate (constant).
BC_LR = 1e-3
#: How the members decide together (agent/explain.py).
DECODE = "vote"
#: The policy's schedule of an evaluation program under this fraction of its baseline's speed counts as a loss.
UNDER = 0.95
#: Rounds of the evaluation's side-by-side timings (agent.evaluate).
EVAL_ROUNDS = 3


@dataclass(frozen=True)
class Source:
    """One folder of training programs: `engine.corpus.generator.generate` (kind "generated"; its eval split is
    evaluation) or `agent.block_programs` (kind "blocks"), drawn with `seed`."""

    folder: str
    kind: str
    n: int
    seed: int
    sizes: str = "default"
    families: tuple[str, ...] = ()


#: The training programs, in this order (a program's index seeds its search): generated single ops and
#: chains, torch-mlir exports of model blocks at drawn sizes, tiny blocks (where a parallel hand-off costs more
#: than the work), poolings with output rows of the vector width, convolution blocks, stride-2 poolings and
#: odd-sized poolings: the shapes the policy lost on without them.
PROGRAMS: tuple[Source, ...] = (
    Source("dataset", "generated", 60, 0),
    Source("dataset-seed1", "generated", 80, 1),
    Source("blocks-seed0", "blocks", 66, 0),
    Source("blocks-seed1", "blocks", 44, 1),
    Source("blocks-seed7", "blocks", 44, 7, families=("pool", "conv_bn_relu", "resnet", "layernorm", "pool")),
    Source("small-seed10", "blocks", 66, 10, sizes="small"),
    Source("aligned-pool-seed14", "blocks", 24, 14, sizes="aligned", families=("pool",)),
    Source("conv-seed21", "blocks", 15, 21, families=("resnet", "conv_bn_relu", "invres")),
    Source("small-conv-seed22", "blocks", 15, 22, sizes="small", families=("resnet", "conv_bn_relu", "invres")),
    Source("strided-pool-seed28", "blocks", 16, 28, sizes="strided", families=("pool",)),
    Source("odd-pool-seed30", "blocks", 24, 30, sizes="odd", families=("pool",)),
)


@dataclass
class DefaultRecipe:
    """The options of `train --recipe default` (each field the option of its name, its docstring the help).
    The defaults make the shipped policy."""

    out: str = ""
    """the run's folder (recipe: resumes from it)"""
    budget: int = 30
    """teacher measurements per program"""
    members: int = 1
    """policies deciding together (more than one: an ensemble deciding by vote)"""
    bc_epochs: int = 50
    seed: int = 0
    threads: int = 2
    """programs searched at once, torch threads"""
    limit: int | None = None
    """only the first N training and evaluation programs"""
    ship: bool = False
    """copy the policy to agent/checkpoints/"""

    def command(self) -> str:
        """The command line that runs this recipe (recorded in default.json), its folder as DIR: where a run
        wrote its files does not change what it makes, and the record travels with the checkpoint."""
        words = ["mlir-rl-tui", "train", "--recipe", "default"]
        for f in fields(self):
            v = getattr(self, f.name)
            if v == f.default:
                continue
            flag = "--" + f.name.replace("_", "-")
            words += [flag] if isinstance(v, bool) else [flag, "DIR" if f.name == "out" else str(v)]
        return " ".join(words)


class Stages:
    """The run's progress: the stage, how far it is, and an ETA from the pace of the work done in this run
    (work an earlier run finished does not count towards the pace). Each stage's seconds add up over every
    run of the recipe in one folder, interrupted ones included (kept in DIR/seconds.json at every step)."""

    def __init__(self, log: Callable[[str], None], on_progress: Callable[[str], None] | None,
                 folder: str | None = None) -> None:
        self.t0 = time.monotonic()
        self._log, self._on_progress = log, on_progress
        self._path = os.path.join(folder, "seconds.json") if folder else None
        self.seconds: dict[str, float] = {}
        try:
            with open(self._path or "", encoding="utf-8") as f:
                self.seconds = {k: float(v) for k, v in json.load(f).items()}
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        self._name, self._total, self._done, self._fresh, self._start, self._base = "", 0, 0, 0, 0.0, 0.0
        self._lock = threading.Lock()

    def log(self, msg: str) -> None:
        self._log(f"[{units.duration(time.monotonic() - self.t0)}] {msg}")

    def begin(self, name: str, total: int, done: int = 0) -> None:
        with self._lock:
            self._name, self._total, self._done, self._fresh, self._start = name, total, done, 0, time.monotonic()
            self._base = self.seconds.get(name, 0.0)
        self.show()

    def step(self) -> None:
        with self._lock:
            self._done += 1
            self._fresh += 1
            self._save()
        self.show()

    def end(self) -> None:
        with self._lock:
            self._save()

    def _save(self) -> None:
        self.seconds[self._name] = self._base + time.monotonic() - self._start
        if self._path:
            atomic.write_text(self._path, json.dumps({k: round(v, 1) for k, v in self.seconds.items()}))

    def show(self) -> None:
        if self._on_progress is None:
            return
        with self._lock:
            left = self._total - self._done
            pace = (time.monotonic() - self._start) / self._fresh if self._fresh else None
            eta = f", {units.left(pace * left)}" if pace is not None and left > 0 else ""
            text = f"{self._name}: {self._done}/{self._total}{eta}"
        self._on_progress(text)


# ----------------------------------------------------------------------------------------------
# 1. programs
def make_programs(r: DefaultRecipe, st: Stages) -> tuple[list, list[str], dict[str, int]]:
    """(training programs, evaluation program paths, training programs per folder)."""
    from mlir_rl_tui.agent.block_programs import export_blocks
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.corpus.generator import generate, read_manifest
    from mlir_rl_tui.engine.corpus.samples import samples_dir

    root = os.path.join(r.out, "programs")
    todo = [s for s in PROGRAMS if not os.path.exists(os.path.join(root, s.folder, "manifest.json"))]
    st.begin("programs", len(PROGRAMS), len(PROGRAMS) - len(todo))
    evaluation: list[str] = []
    train: list = []
    counts: dict[str, int] = {}
    banned: set[str] = set()
    seen: set[str] = set()
    for src in PROGRAMS:
        folder = os.path.join(root, src.folder)
        if not os.path.exists(os.path.join(folder, "manifest.json")):
            if r.limit is not None and len(train) >= r.limit:
                break  # a quick check needs no more folders
            st.log(f"drawing {src.n} programs into {folder} (seed {src.seed})")
            if src.kind == "generated":
                generate(folder, src.n, seed=src.seed, eval_fraction=0.2 if src is PROGRAMS[0] else 0.0)
            else:
                export_blocks(folder, src.n, seed=src.seed, sizes=src.sizes,
                              **({"families": src.families} if src.families else {}))
            st.step()
        entries = read_manifest(folder)["programs"]
        if src is PROGRAMS[0]:
            evaluation = [e["abspath"] for e in entries if e.get("split") == "eval"]
            for d in (samples_dir(), os.path.join(CHECKOUT, "tests", "data", "torch")):
                if os.path.isdir(d):
                    evaluation += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".mlir"))
            banned = {load_file(p).sha256 for p in evaluation}
        ok = [e for e in entries if e.get("split", "train") == "train" and e["sha256"] not in banned | seen]
        seen |= {e["sha256"] for e in ok}
        counts[src.folder] = len(ok)
        train += [load_file(e["abspath"]) for e in ok]
    st.end()
    if r.limit is not None:
        train, evaluation = train[:r.limit], evaluation[:r.limit]
    return train, evaluation, counts


# ----------------------------------------------------------------------------------------------
# 2. teacher
def read_targets(path: str) -> dict[str, dict]:
    """{program sha256: its target line} of DIR/targets.jsonl (a line cut by an interrupt is dropped)."""
    return {r["sha256"]: r for r in jsonl.read(path).records if isinstance(r, dict) and isinstance(r.get("sha256"), str)}


def teach(eng, prog, index: int, budget: int, seed: int) -> dict:
    """The target of one program (module docstring, stage 2) as its targets.jsonl line."""
    from mlir_rl_tui.agent import expert
    from mlir_rl_tui.engine import to_text
    from mlir_rl_tui.engine.search import search

    res = search(eng, prog, "hill", budget, seed=seed + index)
    sched, sp, _, why = expert.imitation_target(eng, prog, res.schedule, res.best, KEEP_BASELINE)
    sched, sp, made, checked = expert.checked_by_rules(eng, prog, sched, sp, PREFER_RULES, RULE_ROUNDS)
    return {"sha256": prog.sha256, "program": os.path.basename(prog.path), "teacher_speedup": res.speedup,
            "measurements": res.evaluated + made, "schedule": to_text(sched), "speedup": sp,
            "why": why + (f"; {checked}" if checked else "")}


def run_teacher(r: DefaultRecipe, train: list, st: Stages) -> list[tuple]:
    """[(program, target schedule, its speedup)], searching the programs without a target yet."""
    from mlir_rl_tui.engine import Engine, MeasureConfig, parse
    from mlir_rl_tui.engine.errors import EngineError

    path = os.path.join(r.out, "targets.jsonl")
    have = read_targets(path)
    todo = [i for i, p in enumerate(train) if p.sha256 not in have]
    st.begin("teacher", len(train), len(train) - len(todo))
    lock = threading.Lock()
    with Engine(config=MeasureConfig(runs=TEACHER_ROUNDS)) as eng:
        def one(i: int) -> None:
            prog = train[i]
            try:
                row = teach(eng, prog, i, r.budget, r.seed)
            except EngineError as e:  # e.g. a baseline that does not run: not trained on
                row = {"sha256": prog.sha256, "program": os.path.basename(prog.path), "left_out": str(e)}
            with lock:
                jsonl.append(path, row)  # a line cut by an interrupt is cut off first
                have[prog.sha256] = row
            st.log(f"{i + 1}/{len(train)} {row['program']}: "
                   + (f"left out: {row['left_out']}" if "left_out" in row else
                      f"{row['why']} -> {row['schedule'] or '(baseline)'}"))
            st.step()

        with ThreadPoolExecutor(max(1, r.threads)) as ex:
            list(ex.map(one, todo))
    st.end()
    return [(p, parse(have[p.sha256]["schedule"]), have[p.sha256]["speedup"]) for p in train
            if "schedule" in have[p.sha256]]


# ----------------------------------------------------------------------------------------------
# 3. cloning, 4. the ensemble
def clone(r: DefaultRecipe, targets: list[tuple], st: Stages) -> tuple[list[str], int, dict]:
    """The members' checkpoint paths, the decisions they imitate, and each member's first and last loss."""
    import torch

    from mlir_rl_tui.agent import bc, expert
    from mlir_rl_tui.agent import checkpoint as ck
    from mlir_rl_tui.agent.policy import ActorCritic, save
    from mlir_rl_tui.engine.errors import EngineError

    torch.set_num_threads(max(1, r.threads))
    examples = []
    for prog, sched, sp in targets:
        try:
            examples += bc.examples_from_schedule(prog, expert.policy_target(prog, sched), math.log(max(sp, 1e-3)))
        except EngineError as e:
            st.log(f"{os.path.basename(prog.path)}: not imitated: {e}")
    paths = [os.path.join(r.out, f"member{k + 1}.pt") for k in range(r.members)]
    losses: dict[str, list[float]] = {}
    st.begin("cloning (epochs)", r.members * r.bc_epochs,
             sum(os.path.exists(p) for p in paths) * r.bc_epochs)
    for k, path in enumerate(paths):
        if os.path.exists(path):  # cloned by an earlier run: its losses are in its metadata
            kept = ck.load(path, "policy")[1].get("meta") or {}
            if isinstance(kept.get("loss"), list):
                losses[os.path.basename(path)] = kept["loss"]
            continue
        torch.manual_seed(r.seed + k)  # the initial weights too
        model = ActorCritic()
        got = bc.behaviour_cloning(model, examples, r.bc_epochs, lr=BC_LR, seed=r.seed + k,
                                   log=lambda ep, loss: st.step())
        losses[os.path.basename(path)] = [round(got[0], 4), round(got[-1], 4)]
        save(model, path, {"trained_by": "bc", "examples": len(examples), "epochs": r.bc_epochs,
                           "seed": r.seed + k, "loss": losses[os.path.basename(path)]})
        st.log(f"{os.path.basename(path)}: {len(examples)} decisions, loss {got[0]:.3f} -> {got[-1]:.3f}")
    st.end()
    return paths, len(examples), losses


def combine(members: list[str], out: str) -> None:
    """DIR/default.pt: the members deciding together by DECODE (one member: that policy). Kept when it is
    newer than every member: the file's bytes name its temporary file, so writing it again would make a
    checkpoint of the same weights that the evaluation's rows no longer recognize."""
    from mlir_rl_tui.agent.policy import save_ensemble

    if os.path.exists(out) and all(os.path.getmtime(out) >= os.path.getmtime(m) for m in members):
        return
    if len(members) == 1:
        shutil.copy(members[0], out)
    else:
        save_ensemble(members, out, DECODE)


# ----------------------------------------------------------------------------------------------
# 5. evaluation
def _shown_path(path: str, out: str) -> str:
    """A program's path as the record shows it: inside the checkout or the run's folder, relative to it."""
    for root in (CHECKOUT, out):
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
        if not rel.startswith(".."):
            return rel
    return path


def evaluate_one_pass(policy_path: str, paths: list[str], st: Stages, out: str = "") -> dict:
    """The policy's one-pass schedule of each program measured side by side with the shipped policy's (stage
    5): gmean speedup, the programs under UNDER, ms per decision, the ratio to the shipped policy."""
    from mlir_rl_tui.agent.evaluate import RowsError, RowsFile, evaluate, file_sha256, settings
    from mlir_rl_tui.agent.suggest import load_policy, set_inference_threads
    from mlir_rl_tui.engine import Engine, load_file

    policies = [load_policy(policy_path)]
    shipped = os.path.join(CHECKPOINTS, "default.pt")
    if os.path.exists(shipped) and file_sha256(shipped) != file_sha256(policy_path):
        policies.append(load_policy(shipped))
    rows_file = None
    if out:
        path, sets = os.path.join(out, "evaluation.rows"), settings(policies, [], 0, EVAL_ROUNDS, False)
        try:
            rows_file = RowsFile(path, sets)
        except RowsError:  # the rows of another policy (a member made again): measured afresh
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            rows_file = RowsFile(path, sets)
    kept = {p for p in paths if rows_file is not None and rows_file.get(p)}
    st.begin("evaluation", len(paths), len(kept))
    set_inference_threads(1)  # as optimize and evaluate decide
    with Engine() as eng:
        for p in paths:  # the decisions' time, on their own (the rows below may come from the file)
            policies[0].one_pass(load_file(p), eng.openmp)
        ms = policies[0].ms_per_decision
        rows, summary = evaluate(eng, policies, paths, [], rounds=EVAL_ROUNDS, torch=False, rows_file=rows_file,
                                 on_row=lambda i, n, row: row["program"] in kept or st.step())
    st.end()
    def fig(x: float | None) -> float | None:
        return round(x, 3) if x else None

    per = {_shown_path(r["program"], out): {"schedule": r["policy_schedule"], "speedup": fig(r.get("policy")),
                                            **({"shipped": fig(r.get("policy_B"))} if len(policies) > 1 else {})}
           for r in rows}
    ev = {"programs": len(rows), "gmean_speedup": round(summary["policy"] or 0.0, 3),
          f"under_{UNDER}x": sorted(_shown_path(r["program"], out) for r in rows if r.get("policy_below_baseline")),
          "ms_per_decision": round(ms, 2), "rounds": EVAL_ROUNDS}
    if len(policies) > 1:  # new / shipped, program by program (evaluate has shipped / new)
        ratio, spread = summary["policy_B_over_policy"], summary["policy_B_over_policy_spread"]
        ev["against_shipped"] = {
            "shipped_sha256": file_sha256(shipped), "shipped_gmean_speedup": round(summary["policy_B"] or 0.0, 3),
            "ratio": round(1 / ratio, 4) if ratio else None, "ratio_spread": round(spread, 4) if spread else None,
            "faster": summary["policy_B_behind"], "slower": summary["policy_B_ahead"],
            "same_schedule": summary["policy_B_same_schedule"]}
    return {**ev, "per_program": per}


def commit() -> str | None:
    """The checkout's commit (with "+changes" when files differ from it); None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", CHECKOUT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "-C", CHECKOUT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def note_run(out: str, st: Stages) -> list[dict]:
    """Append this run of the recipe to DIR/runs.jsonl (a stopped run resumed is several runs): when it
    started, the commit, the machine and the seconds the stages had taken before it; returns every run so
    far. A run resumed on another machine or commit says so in the log, and default.json lists them all."""
    from mlir_rl_tui.engine.measure.machine import cpu_model

    path = os.path.join(out, "runs.jsonl")
    runs: list[dict] = []
    with contextlib.suppress(OSError, UnicodeDecodeError):
        runs = [r for r in jsonl.read(path).records if isinstance(r, dict)]
    now = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit(),
           "machine": cpu_model(), "cores": os.cpu_count(), "seconds_before": round(sum(st.seconds.values()))}
    if runs and any(runs[-1].get(k) != now[k] for k in ("commit", "machine", "cores")):
        st.log("resuming a run last continued on " + ", ".join(
            f"{k} {runs[-1].get(k)}" for k in ("machine", "cores", "commit") if runs[-1].get(k) != now[k])
            + f"; this one: {now['machine']}, {now['cores']} cores, commit {now['commit']}")
    jsonl.append(path, now)
    return [*runs, now]


# ----------------------------------------------------------------------------------------------
def train_default(r: DefaultRecipe, log: Callable[[str], None] = print,
                  on_progress: Callable[[str], None] | None = None) -> str:
    """Run the recipe (module docstring); returns the path of the policy it made."""
    from mlir_rl_tui.agent.expert import RULE_GROUPS
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.measure.machine import cpu_model

    if not r.out:
        raise EngineError("give the run's folder: --out DIR")
    if r.limit is not None and r.limit < 1:
        raise EngineError(f"--limit must be at least 1, not {r.limit}")
    if not 1 <= r.members <= 4:
        raise EngineError(f"--members is 1 to 4, not {r.members}")
    os.makedirs(r.out, exist_ok=True)
    st = Stages(log, on_progress, r.out)
    runs = note_run(r.out, st)
    train, evaluation, counts = make_programs(r, st)
    st.log(f"{len(train)} training programs, {len(evaluation)} evaluation programs")
    targets = run_teacher(r, train, st)
    rows = read_targets(os.path.join(r.out, "targets.jsonl"))
    rows = [rows[p.sha256] for p in train]
    members, decisions, losses = clone(r, targets, st)
    out = os.path.join(r.out, "default.pt")
    combine(members, out)
    ev = evaluate_one_pass(out, evaluation, st, r.out)
    vs = ev.get("against_shipped")
    st.log(f"evaluation: gmean {ev['gmean_speedup']:.2f}x over {ev['programs']} programs, "
           f"{len(ev[f'under_{UNDER}x'])} under {UNDER}x, {ev['ms_per_decision']:.1f} ms per decision"
           + (f"; {vs['ratio']:.3f} of the shipped policy (x/ {vs['ratio_spread'] or 1:.3f} per program), measured "
              "side by side" if vs and vs["ratio"] else ""))
    info = {
        "trained_by": "recipe default", "command": r.command(), "commit": commit(),
        "recipe": {"budget": r.budget, "keep_baseline": KEEP_BASELINE, "prefer_rules": PREFER_RULES,
                   "rule_groups": ["+".join(g) for g in RULE_GROUPS], "members": r.members,
                   "decode": DECODE if r.members > 1 else None, "bc_epochs": r.bc_epochs, "bc_lr": BC_LR, "seed": r.seed, "limit": r.limit},
        "programs": counts, "train_programs": len(train),
        "left_out": [x["program"] for x in rows if "left_out" in x],
        "teacher": {"measurements": sum(x.get("measurements", 0) for x in rows),
                    "gmean_speedup": gmean([x["teacher_speedup"] for x in rows if "schedule" in x]),
                    "targets_gmean_speedup": gmean([sp for _, _, sp in targets]),
                    "targets_keeping_baseline": sum(1 for _, s, _ in targets if not len(s))},
        "cloning": {"decisions": decisions, "loss": losses},
        "evaluation": ev,
        "seconds": {**{k: round(v) for k, v in st.seconds.items()}, "total": round(sum(st.seconds.values()))},
        "machine": cpu_model(), "cores": os.cpu_count(),
        "runs": runs,
    }
    with open(os.path.join(r.out, "default.json"), "w") as f:
        json.dump(info, f, indent=1)
    if r.ship:
        os.makedirs(CHECKPOINTS, exist_ok=True)
        for name in ("default.pt", "default.json"):
            shutil.copy(os.path.join(r.out, name), os.path.join(CHECKPOINTS, name))
        out = os.path.join(CHECKPOINTS, "default.pt")
    st.log(f"done: {out}")
    return out
