"""How the shipped policy (agent/checkpoints/default.pt) is trained, end to end, on 2 cores.

1. programs: the training split of an `engine.dataset` data set (`--programs`, or generated into WORK/dataset),
   plus `--extra` more programs drawn by `engine.dataset.generate` with another seed, all used for training
   except any that equals a program of the evaluation split or of `--exclude` (default: samples/);
2. teacher (`--teacher recipe`, default): `agent.teacher.recipe_search` on every training program (`--budget`
   measurements): per op an outer tiling (T, TP or TF), a register tile and V or NT, tuned op by op; the
   target is its schedule, or NT on every op when it is not `--keep-baseline` (1.1x) faster than the baseline;
3. (`--teacher hill`) `engine.search` hill climbing instead, and per-op pruning of the imitation target
   (`agent.expert.imitation_target`): each op is set to NT when the schedule still measures within
   `--tolerance` (5%) of the best, so only the actions that help are kept;
4. behaviour cloning on those targets (policy + value pre-training);
5. optionally (`--iterations` > 0) PPO from the cloned weights, kept only if its greedy one-pass schedules
   are better on the *training* programs (the evaluation split is never used to choose);
6. the chosen weights (float16) go to agent/checkpoints/default.pt with default.json describing the run.

    python -m agent.train_default --work runs/v6 --programs runs/dataset --extra 60 --extra-dir runs/dataset_extra \
        --more runs/dataset_extra2 runs/dataset_extra3 --budget 40 --bc-epochs 120
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from agent.evaluate import gmean

CHECKPOINTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints")


def training_programs(a, eng, log) -> tuple[list, dict]:
    """(programs, description): the main data set's train split plus the extra draws, minus eval look-alikes."""
    from engine import load_file
    from engine.dataset import generate, read_manifest

    main_dir = a.programs or os.path.join(a.work, "dataset")
    if not os.path.exists(os.path.join(main_dir, "manifest.json")):
        log(f"generating {a.n} programs into {main_dir} (engine.dataset, seed {a.seed})")
        generate(main_dir, a.n, seed=a.seed, engine=eng)
    man = read_manifest(main_dir)
    train = [e["abspath"] for e in man["programs"] if e.get("split") == "train"]
    banned = {e["sha256"] for e in man["programs"] if e.get("split") != "train"}
    for spec in a.exclude:
        files = sorted(glob.glob(os.path.join(spec, "*.mlir"))) if os.path.isdir(spec) else [spec]
        banned |= {load_file(f).sha256 for f in files}
    extra: list[str] = []
    dirs = list(a.more)
    if a.extra:
        extra_dir = a.extra_dir or os.path.join(a.work, "dataset_extra")
        if not os.path.exists(os.path.join(extra_dir, "manifest.json")):
            log(f"generating {a.extra} extra programs into {extra_dir} (engine.dataset, seed {a.extra_seed})")
            generate(extra_dir, a.extra, seed=a.extra_seed, engine=eng, eval_fraction=0.0)
        dirs.insert(0, extra_dir)
    seen = {load_file(p).sha256 for p in train}
    for d in dirs:
        ex = read_manifest(d)
        ok = [e for e in ex["programs"] if e["sha256"] not in banned and e["sha256"] not in seen]
        seen |= {e["sha256"] for e in ok}
        extra += [e["abspath"] for e in ok]
        log(f"{len(ok)} extra programs from {d} ({len(ex['programs']) - len(ok)} equal to an eval/excluded/"
            "earlier program dropped)")
    progs = [load_file(p) for p in train + extra]
    return progs, {"main": main_dir, "main_train": len(train), "extra": dirs,
                   "extra_programs": len(extra), "excluded": a.exclude}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", default="runs/default")
    p.add_argument("--programs", help="engine.dataset folder (default: generate WORK/dataset with --n programs)")
    p.add_argument("--n", type=int, default=60, help="programs to generate when --programs is not given")
    p.add_argument("--extra", type=int, default=0, help="extra training programs drawn with --extra-seed")
    p.add_argument("--extra-dir", help="folder of the extra programs (default WORK/dataset_extra)")
    p.add_argument("--extra-seed", type=int, default=1)
    p.add_argument("--more", nargs="*", default=[], help="more engine.dataset folders, all used for training")
    p.add_argument("--teacher", choices=("recipe", "hill"), default="recipe",
                   help="recipe: agent.teacher.recipe_search (regular schedules); hill: engine.search hill climbing")
    p.add_argument("--exclude", nargs="*", default=["samples"],
                   help="programs never to train on (besides the eval split), by content")
    p.add_argument("--budget", type=int, default=30, help="hill-climbing measurements per training program")
    p.add_argument("--keep-baseline", type=float, default=1.1,
                   help="below this best speedup the imitation target is NT on every op")
    p.add_argument("--tolerance", type=float, default=1.05,
                   help="an op becomes NT when the schedule stays within this factor of the best")
    p.add_argument("--bc-epochs", type=int, default=60)
    p.add_argument("--bc-lr", type=float, default=1e-3)
    p.add_argument("--iterations", type=int, default=0, help="PPO iterations after BC (0: none)")
    p.add_argument("--batch", type=int, default=64, help="PPO programs per batch")
    p.add_argument("--ppo-lr", type=float, default=1e-4)
    p.add_argument("--target-kl", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from agent import bc, expert, ppo
    from agent.policy import ActorCritic, save
    from agent.suggest import load_policy, to_measure
    from agent.teacher import recipe_search
    from engine import Engine, Schedule, Session, to_text
    from engine.config import MeasureConfig
    from engine.search import search
    from engine.trace import write_schedule

    t0 = time.time()
    log = lambda *x: print(f"[{time.time() - t0:7.1f}s]", *x, flush=True)  # noqa: E731
    os.makedirs(a.work, exist_ok=True)
    dirs = {k: os.path.join(a.work, "traces", k) for k in ("search", "target")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    found: dict[int, float] = {}
    targets: dict[int, tuple] = {}
    made = {"search": 0, "targets": 0}
    with Engine(config=MeasureConfig(runs=3)) as eng:
        train, data = training_programs(a, eng, log)
        log(f"{len(train)} training programs")

        def one(i: int) -> None:
            prog = train[i]
            if a.teacher == "recipe":
                sched, sp, _, r = recipe_search(eng, prog, a.budget)
                made["search"] += r.evaluated
                write_schedule(os.path.join(dirs["search"], f"{i:03d}.jsonl"), prog, sched, "search")
                found[i] = sp
                if sp < a.keep_baseline:
                    sched, sp, why = Schedule({}), 1.0, f"best {sp:.2f}x < {a.keep_baseline}x: keep the baseline"
                else:
                    why = f"recipe {sp:.2f}x"
                targets[i] = (sched, sp)
                write_schedule(os.path.join(dirs["target"], f"{i:03d}.jsonl"), prog, sched, "search")
                log(f"{i + 1}/{len(train)} {os.path.basename(prog.path)}: {why} -> {to_text(sched) or '(baseline)'}")
                return
            r = search(eng, prog, "hill", a.budget, seed=a.seed + i)
            made["search"] += r.evaluated
            write_schedule(os.path.join(dirs["search"], f"{i:03d}.jsonl"), prog, r.schedule, "search", r.best)
            found[i] = r.speedup
            sched, sp, n, why = expert.imitation_target(eng, prog, r.schedule, r.best, a.keep_baseline, a.tolerance)
            made["targets"] += n
            targets[i] = (sched, sp)
            write_schedule(os.path.join(dirs["target"], f"{i:03d}.jsonl"), prog, sched, "search")
            log(f"{i + 1}/{len(train)} {os.path.basename(prog.path)}: {why} -> {sched or '(baseline)'}")

        with ThreadPoolExecutor(2) as ex:
            list(ex.map(one, range(len(train))))
    t_search = time.time() - t0

    torch.set_num_threads(2)
    examples = [e for i in range(len(train))
                for e in bc.examples_from_schedule(train[i], targets[i][0], math.log(max(targets[i][1], 1e-3)))]
    n_nt = sum(1 for i in targets if len(targets[i][0]) == 0)
    log(f"BC on {len(examples)} decisions ({n_nt} of {len(train)} programs keep the baseline)")
    model = ActorCritic()
    bc_rows: list[tuple[int, float]] = []
    bc.behaviour_cloning(model, examples, a.bc_epochs, lr=a.bc_lr, seed=a.seed,
                         log=lambda ep, loss: (bc_rows.append((ep, loss)), log(f"BC epoch {ep}: {loss:.3f}")))
    bc_path = os.path.join(a.work, "bc.pt")
    save(model, bc_path, {"trained_by": "bc", "examples": len(examples), "epochs": a.bc_epochs})
    with open(os.path.join(a.work, "bc.csv"), "w") as f:
        f.write("epoch,loss\n" + "".join(f"{e},{x:.5f}\n" for e, x in bc_rows))
    t_bc = time.time() - t0

    candidates = {"bc": bc_path}
    ppo_args = None
    if a.iterations > 0:
        ppo_args = ppo.Args(programs=[p.path for p in train], out=os.path.join(a.work, "ppo"), seed=a.seed,
                            iterations=a.iterations, init=bc_path, threads=2, programs_per_batch=a.batch,
                            learning_rate=a.ppo_lr, target_kl=a.target_kl)
        candidates["ppo"] = ppo.train(ppo_args, on_iteration=lambda row: log(
            f"PPO it {row['iteration']}: reward {row['charts/reward']:.3f} "
            f"speedup {row['charts/speedup_gmean']:.2f}x cache hits {row['charts/cache_hit_rate']:.2f}"))
    t_ppo = time.time() - t0

    # choose on the TRAINING programs only: greedy one-pass schedules, measured
    scores: dict[str, float] = {}
    with Engine(config=MeasureConfig(runs=3)) as eng:
        for name, path in candidates.items():
            pol = load_policy(path)
            sp = []
            for prog in train:
                sched = to_measure(pol.schedule(Session(prog, openmp=eng.openmp)).schedule)
                sp.append(eng.measure(prog, sched).speedup or 0.0)
            scores[name] = gmean(sp)
            log(f"greedy {name} policy on the training programs: gmean {scores[name]:.2f}x")
    chosen = max(scores, key=lambda k: scores[k])
    t_all = time.time() - t0
    os.makedirs(CHECKPOINTS, exist_ok=True)
    shutil.copy(candidates[chosen], os.path.join(CHECKPOINTS, "default.pt"))
    info = {
        "command": "python -m agent.train_default " + " ".join(sys.argv[1:] if argv is None else argv),
        "how": ("agent.teacher.recipe_search on the training programs -> imitation targets (NT on every op "
                "where it does not beat the baseline by --keep-baseline) -> behaviour cloning"
                if a.teacher == "recipe" else
                "engine.search hill climbing on the training programs -> imitation targets (NT where the search "
                "does not beat the baseline by --keep-baseline, per-op NT where an op's actions do not help) -> "
                "behaviour cloning") + (" -> PPO" if a.iterations else ""),
        "teacher": a.teacher,
        "data": data, "train_programs": len(train), "teacher_budget": a.budget,
        "teacher_measurements": made["search"], "target_measurements": made["targets"],
        "teacher_gmean_speedup": gmean(list(found.values())),
        "target_gmean_speedup": gmean([t[1] for t in targets.values()]),
        "keep_baseline": a.keep_baseline, "tolerance": a.tolerance, "programs_keeping_baseline": n_nt,
        "bc_decisions": len(examples), "bc_epochs": a.bc_epochs, "bc_lr": a.bc_lr,
        "bc_loss": [bc_rows[0][1], bc_rows[-1][1]],
        "ppo": {k: v for k, v in vars(ppo_args).items() if k != "programs"} if ppo_args else None,
        "greedy_train_gmean": scores, "shipped": chosen, "chosen_on": "training programs (greedy, one pass)",
        "seconds": {"search_and_targets": round(t_search), "bc": round(t_bc - t_search),
                    "ppo": round(t_ppo - t_bc), "total": round(t_all)},
        "machine": os.uname().machine, "cores": os.cpu_count(),
    }
    with open(os.path.join(a.work, "default.json"), "w") as f:
        json.dump(info, f, indent=1)
    shutil.copy(os.path.join(a.work, "default.json"), os.path.join(CHECKPOINTS, "default.json"))
    log(f"done: {os.path.join(CHECKPOINTS, 'default.pt')} ({chosen})")


if __name__ == "__main__":
    main()
