"""Agent: masked multi-discrete sampling, log-probabilities and entropy, behaviour cloning, PPO resume,
`optimize` on real MLIR, and PPO rollouts on a local Ray instance."""

from __future__ import annotations

import csv
import itertools
import json
import math
import os

import numpy as np
import pytest
import torch
from conftest import SAMPLES

from mlir_rl_tui.agent.policy import KIND, distribution, evaluate_actions, sample
from mlir_rl_tui.engine.config import TRANSFORMATIONS
from mlir_rl_tui.engine.schedule.notation import TILED

N, M = 12, 8


def _random_head(rng, b: int = 1, n: int = N, m: int = M, n_i: int = N):
    """Random logits and masks (at least one allowed choice per row) for every head."""
    def mask(*shape):
        mk = rng.random(shape) < 0.4
        idx = np.unravel_index(np.arange(int(np.prod(shape[:-1]))), shape[:-1])
        mk[(*idx, rng.integers(0, shape[-1], len(idx[0])))] = True
        return torch.from_numpy(mk)

    logits = {"transformation": torch.randn(b, 6) * 3, "I": torch.randn(b, n_i) * 3}
    masks = {"transformation": mask(b, 6), "I": mask(b, n_i)}
    for k in TILED:
        logits[k] = torch.randn(b, n, m) * 3
        masks[k] = mask(b, n, m)
    return logits, masks


def test_masked_sampling_never_picks_a_masked_choice():
    rng = np.random.default_rng(0)
    logits, masks = _random_head(rng, b=256)
    logp = distribution(logits, masks)
    g = torch.Generator().manual_seed(0)
    for _ in range(8):
        a = sample(logp, generator=g)
        rows = torch.arange(len(a))
        assert masks["transformation"][rows, a[:, 0]].all()
        for k in TILED:
            used = a[:, 0] == KIND[k]
            chosen = masks[k][rows[:, None], torch.arange(N)[None], a[:, 1:1 + N]]
            assert chosen[used].all()
        used = a[:, 0] == KIND["I"]
        assert masks["I"][rows, a[:, -1]][used].all()
        lp, _ = evaluate_actions(logp, masks, a)
        assert torch.isfinite(lp).all() and (lp <= 1e-6).all()


def test_log_prob_and_entropy_match_brute_force_on_a_toy_mask():
    """Two loops, three tile sizes: enumerate every full action of the hierarchical distribution."""
    rng = np.random.default_rng(1)
    n, m = 2, 3
    logits, masks = _random_head(rng, b=1, n=n, m=m, n_i=n)
    masks["transformation"][0] = torch.tensor([True, True, False, True, False, True])
    masks["T"][0, 1] = torch.tensor([True, False, True])
    logp = distribution(logits, masks)
    probs = {k: torch.softmax(torch.where(masks[k], logits[k], torch.tensor(-1e9)), -1)[0] for k in logits}
    joint = []
    for ki, kind in enumerate(TRANSFORMATIONS):
        pk = float(probs["transformation"][ki]) * bool(masks["transformation"][0, ki])
        if pk == 0:
            continue
        if kind in TILED:
            for s in itertools.product(range(m), repeat=n):
                p = pk * math.prod(float(probs[kind][r, s[r]]) for r in range(n))
                joint.append(([ki, *s, 0], p))
        elif kind == "I":
            for loop in range(n):
                joint.append(([ki, 0, 0, loop], pk * float(probs["I"][loop])))
        else:
            joint.append(([ki, 0, 0, 0], pk))
    total = sum(p for _, p in joint)
    assert total == pytest.approx(1.0, abs=1e-5)
    brute_entropy = -sum(p * math.log(p) for _, p in joint if p > 0)
    acts = torch.tensor([a for a, _ in joint])
    lp, ent = evaluate_actions({k: v.expand(len(acts), *v.shape[1:]) for k, v in logp.items()},
                               {k: v.expand(len(acts), *v.shape[1:]) for k, v in masks.items()}, acts)
    for (a, p), x in zip(joint, lp.tolist()):
        if p > 1e-12:
            assert x == pytest.approx(math.log(p), abs=1e-4), a
    assert float(ent[0]) == pytest.approx(brute_entropy, abs=1e-4)


