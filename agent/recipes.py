"""Training recipes: how a shipped policy is made, as code that `mlir-rl-tui train --recipe NAME` runs.

`default` made agent/checkpoints/default.pt (its default.json records the run; docs/agent-experiments.md tells
the story), end to end on the project's 2-core machine:

1. Programs: the train split of an `engine.dataset` folder (--programs; default: generate OUT/dataset with
   --n programs), plus --extra programs drawn with --extra-seed, any --more dataset folders and --blocks
   torch-mlir exports of model blocks (agent.block_programs); a program
   equal to one of the evaluation split or of --exclude (default samples/) is never trained on.
2. Teacher: `agent.teacher.recipe_search` on every training program (--budget measurements each): per op an
   outer tiling (T, TP or TF), a register tile, then V or NT, tuned op by op. The imitation target is its
   schedule, or NT on every op when it is not --keep-baseline (1.1x) faster than the baseline. With
   --teacher hill: `engine.search` hill climbing's schedule (with --tolerance F > 0, each op then set to
   NT when the schedule stays within a factor F of the best).
3. Behaviour cloning of the targets (policy and value heads) for --bc-epochs epochs; a search's tile size the
   policy cannot choose (hill climbing tiles by any divisor, e.g. 384) is made one it can, and a tiling
   that tiles nothing (no code: `engine.mask.effective`) is left out (`agent.expert.policy_target`).
4. Optionally (--iterations > 0, default 0) PPO from the cloned weights, kept only if its greedy one-pass
   schedules are faster on the training programs (the evaluation split is never used to choose).
5. The chosen weights are OUT/default.pt, with OUT/default.json describing the run; --ship copies both
   to agent/checkpoints/, where the app, `optimize` and `evaluate` find the shipped policy.

The first run of issue 14 (engine version 8): 230 programs (the 48 of runs/dataset's train split, 73 drawn
with seed 1, 66 model blocks exported with torch-mlir with seed 0 and 43 more with seed 1), hill-climbing
teacher, its schedules imitated as found (--tolerance 0):

    mlir-rl-tui dataset generate --out runs/dataset --n 60 --seed 0 --no-baseline
    python -m mlir_rl_tui.agent.block_programs runs/v9/blocks_s1 44 1
    mlir-rl-tui train --recipe default --teacher hill --out runs/v9 --programs runs/dataset --extra 80 \\
        --blocks 66 --more runs/v9/blocks_s1 --budget 30 --bc-epochs 50 --exclude samples tests/data/torch --ship

The teacher's measurements took about 90 minutes on this 2-core machine, in three sittings that replayed the
earlier programs from the measurement cache (156 programs in 57 minutes, then 31 and 43 blocks in 17 minutes
each: about 20 s per generated program, 25-45 s per block); a replay of all 230 takes 2 minutes, cloning
5,463 decisions for 50 epochs 6.6 minutes. Time grows with programs x budget (teacher) and decisions x
epochs (cloning). A quick check of the whole pipeline: --n 2 --limit 1 --budget 2 --bc-epochs 1
--exclude (about a minute).

The weights shipped from 2026-11-25 to 2026-11-27 (runs/v14) are this recipe's with the teacher measured again on a new machine (4,359 s
for the 230 programs; its measurements are in data/: `mlir-rl-tui dataset import
data/measurements-engine8.jsonl.gz --as-this-machine` on the same kind of machine, and the teacher replays)
and its targets checked against expert.rule_variant's rules (fresh timings, 12 minutes), cloning 5 minutes:

    mlir-rl-tui train --recipe default --teacher hill --out runs/v14 --programs runs/dataset --extra 80 \
        --blocks 66 --more runs/v9/blocks_s1 --budget 30 --bc-epochs 50 --exclude samples tests/data/torch \
        --prefer-rules 0.97 --ship

Shipped on 2026-11-27 before runs/v31 (runs/v30): the same recipe with the teacher on this machine kind's own measurements
(data/measurements-engine8-vm2.jsonl.gz and -small.jsonl.gz), 39 blocks of chosen families and 66 tiny blocks
(335 programs; 72 minutes of search and rule checks with the first file imported, 8 of cloning):

    python -m mlir_rl_tui.agent.block_programs runs/s13/blocks_s7 44 7 pool conv_bn_relu resnet layernorm pool
    python -m mlir_rl_tui.agent.block_programs runs/small/blocks_s10 66 10 --small
    mlir-rl-tui train --recipe default --teacher hill --out runs/v30 --programs runs/dataset --extra 80 \
        --blocks 66 --more runs/base/blocks_s1 runs/s13/blocks_s7 runs/small/blocks_s10 --budget 30 \
        --bc-epochs 50 --exclude samples tests/data/torch runs/val/small_s12 $(cat runs/val_list.txt) \
        --prefer-rules 0.97 --ship

(runs/base/blocks_s1 is `block_programs runs/base/blocks_s1 44 1`, the same blocks as runs/v9/blocks_s1.)

Shipped in the fifteenth and sixteenth sessions (runs/v31): runs/v30's recipe plus 24 tiny poolings whose output rows are mostly
8-32 columns (`--sizes aligned`; their measurements in data/measurements-engine8-aligned.jsonl.gz), 356
programs, 78 minutes of search and rule checks, 9 of cloning:

    python -m mlir_rl_tui.agent.block_programs runs/aligned/blocks_s14 24 14 --sizes aligned pool
    mlir-rl-tui train --recipe default --teacher hill --out runs/v31 --programs runs/dataset --extra 80 \
        --blocks 66 --more runs/base/blocks_s1 runs/s13/blocks_s7 runs/small/blocks_s10 runs/aligned/blocks_s14 \
        --budget 30 --bc-epochs 50 --exclude samples tests/data/torch runs/val/small_s12 runs/val/aligned_s16 \
        $(cat runs/val_list.txt) --prefer-rules 0.97 --ship

Shipped from the seventeenth to the nineteenth session (runs/v34, now the first member of the shipped
ensemble): runs/v31's targets with the "depthwise" rule checked on them (taken on 7
of the 8 NCHW depthwise convolutions), cloned by fine-tuning runs/v31's weights (the file shipped then), 5
minutes:

    mlir-rl-tui train --recipe default --teacher hill --out runs/v34 <runs/v31's data options> \
        --prefer-rules 0.97 --targets-from runs/v31 --rule-groups depthwise \
        --bc-init runs/v31/default.pt --bc-epochs 10 --bc-lr 3e-4

(Cloned from scratch on the same targets, runs/v33, it lost on validation: every cloning from scratch breaks
the near-ties anew. The "pool" rule, runs/v32, lost on validation poolings.)

Tried on 2026-11-27, not shipped (runs/v36): runs/v34's targets with the "block" rule checked on them (one
serial 16x32 register tile and V on 2-D elementwise ops under 4,096 iterations; taken on 30 of the 40 targets
it changed), cloned by fine-tuning runs/v34's weights, 6 minutes; 1.010 of runs/v34 on validation, a
program under its baseline on evaluation (docs/agent-experiments.md, eighteenth session):

    mlir-rl-tui train --recipe default --teacher hill --out runs/v36 <runs/v31's data options> \
        --prefer-rules 0.97 --targets-from runs/v34 --rule-groups block \
        --bc-init runs/v34/default.pt --bc-epochs 10 --bc-lr 3e-4

Tried on 2026-11-27, not shipped (runs/v38-v40): runs/v34's targets with the "conv" rule checked on them (one
output row per register tile on NCHW convolutions larger than 1x1; taken on 17 of the 24 targets it changed),
each member of the shipped ensemble fine-tuned on them; 0.987 of the shipped ensemble on 88 validation
programs, the pattern carried to 1x1 convolutions (docs/agent-experiments.md, twentieth session):

    mlir-rl-tui train --recipe default --teacher hill --out runs/v38 <runs/v31's data options> \
        --prefer-rules 0.97 --targets-from runs/v34 --rule-groups conv \
        --bc-init runs/v34/default.pt --bc-epochs 10 --bc-lr 3e-4
    (runs/v39, runs/v40: --prefer-rules 0 --targets-from runs/v38 from runs/v35 and runs/v37, seeds 1 and 2)

Tried on 2026-11-27, not shipped: the same targets cloned for 30 epochs (runs/v44, v46, v47; 0.987 on 88
validation programs), and runs/v48 = runs/v38's targets plus 26 more conv blocks' (runs/v49-v51; 0.991, 1.036
on the NCHW-conv programs, near-ties flipped elsewhere; docs/agent-experiments.md, twenty-first session):

    mlir-rl-tui train --recipe default --teacher hill --out runs/v49 <runs/v31's data options, --more ...
        runs/s22/blocks_c21 runs/s22/blocks_c22> --prefer-rules 0 --targets-from runs/v48 \
        --bc-init runs/v34/default.pt --bc-epochs 30 --bc-lr 3e-4 --bc-lr-end 3e-5

Tried on 2026-11-27, not shipped: targets anchored to the shipped policy's own one-pass schedules except on the
convolutions in the conv rule's domain (runs/s23/anch: runs/v48's actions there), cloned as runs/v49 was
(runs/v55-v57; 1.000 on 88 validation programs, 1.019 on the NCHW-conv programs; docs/agent-experiments.md, twenty-second
session). `--anchor P.pt` makes such targets (P.pt's own schedules, --rule-groups checked on them) in one
command:

    mlir-rl-tui train --recipe default --teacher hill --out OUT <the data options> --anchor P.pt \
        --prefer-rules 0.97 --rule-groups conv --bc-init MEMBER.pt --bc-epochs 30 --bc-lr 3e-4 --bc-lr-end 3e-5

A program the --targets-from run has no target for (a folder added last to --more) goes to the teacher.

`--targets-from RUN --seed S` clones an earlier run's targets again without searching (the same data options;
runs/v31's with seed 1 took 13 minutes): two such clonings deciding together (`mlir-rl-tui ensemble`) gained on
validation but lost on its aligned poolings and were not shipped (docs/agent-experiments.md, sixteenth session).

Shipped since 2026-11-27, nineteenth session: three policies deciding together, runs/v34 and two more clonings
of its targets, each fine-tuned from its own cloning of runs/v31's targets (seeds 1 and 2; runs/v31s2 took 17
minutes with its rule checks timed again, runs/v37 2.5), 1.013 of runs/v34 on 155 validation programs, 7 ms
per decision (docs/agent-experiments.md, nineteenth session):

    mlir-rl-tui train --recipe default --teacher hill --out runs/v31s2 <runs/v31's data options> \
        --prefer-rules 0.97 --targets-from runs/v31 --bc-epochs 50 --seed 2
    mlir-rl-tui train --recipe default --teacher hill --out runs/v37 <runs/v31's data options> \
        --prefer-rules 0.97 --targets-from runs/v34 --rule-groups depthwise \
        --bc-init runs/v31s2/default.pt --bc-epochs 10 --bc-lr 3e-4 --seed 2
    (runs/v35: the same from runs/v31s1 with --seed 1)
    mlir-rl-tui ensemble agent/checkpoints/default.pt runs/v34/default.pt runs/v35/default.pt runs/v37/default.pt

Tried on 2026-11-28, not shipped (E14b, runs/v73-v75; E14c, runs/v76-v78 with --more ... runs/s28/aligned_s29
minus its three 8-channel 2x2 stride-2 poolings of 17x17): the shipped ensemble's own schedules with the pool rule
checked on them, plus tiny stride-2 poolings of rows of 16-32 (`block_programs runs/s28/strided_s28 16 28
--sizes strided pool`), cloned from its members and decided by consensus; they carried the row pattern to a
stride-1 validation pooling, 1.40x -> 0.58x (docs/agent-experiments.md, twenty-eighth session):

    mlir-rl-tui ensemble --member K runs/memberK.pt agent/checkpoints/default.pt      # K = 1, 2, 3
    mlir-rl-tui train --recipe default --teacher hill --out runs/v73 <runs/v69's data options, --more ...
        runs/s28/strided_s28> --anchor agent/checkpoints/default.pt --prefer-rules 0.97 --rule-groups pool \
        --bc-init runs/member1.pt --bc-epochs 30 --bc-lr 3e-4 --bc-lr-end 3e-5
    (runs/v74, v75: --targets-from runs/v73 --prefer-rules 0 from members 2 and 3, seeds 1 and 2)
    mlir-rl-tui ensemble --decode consensus runs/s28/ens14b.pt runs/v73/default.pt runs/v74/default.pt runs/v75/default.pt

Tried on 2026-11-28, not shipped (E15, runs/v79-v81; E15b, runs/v82-v84 with --more ... runs/s29/odd_s30; E15c,
runs/v85-v87: --targets-from runs/v79 instead of --anchor, --more ... runs/s29/odd2_s30): E14b
with the pool rule for rows of 4 columns or more (expert.POOL_MIN_ROW), members 2 and 3 given the first run's
dataset_extra and blocks folders; they took a stride-1 validation pooling of rows of 17 under its baseline
(docs/agent-experiments.md, twenty-ninth session).

Shipped since 2026-11-29, thirtieth session: E15d, E15c's members (runs/v85-v87) deciding by vote (the
transformation more than half of the members chose, each on its own distribution; agent/explain.py), 1.032 of
E13c on the 155 validation programs, nothing newly under 0.95x (docs/agent-experiments.md, thirtieth session):

    mlir-rl-tui train --recipe default --teacher hill --out runs/v85 <runs/v79's data options, --more ...
        runs/s29/odd2_s30> --targets-from runs/v79 --prefer-rules 0.97 --rule-groups pool \
        --bc-init runs/member1.pt --bc-epochs 30 --bc-lr 3e-4 --bc-lr-end 3e-5
    (runs/v86, v87: --targets-from runs/v85 from members 2 and 3, seeds 1 and 2, runs/v85's dataset_extra and
    blocks folders copied in first)
    mlir-rl-tui ensemble --decode vote agent/checkpoints/default.pt runs/v85/default.pt runs/v86/default.pt \
        runs/v87/default.pt

Training starts from one policy: `mlir-rl-tui ensemble --member K OUT agent/checkpoints/default.pt` writes the
K-th member (1: runs/v34) for --bc-init or --init (PPO) to start from.

`--demos`, `--choose-by`, `--confirm` (the teacher's best and runners-up timed again side by side),
longer cloning, `--start-from` (expert iteration: a climb from the policy's own schedule) and
`--rule-groups TF+rows serial vector tiny` (two more rules) did not beat the same recipe without them on
validation programs; `--prefer-rules` did (docs/agent-experiments.md).
"""