def test_one_decoder_for_sampled_vectors_in_both_interchange_formulations(matmul):
    from mlir_rl_tui.agent.policy import masks_for
    from mlir_rl_tui.engine import Action, Session
    from mlir_rl_tui.engine.rl.actions import apply_vector, enumerated_candidates, to_action

    sess = Session(matmul)
    v = np.zeros(14, np.int64)
    v[0], v[13] = KIND["I"], 0  # candidate 0: swap loops 0 and 1; as a level pointer: loop 0 first
    assert enumerated_candidates(12)[0] == (0, 1) and len(enumerated_candidates(12)) == 3 * 12 - 6
    assert to_action(sess, v, "enumerated") == ("action", Action("I", (1, 0, 2)))
    assert to_action(sess, v) == ("point", 0)
    assert apply_vector(sess, v, "enumerated").schedule.actions("op0") == [Action("I", (1, 0, 2))]
    assert masks_for(sess, interchange="enumerated")["I"].tolist()[:3] == [True, True, False]  # 3 loops
    v[0], v[1:4] = KIND["TP"], [6, 6, 6]  # 32 on every loop: the reduction loop is not tiled in parallel
    assert to_action(sess, v) == ("action", Action("TP", (32, 32, 0)))


def test_behaviour_cloning_reproduces_the_trace(tmp_path, matmul):
    from mlir_rl_tui.agent.bc import behaviour_cloning, examples_from_trace
    from mlir_rl_tui.agent.policy import ActorCritic, load, save
    from mlir_rl_tui.agent.suggest import Policy
    from mlir_rl_tui.engine import Session, parse
    from mlir_rl_tui.engine.rl.trace import write_schedule

    sched = parse("op0: TF(64,64,0) I(1,0,2) T(8,32,1) V; op1: NT")  # includes level-pointer steps
    trace = tmp_path / "t.jsonl"
    write_schedule(str(trace), matmul, sched, "search")
    examples = examples_from_trace(str(trace), [matmul])
    assert len(examples) == 3 + 3 + 1  # TF, 3 pointers, T, V, NT on op1
    torch.manual_seed(0)
    model = ActorCritic()
    losses = behaviour_cloning(model, examples, epochs=80, seed=0)
    assert losses[-1] < 0.25 * losses[0]
    pol = Policy(model)
    assert pol.schedule(Session(matmul)).schedule == sched
    save(model, str(tmp_path / "bc.pt"))  # a freshly trained policy, through the checkpoint format and back
    assert Policy(load(str(tmp_path / "bc.pt"))[0]).schedule(Session(matmul)).schedule == sched
    action, top = pol.suggest(Session(matmul), k=3)
    assert str(action) == "TF(64,64,0)" and top[0][0] == "TF(64,64,0)" and top[0][1] > 0.5
    assert len(top) == 3 and top[0][1] >= top[1][1] >= top[2][1]


def test_imitation_targets_keep_the_baseline_and_end_missing_ops_with_nt(matmul):
    from mlir_rl_tui.agent.expert import imitation_target, legal_schedule
    from mlir_rl_tui.engine import Schedule, parse
    from mlir_rl_tui.engine.measure.measurement import Measurement

    # an op without actions (or with actions no longer legal) ends with NT
    assert str(legal_schedule(matmul, {})) == "op0: NT; op1: NT"
    assert str(legal_schedule(matmul, {"op0": parse("op0: T(8,32,1) V").actions("op0")})) == "op0: T(8,32,1) V; op1: NT"
    # a search result not clearly better than the baseline: the target is the untransformed program
    m = Measurement("ok", "op0: T(8,32,1) V", time_ms=1.0, baseline_ms=1.05, speedup=1.05)
    sched, sp, made, why = imitation_target(None, matmul, parse("op0: T(8,32,1) V"), m, keep_baseline=1.1)
    assert sched == Schedule({}) and sp == 1.0 and made == 0 and "baseline" in why
    # a good one: the search's schedule as found, nothing measured
    import types

    m = Measurement("ok", "op0: T(8,32,1) V", time_ms=1.0, baseline_ms=3.0, speedup=3.0)
    sched, sp, made, why = imitation_target(types.SimpleNamespace(openmp=True), matmul, parse("op0: T(8,32,1) V"), m)
    assert str(sched) == "op0: T(8,32,1) V; op1: NT" and sp == 3.0 and made == 0 and "3.00x" in why


def test_search_tile_sizes_beyond_the_candidates_become_ones_the_policy_can_choose(matmul):
    """Hill climbing tiles by any divisor (T(1,768)); the imitation target uses the policy's candidates: a
    size covering the whole loop is the untiled loop (0), any other the largest candidate below it."""
    from mlir_rl_tui.agent.bc import examples_from_schedule
    from mlir_rl_tui.agent.expert import legal_schedule, to_candidates
    from mlir_rl_tui.engine import EngineError, parse

    extent = matmul.ops[1].loops[1].bound  # op1: the fill of the result
    wide = parse(f"op0: TP(32,32,0) T(8,32,1) V; op1: T(1,{extent}) V")
    with pytest.raises(EngineError, match="outside"):
        examples_from_schedule(matmul, wide)
    fitted = legal_schedule(matmul, wide.ops, fit=to_candidates)
    assert str(fitted) == "op0: TP(32,32,0) T(8,32,1) V; op1: T(1,0) V" and examples_from_schedule(matmul, fitted)
    odd = legal_schedule(matmul, parse("op0: T(24,48,0) V").ops, fit=to_candidates)
    assert str(odd).startswith("op0: T(16,32,0)")


def test_the_policy_imitates_no_tiling_that_tiles_nothing(matmul):
    """Hill climbing repeats tilings (`T(16)` on a loop of 16; `T(8,32,1)` on an 8x32x1 tile): no code
    (engine.schedule.state.effective), so the imitation target leaves them out rather than teach the policy to spend
    its tau on them; a size the policy cannot choose that covers the loop becomes such a tiling too."""
    from mlir_rl_tui.agent.bc import examples_from_schedule
    from mlir_rl_tui.agent.expert import policy_target
    from mlir_rl_tui.engine import parse

    extent = matmul.ops[1].loops[1].bound
    sched = parse(f"op0: TP(32,32,0) T(8,32,1) T(8,32,1) V; op1: T(1,{extent}) T(1,0) NT")
    target = policy_target(matmul, sched)
    assert str(target) == "op0: TP(32,32,0) T(8,32,1) V; op1: T(1,0) NT"
    assert len(examples_from_schedule(matmul, target)) < len(examples_from_schedule(
        matmul, parse("op0: TP(32,32,0) T(8,32,1) T(8,32,1) V; op1: T(1,0) NT")))


def test_training_resumes_from_a_checkpoint(tmp_path, cache_dir, capsys):
    from mlir_rl_tui.agent import checkpoint, ppo
    from mlir_rl_tui.agent.policy import load
    from mlir_rl_tui.commands import main

    args = ppo.Args(programs=[str(SAMPLES / "relu.mlir")], out=str(tmp_path / "run"), iterations=1,
                    programs_per_batch=2, minibatch_size=4, update_epochs=1, runs=1)
    ppo.train(args)
    _, first = checkpoint.load(str(tmp_path / "run" / "last.pt"), "ppo-state")  # tensors + JSON, no pickle
    assert first["iteration"] == 1
    assert main(["train", "--programs", args.programs[0], "--out", args.out, "--iterations", "2", "--resume",
                 "--programs-per-batch", "2", "--minibatch-size", "4", "--update-epochs", "1", "--runs", "1"]) == 0
    _, last = checkpoint.load(str(tmp_path / "run" / "last.pt"), "ppo-state")
    assert last["iteration"] == 2 and last["global_step"] > first["global_step"]
    load(str(tmp_path / "run" / "policy.pt"))  # the trained policy loads like the shipped one
    with open(tmp_path / "run" / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["iteration"] for r in rows] == ["1", "2"]
    assert 0.0 <= float(rows[1]["charts/cache_hit_rate"]) <= 1.0