from __future__ import annotations

import glob
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import MISSING, dataclass, field, fields

from mlir_rl_tui.agent.evaluate import gmean
from mlir_rl_tui.engine import samples

CHECKPOINTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints")
RECIPES = ("default",)
TEACHERS = ("recipe", "hill")


@dataclass
class DefaultRecipe:
    """The options of the `default` recipe: each field is the `train --recipe default` option of its name,
    its docstring the option's help (a field without one means what the PPO option of its name means)."""

    out: str = "runs/default"
    """folder of the run: generated data sets, traces, bc.pt, bc.csv, ppo/, default.pt, default.json"""
    programs: str | None = None
    """one engine.dataset folder, whose train split is used (default: generate OUT/dataset with --n programs)"""
    n: int = 60
    """programs to generate when --programs is not given"""
    extra: int = 0
    """extra training programs drawn with --extra-seed (all of them train)"""
    extra_dir: str | None = None
    """folder of the extra programs (default OUT/dataset_extra)"""
    extra_seed: int = 1
    """seed of the extra programs"""
    more: list[str] = field(default_factory=list)
    """more engine.dataset folders, all used for training"""
    blocks: int = 0
    """torch-mlir exports of model blocks at drawn sizes to train on (agent.block_programs, OUT/blocks)"""
    teacher: str = "recipe"
    """recipe: agent.teacher.recipe_search (regular schedules); hill: engine.search hill climbing"""
    exclude: list[str] = field(default_factory=lambda: ["samples"])
    """programs never to train on besides the eval split, by content: folders or .mlir files (alone: none)"""
    budget: int = 30
    """teacher measurements per training program"""
    keep_baseline: float = 1.1
    """below this best speedup the imitation target is NT on every op"""
    tolerance: float = 0.0
    """(hill teacher) an op becomes NT when the schedule stays within this factor of the best (e.g. 1.05);
    0: the search's schedule as found. Per-op NT at 1.05 taught the policy to leave ops alone that matter
    in other programs (0.73 of hill climbing @50 on the evaluation programs, against 0.90 without)"""
    demos: int = 1
    """(hill teacher) schedules imitated per program: the search's best and up to DEMOS-1 runners-up within
    --demo-ratio of it from its measurements, weighted exp(log(speedup/best)/--demo-temperature) (AWR)"""
    demo_ratio: float = 0.9
    """(with --demos) runners-up at least this fraction of the search's best"""
    demo_temperature: float = 0.05
    """(with --demos) temperature of the runners-up's weights: a runner-up 5% slower weighs exp(-0.05/T)"""
    choose_by: str | None = None
    """(with --demos) imitate per program only the one of its demonstrations this policy checkpoint finds most
    likely (mean log-probability per decision; e.g. the bc.pt of the same recipe without it): among
    schedules within --demo-ratio of the best, the one consistent with the other programs' targets"""
    confirm: int = 0
    """(hill teacher) the search's best and up to CONFIRM-1 runners-up within --demo-ratio of it are measured
    again, fresh and interleaved, --confirm-rounds times; the target is the one with the fastest run (NT on
    every op when that is under --keep-baseline). 0: the best as found"""
    confirm_rounds: int = 3
    """(with --confirm or --prefer-rules) rounds of the fresh, interleaved measurements"""
    prefer_rules: float = 0.0
    """(hill teacher) the target with a group of expert.rule_variant's rules applied (--rule-groups) replaces
    the target when, timed again side by side with it (--confirm-rounds), its fastest run is at least this
    fraction of the target's (e.g. 0.97); each group in turn. 0: off"""
    rule_groups: list[str] = field(default_factory=lambda: ["TF+rows", "serial"])
    """(with --prefer-rules) the rule groups, in order, rules in a group joined by +: TF (TF where a TP op's
    producer is the output's fill), rows (row tiles on 2-D elementwise ops), serial (T for TP under 16,384
    iterations), vector (rows and V on elementwise ops of 4,096 iterations or more left without V, in a
    target that keeps the baseline too), tiny (T for TF under 4,096 iterations), depthwise (one output pixel
    and 32 channels per tile, 8 per register tile, on NCHW depthwise convolutions), pool (row tiles on NCHW
    poolings whose output rows are at least 4 wide), block (one serial 16x32 register tile and V on 2-D
    elementwise ops under 4,096 iterations, in place of rows), conv (one output row per register tile, the
    reductions as scalar loops, on NCHW convolutions larger than 1x1 with rows of 8 or more); the shipped
    recipe's: TF+rows serial"""
    targets_from: str | None = None
    """imitate the targets of an earlier run of this recipe (its OUT/traces/target, the same programs: give
    the same data options) instead of searching, each with its speedup from the measurement cache: another
    cloning of the same targets (--seed, --bc-epochs), e.g. a member of an ensemble (`mlir-rl-tui ensemble`);
    with --prefer-rules, the --rule-groups are checked on those targets (a group that changes nothing on a
    target is not timed), e.g. `--rule-groups depthwise pool` for rules the earlier run did not have; a program
    it has no target for (e.g. in a folder added last to --more) goes to the teacher as in a run without it"""
    anchor: str | None = None
    """imitate this policy checkpoint's own one-pass schedule on each training program instead of searching
    (with --prefer-rules, the --rule-groups checked on it): with --bc-init, a fine-tuning that changes the
    decisions where a checked rule beats the policy and holds every other decision where the policy has it
    (a fine-tuning on the teacher's targets also flips near-ties the rules never touch)"""
    start_from: str | None = None
    """(hill teacher) expert iteration: on each training program hill climbing again from this policy
    checkpoint's one-pass schedule (--start-budget measurements); its best replaces the target when, timed
    again side by side with it (--confirm-rounds), its fastest run is at least --start-prefer times the
    target's (before --prefer-rules' checks)"""
    start_budget: int = 15
    """(with --start-from) measurements of the climb from the policy's schedule"""
    start_prefer: float = 0.97
    """(with --start-from) the climb's best replaces the target at this fraction of its figure or more"""
    bc_init: str | None = None
    """start the cloning from this policy checkpoint's weights (e.g. the shipped one) instead of random ones:
    on targets that changed in a few programs (e.g. --targets-from with a new --rule-groups), a short
    fine-tuning (fewer --bc-epochs, lower --bc-lr) moves the decisions they teach and leaves the near-ties
    elsewhere as the checkpoint breaks them, where a cloning from scratch breaks them anew"""
    bc_epochs: int = 60
    bc_lr: float = 1e-3
    """behaviour-cloning learning rate"""
    bc_lr_end: float | None = None
    """the cloning learning rate decays along a cosine to this by the last epoch (default: constant)"""
    iterations: int = 0
    programs_per_batch: int = 64
    learning_rate: float = 1e-4
    target_kl: float | None = 0.02
    seed: int = 0
    runs: int = 3
    threads: int = 2
    """programs the teacher searches at once, and torch threads"""
    limit: int | None = None
    """train on the first LIMIT training programs only (a quick check of the pipeline)"""
    ship: bool = False
    """copy default.pt and default.json to agent/checkpoints/, where the shipped policy is"""

    def command(self) -> str:
        """The command line that runs this recipe (recorded in default.json)."""
        words = ["mlir-rl-tui", "train", "--recipe", "default"]
        for f in fields(self):
            v = getattr(self, f.name)
            if v == (f.default_factory() if f.default_factory is not MISSING else f.default):
                continue
            flag = "--" + f.name.replace("_", "-")
            if isinstance(v, bool):
                words.append(flag)
            elif isinstance(v, list):
                words += [flag, *map(str, v)]
            else:
                words += [flag, str(v)]
        return " ".join(words)