def test_ppo_rollouts_rewarded_by_the_cost_model_measure_a_fraction(tmp_path, cache_dir):
    """--cost-model: a seeded share of the episodes is measured, the rest rewarded with the prediction, and
    the log says how far the model was from the measured ones."""
    from mlir_rl_tui.agent import ppo
    from mlir_rl_tui.agent.costmodel import load_cost_model
    from mlir_rl_tui.agent.policy import ActorCritic
    from mlir_rl_tui.engine import Engine, load_file

    assert load_cost_model() is not None  # the shipped one
    progs = [load_file(str(SAMPLES / n)) for n in ("matmul.mlir", "relu.mlir")]
    with Engine() as eng:
        eps = ppo.collect(ActorCritic(), progs, [0, 1, 0, 1, 0, 1, 0, 1], eng, seed=3,
                          cost_model=ppo._cost_model("shipped"), measured_fraction=0.5)
        measured = eng.evaluated
    assert 0 < sum(e.measured for e in eps) < len(eps)
    assert measured <= sum(e.measured for e in eps) + len(progs)  # (+ each program's baseline)
    for e in eps:
        assert e.predicted and e.predicted > 0
        if e.measured:
            assert e.status != "predicted"
        else:
            assert e.status == "predicted" and e.reward == pytest.approx(math.log(e.predicted))
    args = ppo.Args(programs=[str(SAMPLES / "relu.mlir")], out=str(tmp_path / "cm"), iterations=1,
                    programs_per_batch=4, minibatch_size=4, update_epochs=1, runs=1, cost_model="shipped",
                    measured_fraction=0.5)
    ppo.train(args)
    with open(tmp_path / "cm" / "progress.csv") as f:
        row = next(csv.DictReader(f))
    assert 0 < int(row["charts/measured_episodes"]) < 4  # a seeded share of the 4: neither none nor all


def _policy_checkpoint(tmp_path, matmul) -> str:
    """The shipped policy, or (before one ships) one cloned from the reference matmul schedule."""
    from mlir_rl_tui.agent.suggest import DEFAULT_CHECKPOINT

    if os.path.exists(DEFAULT_CHECKPOINT):
        return DEFAULT_CHECKPOINT
    from mlir_rl_tui.agent.bc import behaviour_cloning, examples_from_schedule
    from mlir_rl_tui.agent.policy import ActorCritic, save
    from mlir_rl_tui.engine import parse

    model = ActorCritic()
    behaviour_cloning(model, examples_from_schedule(matmul, parse("op0: TF(64,64,0) T(8,32,1) V")), epochs=60)
    path = str(tmp_path / "p.pt")
    save(model, path)
    return path


def test_optimize_matmul_is_validated(tmp_path, matmul, cache_dir, capsys):
    from mlir_rl_tui.commands import main

    ckpt = _policy_checkpoint(tmp_path, matmul)
    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--json", "--policy", ckpt, "--runs", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "ok" and out["validated"] and out["speedup"] > 1.0
    assert 0 < out["policy_ms"] < 100 and out["decisions"] >= 2


def test_evaluate_measures_policy_and_search_alike(tmp_path, matmul, cache_dir, capsys):
    from mlir_rl_tui.commands import main

    ckpt = _policy_checkpoint(tmp_path, matmul)
    files = [str(SAMPLES / "matmul.mlir"), str(SAMPLES / "relu.mlir")]
    assert main(["evaluate", "--programs", *files, "--policy", ckpt, "--budget", "4", "2", "--no-torch", "--json",
                 "--runs", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {os.path.basename(r["program"]): r for r in out["programs"]}
    assert set(rows) == {"matmul.mlir", "relu.mlir"} and out["hill_budgets"] == [2, 4]
    mm = rows["matmul.mlir"]
    assert mm["policy_status"] == "ok" and mm["policy"] > 1.0  # the cloned TF+T+V schedule
    assert "V" in mm["policy_schedule"]
    for r in rows.values():  # the search's best, re-measured, next to what the search saw
        for k in ("hill@2", "hill@4"):
            assert r[k] and r[f"{k}_found"] and r[f"{k}_found"] >= 1.0
            if not r[f"{k}_schedule"]:
                assert r[k] == r[f"{k}_found"] == 1.0  # kept the baseline: nothing to re-measure
        # more measurements on the same path: never worse, but for a figure timed while another process used
        # a core, which is not cached and is measured again by the longer search
        assert r["hill@4_found"] >= r["hill@2_found"] / 1.15
        for k in ("policy", "hill@2", "hill@4"):  # each figure is the fastest of its rounds (engine.measure.remeasure)
            assert len(r[f"{k}_runs"]) == r["rounds"] >= 3 and r[k] == pytest.approx(max(r[f"{k}_runs"]), abs=1e-4)
        assert r["hill@4_replayed"] >= r["hill@2_measured"]  # its first candidates are hill@2's, from the cache
    g = out["gmean"]
    for k in ("hill@2", "hill@4"):
        assert g[f"policy_over_{k}"] == pytest.approx(g["policy"] / g[k])
        assert g[f"{k}_measured"] == sum(r[f"{k}_measured"] for r in rows.values())


def test_evaluate_measures_several_policies_in_the_same_rounds(tmp_path, cache_dir, capsys):
    """`evaluate --policy A B C`: every policy's schedule in the same rounds (one that schedules like the first
    shares its runs: ratio exactly 1), each compared with the first program by program; with --only-differing a
    program they all schedule alike is not measured and counts 1.0; the table names them; the rows file records
    them all, so a call with other policies is refused in one line."""
    from mlir_rl_tui.commands import main

    paths = _three_policies(tmp_path)
    rows, prog = str(tmp_path / "rows.jsonl"), tmp_path / "mm64.mlir"
    prog.write_text((SAMPLES / "matmul.mlir").read_text().replace("256", "64"))  # C schedules it unlike A
    relu = str(SAMPLES / "relu.mlir")  # all three schedule it alike
    args = ["evaluate", "--programs", relu, str(prog), "--policy", paths["A"], paths["B"], paths["C"],
            "--no-search", "--no-torch", "--rounds", "1", "--only-differing", "--rows", rows]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (same, row), g = out["programs"], out["gmean"]
    assert out["policy"] == paths["A"] and out["policy_B"] == paths["B"] and out["policy_C"] == paths["C"]
    assert same["timed"] is False and "policy" not in same and row.get("timed", True)
    assert same["policy_schedule"] == same["policy_B_schedule"] == same["policy_C_schedule"]
    assert row["policy_schedule"] == row["policy_B_schedule"] and row["policy_B_runs"] == row["policy_runs"]
    assert row["policy_C_schedule"] != row["policy_schedule"]  # its large random weights choose otherwise
    assert row["policy"] > 0 and row["policy_C"] > 0 and len(row["policy_C_runs"]) == row["rounds"]
    assert g["not_timed"] == 1 and g["policy_B_over_policy"] == 1.0 and g["policy_B_same_schedule"] == 2
    assert g["policy_C_over_policy"] == pytest.approx(math.sqrt(row["policy_C"] / row["policy"]))  # relu: 1.0
    assert g["policy"] == pytest.approx(row["policy"])  # an untimed program is in no geometric mean
    for k in ("policy_B", "policy_C"):
        assert row[f"{k}_below_baseline"] == (row[k] < 0.95) and g[f"{k}_failed"] == 0
        assert g[f"{k}_below_baseline"] == int(row[f"{k}_below_baseline"]) and out[f"{k}_ms"] > 0
    assert main(args) == 0  # the same call again: the rows from the file, shown as a table
    table = capsys.readouterr().out
    assert "B / policy: 1.000 per program" in table and "C / policy:" in table and paths["C"] in table
    assert "not measured, every policy schedules it alike (1 of 2 programs" in table
    assert main([*args[:5], paths["A"], paths["C"], *args[8:]]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds rows of another evaluation" in err and "\n" not in err
    assert main([*args[:6], *args[8:]]) == 2  # --only-differing with one policy
    assert "give two or more to --policy" in capsys.readouterr().err


def test_optimize_errors_are_one_line(tmp_path, capsys):
    from mlir_rl_tui.commands import main

    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--policy", str(tmp_path / "missing.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no such policy checkpoint" in err and "\n" not in err


def test_ppo_rollouts_on_a_local_ray_instance(tmp_path, cache_dir):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'mlir-rl-tui[ray]')")
    from mlir_rl_tui.agent import ppo

    args = ppo.Args(programs=[str(SAMPLES / "relu.mlir")], out=str(tmp_path / "ray"), iterations=1,
                    programs_per_batch=2, minibatch_size=4, update_epochs=1, runs=1, ray_address="local",
                    ray_tasks=1)
    try:
        ppo.train(args)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    with open(tmp_path / "ray" / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and float(rows[0]["charts/valid_rate"]) > 0


def _three_policies(tmp_path) -> dict[str, str]:
    """Three checkpoints: A and B the same small policy, C one of large random weights (other schedules)."""
    from mlir_rl_tui.agent.policy import ActorCritic, PolicyConfig, save

    torch.manual_seed(0)
    small = PolicyConfig(hidden=16, layers=1)
    a, c = ActorCritic(config=small), ActorCritic(config=small)
    for lin in [c.transformation, *c.tile.values()]:
        torch.nn.init.normal_(lin.weight, std=1.0)
    paths = {k: str(tmp_path / f"{k}.pt") for k in "ABC"}
    save(a, paths["A"])
    save(a, paths["B"])
    save(c, paths["C"])
    return paths


def test_gae_against_hand_computed_values():
    """One episode of three decisions, its reward (1.0) on the last: delta_t = r_t + gamma V_{t+1} - V_t,
    A_t = delta_t + gamma lambda A_{t+1}, returns A_t + V_t."""
    from mlir_rl_tui.agent.ppo import Rollout, gae

    ep = Rollout(program=0, values=[0.5, 0.2, 0.1], reward=1.0)
    adv, ret = gae(ep, gamma=1.0, lam=0.95)
    # A_2 = 1 - 0.1 = 0.9; A_1 = (0.1 - 0.2) + 0.95 * 0.9 = 0.755; A_0 = (0.2 - 0.5) + 0.95 * 0.755 = 0.41725
    assert adv.tolist() == pytest.approx([0.41725, 0.755, 0.9])
    assert ret.tolist() == pytest.approx([0.91725, 0.955, 1.0])
    adv, ret = gae(ep, gamma=1.0, lam=1.0)  # lambda 1: Monte Carlo, every return is the episode's reward
    assert ret.tolist() == pytest.approx([1.0, 1.0, 1.0])
    adv, _ = gae(ep, gamma=0.5, lam=0.0)  # lambda 0: one-step TD errors
    assert adv.tolist() == pytest.approx([0.2 * 0.5 - 0.5, 0.1 * 0.5 - 0.2, 0.9])


def test_the_clipped_ppo_loss_against_hand_computed_values():
    """Ratios 1.5 (advantage +1) and 0.5 (advantage -1), clip 0.2: each term is the pessimistic one,
    -1.2 and 0.8 (both clipped); the value loss is half the mean squared error."""
    import math

    import torch

    from mlir_rl_tui.agent.ppo import clipped_losses

    new = torch.log(torch.tensor([1.5, 0.5]))
    pg, v, kl, clipfrac = clipped_losses(new, torch.zeros(2), torch.tensor([1.0, -1.0]), torch.tensor([0.5, 1.0]),
                                         torch.tensor([1.0, 0.0]), clip_coef=0.2, norm_adv=False)
    assert float(pg) == pytest.approx(-0.2) and float(v) == pytest.approx(0.3125)
    assert float(clipfrac) == 1.0
    assert float(kl) == pytest.approx(((0.5 - math.log(1.5)) + (-0.5 - math.log(0.5))) / 2)
    # inside the clip range the loss is the plain surrogate -A * ratio
    pg, *_ = clipped_losses(torch.log(torch.tensor([1.1, 0.9])), torch.zeros(2), torch.tensor([1.0, -1.0]),
                            torch.zeros(2), torch.zeros(2), clip_coef=0.2, norm_adv=False)
    assert float(pg) == pytest.approx((-1.1 + 0.9) / 2)