def training_programs(r: DefaultRecipe, eng, log: Callable[[str], None]) -> tuple[list, dict]:
    """(programs, description): the main data set's train split plus the extra draws, minus eval look-alikes."""
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.dataset import generate, read_manifest

    main_dir = r.programs or os.path.join(r.out, "dataset")
    if not os.path.exists(os.path.join(main_dir, "manifest.json")):
        log(f"generating {r.n} programs into {main_dir} (engine.dataset, seed {r.seed})")
        generate(main_dir, r.n, seed=r.seed, engine=eng)
    man = read_manifest(main_dir)
    train = [e["abspath"] for e in man["programs"] if e.get("split") == "train"]
    banned = {e["sha256"] for e in man["programs"] if e.get("split") != "train"}
    for spec in map(samples.program, r.exclude):  # `samples`: the shipped ones, also outside a checkout
        files = sorted(glob.glob(os.path.join(spec, "*.mlir"))) if os.path.isdir(spec) else [spec]
        banned |= {load_file(f).sha256 for f in files}
    extra: list[str] = []
    dirs: list[str] = []
    if r.extra:
        extra_dir = r.extra_dir or os.path.join(r.out, "dataset_extra")
        if not os.path.exists(os.path.join(extra_dir, "manifest.json")):
            log(f"generating {r.extra} extra programs into {extra_dir} (engine.dataset, seed {r.extra_seed})")
            generate(extra_dir, r.extra, seed=r.extra_seed, engine=eng, eval_fraction=0.0)
        dirs.insert(0, extra_dir)
    if r.blocks:
        from mlir_rl_tui.agent.block_programs import export_blocks

        blocks_dir = os.path.join(r.out, "blocks")
        if not os.path.exists(os.path.join(blocks_dir, "manifest.json")):
            log(f"exporting {r.blocks} model blocks into {blocks_dir} (agent.block_programs, seed {r.seed})")
            export_blocks(blocks_dir, r.blocks, seed=r.seed)
        dirs.append(blocks_dir)
    dirs += r.more  # last: adding a folder leaves the earlier programs' indices (and search seeds) as they were
    seen = {load_file(p).sha256 for p in train}
    for d in dirs:
        ex = read_manifest(d)
        ok = [e for e in ex["programs"] if e["sha256"] not in banned and e["sha256"] not in seen]
        seen |= {e["sha256"] for e in ok}
        extra += [e["abspath"] for e in ok]
        log(f"{len(ok)} extra programs from {d} ({len(ex['programs']) - len(ok)} equal to an eval/excluded/"
            "earlier program dropped)")
    paths = (train + extra)[:r.limit] if r.limit is not None else train + extra
    return [load_file(p) for p in paths], {"main": main_dir, "main_train": len(train), "extra": dirs,
                                           "extra_programs": len(extra), "excluded": r.exclude, "limit": r.limit}


def consistent_targets(train: list, demos: list[list[tuple]], policy_path: str) -> tuple[list[list[tuple]], int]:
    """Per program, the one demonstration (schedule, speedup, weight) the policy at `policy_path` finds most
    likely, with weight 1; and how many programs got another than the search's best.

    The targets of near-equal ops in different programs are different draws among schedules whose timings
    overlap (hill climbing's best is one of them): imitated as found, they contradict each other and the cloned
    policy is a compromise (seen: the policy shipped before 2026-11-25 tiles the evaluation blocks' 4-D batch-norm
    ops with T where 109 of 173 of the training blocks' such ops have TP). Choosing among schedules within --demo-ratio
    the one a cloned policy predicts best keeps the targets near-best and makes them agree."""
    from mlir_rl_tui.agent import bc, expert
    from mlir_rl_tui.agent.policy import load
    from mlir_rl_tui.engine.errors import EngineError

    model, _ = load(policy_path)
    model.eval()
    out, changed = [], 0
    for prog, program_demos in zip(train, demos):
        scored = []
        for n_demo, (sched, sp, _w) in enumerate(program_demos):
            try:
                fit = expert.policy_target(prog, sched)
                ll = bc.mean_log_likelihood(model, bc.examples_from_schedule(prog, fit))
            except EngineError:
                continue
            scored.append((ll, -n_demo, sched, sp))
        if not scored:
            out.append(program_demos[:1])
            continue
        _ll, neg_n, sched, sp = max(scored, key=lambda x: (x[0], x[1]))
        changed += neg_n != 0
        out.append([(sched, sp, 1.0)])
    return out, changed


def target_folder(run: str) -> str:
    """RUN/traces/target, where a run of the recipe keeps its imitation targets; EngineError when missing."""
    from mlir_rl_tui.engine.errors import EngineError

    folder = os.path.join(run, "traces", "target")
    if not os.path.isdir(folder):
        raise EngineError(f"{run}: no traces/target folder (not the OUT of a `train --recipe default` run)")
    return folder


def earlier_targets(run: str, train: list) -> dict:
    """{program index: target schedule} of an earlier run of the recipe (RUN/traces/target/NNN.jsonl, one
    episode per file; a program it left out has none). Another list of programs is an error: the targets
    would be imitated on the wrong programs."""
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.trace import read_trace

    folder = target_folder(run)
    out = {}
    for i, prog in enumerate(train):
        path = os.path.join(folder, f"{i:03d}.jsonl")
        if not os.path.exists(path):
            continue
        episodes = read_trace(path).episodes()
        if len(episodes) != 1 or episodes[0].program_sha256 != prog.sha256:
            raise EngineError(f"{path}: the target of another program than {os.path.basename(prog.path)}; give "
                              f"the data options of the run that made {run}")
        out[i] = episodes[0].schedule
    if not out:
        raise EngineError(f"{folder}: no targets in it")
    return out


def train_default(r: DefaultRecipe, log: Callable[[str], None] = print,
                  on_progress: Callable[[str], None] | None = None) -> str:
    """Run the `default` recipe (module docstring); returns the path of the chosen policy checkpoint.

    `log` gets the run's log lines (elapsed time first), `on_progress` the state of a long PPO iteration."""
    import torch

    from mlir_rl_tui.agent import bc, expert, ppo
    from mlir_rl_tui.agent.policy import ActorCritic, load, save
    from mlir_rl_tui.agent.suggest import load_policy, to_measure
    from mlir_rl_tui.agent.teacher import recipe_search
    from mlir_rl_tui.engine import Engine, Schedule, Session, to_text
    from mlir_rl_tui.engine.config import MeasureConfig
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.search import search
    from mlir_rl_tui.engine.trace import write_schedule

    if r.teacher not in TEACHERS:
        raise EngineError(f"--teacher is recipe or hill, not {r.teacher}")
    if r.targets_from:
        target_folder(r.targets_from)  # before any program is generated
    if r.targets_from and r.anchor:
        raise EngineError("--targets-from and --anchor are two sources of targets: give one")
    anchor_policy = load_policy(r.anchor) if r.anchor else None  # a bad file: one line before any measurement
    init = load(r.bc_init)[0] if r.bc_init else None  # a bad file: one line before any measurement
    if r.limit is not None and r.limit < 1:
        raise EngineError(f"--limit must be at least 1, not {r.limit}")
    try:
        groups = expert.rule_groups(r.rule_groups)
    except ValueError as e:
        raise EngineError(str(e)) from None
    t0 = time.time()

    def say(msg: str) -> None:
        log(f"[{time.time() - t0:7.1f}s] {msg}")

    os.makedirs(r.out, exist_ok=True)
    dirs = {k: os.path.join(r.out, "traces", k) for k in ("search", "target")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    found_by: dict[int, float] = {}  # program index -> the teacher's speedup
    target_by: dict[int, tuple] = {}  # program index -> (target schedule, its speedup)
    demos_by: dict[int, list] = {}  # program index -> [(schedule, speedup, weight)], the target first
    made = {"search": 0, "targets": 0}
    start_policy = load_policy(r.start_from) if r.start_from else None
    with Engine(config=MeasureConfig(runs=r.runs)) as eng:
        train, data = training_programs(r, eng, say)
        say(f"{len(train)} training programs")

        def one(i: int) -> None:
            try:
                teach(i)
            except EngineError as e:  # e.g. a baseline that does not run or differs from PyTorch: not trained on
                say(f"{i + 1}/{len(train)} {os.path.basename(train[i].path)}: left out: {e}")

        def record(kind: str, i: int, prog, sched, measurement=None) -> None:
            path = os.path.join(dirs[kind], f"{i:03d}.jsonl")
            if os.path.exists(path):  # one episode per file: a re-run (replayed from the cache) replaces it
                os.remove(path)
            write_schedule(path, prog, sched, "search", measurement)

        def teach(i: int) -> None:
            prog = train[i]
            if i in earlier or anchor_policy is not None:
                if anchor_policy is not None:
                    sched = anchor_policy.schedule(Session(prog, openmp=eng.openmp)).schedule
                else:
                    sched = earlier[i]
                measured = to_measure(sched)  # NT on every op: the baseline itself
                sp = 1.0 if not len(measured) else (eng.measure(prog, measured).speedup or 0.0)
                source = f"own schedule of {r.anchor}" if anchor_policy is not None else f"target of {r.targets_from}"
                found_by[i], why = sp, f"{source} {sp:.2f}x"
                if r.prefer_rules > 0:  # groups that change nothing are not timed
                    measured, sp, n, checked = expert.checked_by_rules(eng, prog, measured, sp, r.prefer_rules,
                                                                       r.confirm_rounds, groups)
                    made["targets"] += n
                    why += f"; {checked}" if checked else ""
                target_by[i] = (measured, sp)
                record("target", i, prog, measured if len(measured) else sched)
                say(f"{i + 1}/{len(train)} {os.path.basename(prog.path)}: {why} -> {to_text(measured) or '(baseline)'}")
                return
            if r.teacher == "recipe":
                sched, sp, _, res = recipe_search(eng, prog, r.budget)
                made["search"] += res.evaluated
                record("search", i, prog, sched)
                found_by[i] = sp
                if sp < r.keep_baseline:
                    sched, sp, why = Schedule({}), 1.0, f"best {sp:.2f}x < {r.keep_baseline}x: keep the baseline"
                else:
                    why = f"recipe {sp:.2f}x"
                target_by[i] = (sched, sp)
                record("target", i, prog, sched)
                say(f"{i + 1}/{len(train)} {os.path.basename(prog.path)}: {why} -> {to_text(sched) or '(baseline)'}")
                return
            res = search(eng, prog, "hill", r.budget, seed=r.seed + i)
            made["search"] += res.evaluated
            record("search", i, prog, res.schedule, res.best)
            found_by[i] = res.speedup
            sched, sp, n, why = expert.imitation_target(eng, prog, res.schedule, res.best, r.keep_baseline,
                                                        r.tolerance)
            made["targets"] += n
            if r.confirm > 1 and len(sched) > 0:
                cands = expert.demonstrations(eng, prog, sched, sp, r.confirm, r.demo_ratio)
                ranked = expert.confirmed(eng, prog, [c[0] for c in cands], r.confirm_rounds)
                made["targets"] += sum(len(c[2]) for c in ranked)  # rounds, more while split
                was = to_text(sched)
                sched, sp, runs = ranked[0]
                why += (f"; confirmed {sp:.2f}x ({min(runs):.2f}-{max(runs):.2f}) over {len(cands)}: "
                        + ("the best" if to_text(sched) == was else "a runner-up"))
                if sp < r.keep_baseline:
                    sched, why = Schedule({}), why + f" < {r.keep_baseline}x: keep the baseline"
            if start_policy is not None:
                start = to_measure(start_policy.schedule(Session(prog, openmp=eng.openmp)).schedule)
                sched, sp, n, climbed = expert.improved_by_search(eng, prog, sched, sp, start, r.start_budget,
                                                                  r.seed + i, r.start_prefer, r.confirm_rounds)
                made["targets"] += n
                why += f"; {climbed}"
            if r.prefer_rules > 0:  # a baseline target too: "vector" may beat it
                sched, sp, n, checked = expert.checked_by_rules(eng, prog, sched, sp, r.prefer_rules,
                                                                r.confirm_rounds, groups)
                made["targets"] += n
                why += f"; {checked}" if checked else ""
            target_by[i] = (sched, sp)
            if r.demos > 1 and len(sched) > 0:  # runners-up of a search that beat the baseline
                demos_by[i] = expert.demonstrations(eng, prog, sched, sp, r.demos, r.demo_ratio,
                                                    r.demo_temperature)
            record("target", i, prog, sched)
            say(f"{i + 1}/{len(train)} {os.path.basename(prog.path)}: {why} -> {sched or '(baseline)'}")

        earlier = earlier_targets(r.targets_from, train) if r.targets_from else {}
        with ThreadPoolExecutor(r.threads) as ex:
            if r.targets_from and len(earlier) < len(train):  # e.g. a folder added to --more: searched
                say(f"{len(train) - len(earlier)} training programs without a target in {r.targets_from}: "
                    f"the {r.teacher} teacher searches them")
            list(ex.map(one, range(len(train))))
        left_out = [os.path.basename(p.path) for i, p in enumerate(train) if i not in target_by]
        keep = sorted(target_by)
        train = [train[i] for i in keep]
        targets, found = [target_by[i] for i in keep], [found_by[i] for i in keep]
        demos = [demos_by.get(i) or [(*target_by[i], 1.0)] for i in keep]
    t_search = time.time() - t0

    torch.set_num_threads(r.threads)
    if r.choose_by:
        demos, n_changed = consistent_targets(train, demos, r.choose_by)
        say(f"--choose-by {r.choose_by}: {n_changed} of {len(train)} programs imitate a runner-up")
    examples, unrepresentable = [], []
    for prog, program_demos in zip(train, demos):
        seen: set[str] = set()
        for n_demo, (sched, sp, weight) in enumerate(program_demos):
            try:
                sched = expert.policy_target(prog, sched)
                if to_text(sched) in seen:  # two runners-up the policy can only express alike
                    continue
                seen.add(to_text(sched))
                examples += bc.examples_from_schedule(prog, sched, math.log(max(sp, 1e-3)), weight)
            except EngineError as e:  # not expected after to_candidates: said, and the program left out
                if n_demo == 0:
                    unrepresentable.append(os.path.basename(prog.path))
                    say(f"{os.path.basename(prog.path)}: not imitated: {e}")
                break
    n_nt = sum(1 for t in targets if len(t[0]) == 0)
    n_demos = sum(len(d) for d in demos)
    say(f"BC on {len(examples)} decisions from {n_demos} schedules ({n_nt} of {len(train)} programs keep "
        "the baseline)")
    model = init if init is not None else ActorCritic()
    bc_rows: list[tuple[int, float]] = []
    bc.behaviour_cloning(model, examples, r.bc_epochs, lr=r.bc_lr, seed=r.seed, lr_end=r.bc_lr_end,
                         log=lambda ep, loss: (bc_rows.append((ep, loss)), say(f"BC epoch {ep}: {loss:.3f}")))
    bc_path = os.path.join(r.out, "bc.pt")
    save(model, bc_path, {"trained_by": "bc", "examples": len(examples), "epochs": r.bc_epochs})
    with open(os.path.join(r.out, "bc.csv"), "w") as f:
        f.write("epoch,loss\n" + "".join(f"{e},{x:.5f}\n" for e, x in bc_rows))
    t_bc = time.time() - t0

    candidates = {"bc": bc_path}
    ppo_args = None
    if r.iterations > 0:
        ppo_args = ppo.Args(programs=[p.path for p in train], out=os.path.join(r.out, "ppo"), seed=r.seed,
                            iterations=r.iterations, init=bc_path, threads=r.threads,
                            programs_per_batch=r.programs_per_batch, learning_rate=r.learning_rate,
                            target_kl=r.target_kl, runs=r.runs)
        candidates["ppo"] = ppo.train(ppo_args, on_progress=on_progress, on_iteration=lambda row: say(
            f"PPO it {row['iteration']}: reward {row['charts/reward']:.3f} "
            f"speedup {row['charts/speedup_gmean']:.2f}x cache hits {row['charts/cache_hit_rate']:.2f}"))
    t_ppo = time.time() - t0

    # choose on the TRAINING programs only: greedy one-pass schedules, measured (one candidate: no choice)
    scores: dict[str, float] = {}
    if len(candidates) > 1:
        with Engine(config=MeasureConfig(runs=r.runs)) as eng:
            for name, path in candidates.items():
                pol = load_policy(path)
                sp = []
                for prog in train:
                    sched = to_measure(pol.schedule(Session(prog, openmp=eng.openmp)).schedule)
                    sp.append(eng.measure(prog, sched).speedup or 0.0)
                scores[name] = gmean(sp) or 0.0
                say(f"greedy {name} policy on the training programs: gmean {scores[name]:.2f}x")
    chosen = max(scores, key=lambda k: scores[k]) if scores else next(iter(candidates))
    t_all = time.time() - t0
    info = {
        "command": r.command(),
        "how": (f"the one-pass schedules of {r.anchor} (--anchor) -> imitation targets -> behaviour cloning"
                if r.anchor else
                f"the targets of {r.targets_from} (the {r.teacher} teacher on programs without one) -> behaviour "
                "cloning" if r.targets_from else
                "agent.teacher.recipe_search on the training programs -> imitation targets (NT on every op "
                "where it does not beat the baseline by --keep-baseline) -> behaviour cloning"
                if r.teacher == "recipe" else
                "engine.search hill climbing on the training programs -> imitation targets (NT where the search "
                "does not beat the baseline by --keep-baseline, otherwise its schedule"
                + (", with per-op NT where an op's actions do not help" if r.tolerance > 0 else " as found")
                + ") -> behaviour cloning") + (" -> PPO" if r.iterations else ""),
        "teacher": r.teacher,
        "data": data, "train_programs": len(train), "teacher_budget": r.budget,
        "teacher_measurements": made["search"], "target_measurements": made["targets"],
        "teacher_gmean_speedup": gmean(found), "left_out": left_out, "not_imitated": unrepresentable,
        "target_gmean_speedup": gmean([t[1] for t in targets]),
        "keep_baseline": r.keep_baseline, "tolerance": r.tolerance, "programs_keeping_baseline": n_nt,
        "demos": r.demos, "demo_ratio": r.demo_ratio, "demo_temperature": r.demo_temperature,
        "demo_schedules": n_demos, "choose_by": r.choose_by,
        "confirm": r.confirm, "confirm_rounds": r.confirm_rounds, "prefer_rules": r.prefer_rules,
        "rule_groups": r.rule_groups,
        "targets_from": r.targets_from, "anchor": r.anchor, "start_from": r.start_from,
        "start_budget": r.start_budget, "start_prefer": r.start_prefer,
        "bc_decisions": len(examples), "bc_epochs": r.bc_epochs, "bc_lr": r.bc_lr, "bc_lr_end": r.bc_lr_end,
        "bc_init": r.bc_init,
        "bc_loss": [bc_rows[0][1], bc_rows[-1][1]] if bc_rows else None,
        "ppo": {k: v for k, v in vars(ppo_args).items() if k != "programs"} if ppo_args else None,
        "greedy_train_gmean": scores, "shipped": chosen, "chosen_on": "training programs (greedy, one pass)",
        "seconds": {"search_and_targets": round(t_search), "bc": round(t_bc - t_search),
                    "ppo": round(t_ppo - t_bc), "total": round(t_all)},
        "machine": os.uname().machine, "cores": os.cpu_count(),
    }
    out = os.path.join(r.out, "default.pt")
    shutil.copy(candidates[chosen], out)
    with open(os.path.join(r.out, "default.json"), "w") as f:
        json.dump(info, f, indent=1)
    if r.ship:
        os.makedirs(CHECKPOINTS, exist_ok=True)
        for name in ("default.pt", "default.json"):
            shutil.copy(os.path.join(r.out, name), os.path.join(CHECKPOINTS, name))
        out = os.path.join(CHECKPOINTS, "default.pt")
    say(f"done: {out} ({chosen})")
    return out
