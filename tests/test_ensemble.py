"""Policy ensembles (agent.policy.Ensemble): the mixture of the members' distributions, the checkpoint that
holds them, scheduling a real program with it, and the one-line refusals (training from an ensemble, members of
different layouts, the command's bad arguments)."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import SAMPLES, cli

from mlir_rl_tui.agent.checkpoint import CheckpointError
from mlir_rl_tui.agent.policy import ActorCritic, Ensemble, PolicyConfig, load, save, save_ensemble
from mlir_rl_tui.agent.suggest import Policy, load_policy
from mlir_rl_tui.engine import Session

SMALL = PolicyConfig(hidden=16, layers=1)


def member(seed: int, config: PolicyConfig = SMALL) -> ActorCritic:
    torch.manual_seed(seed)
    m = ActorCritic(config=config)
    for lin in [m.transformation, m.interchange, *m.tile.values()]:
        torch.nn.init.normal_(lin.weight, std=1.0)  # far from uniform: members that disagree
    return m.eval()


def test_each_head_is_the_mean_of_the_members_distributions(matmul):
    a, b = member(0), member(1)
    obs = torch.from_numpy(Session(matmul).observation())[None]
    with torch.no_grad():
        (la, va), (lb, vb) = a(obs), b(obs)
        le, ve = Ensemble([a, b])(obs)
    for k in la:
        mean = (torch.softmax(la[k], -1) + torch.softmax(lb[k], -1)) / 2
        assert torch.allclose(le[k].exp(), mean, atol=1e-6), k
        assert not torch.allclose(torch.softmax(la[k], -1), torch.softmax(lb[k], -1), atol=1e-3), k
    assert torch.allclose(ve, (va + vb) / 2)
    with torch.no_grad():  # one member twice: exactly that member's distribution
        same, _ = Ensemble([a, a])(obs)
    for k in la:
        assert torch.allclose(same[k].exp(), torch.softmax(la[k], -1), atol=1e-6)


def test_an_ensemble_checkpoint_schedules_a_program_and_does_not_train(tmp_path, matmul):
    paths = [str(tmp_path / f"{i}.pt") for i in range(3)]
    for i, p in enumerate(paths):
        save(member(i), p)
    out = str(tmp_path / "ens.pt")
    save_ensemble(paths, out)
    pol = load_policy(out)
    assert isinstance(pol.model, Ensemble) and len(pol.model.members) == 3
    done = pol.schedule(Session(matmul))
    assert done.done
    # the file's members are the policies given (float16, as `save` writes them)
    direct = Policy(Ensemble([load(p)[0] for p in paths])).schedule(Session(matmul))
    assert done.schedule == direct.schedule
    with pytest.raises(CheckpointError, match="an ensemble of 3 policies.*start from one of its members"):
        load(out)  # what train --init and PPO call
    with pytest.raises(CheckpointError, match="already an ensemble"):
        save_ensemble([out, paths[0]], str(tmp_path / "nested.pt"))
    save(member(5, PolicyConfig(hidden=8, layers=1)), str(tmp_path / "other.pt"))
    with pytest.raises(CheckpointError, match="different limits or configs"):
        save_ensemble([paths[0], str(tmp_path / "other.pt")], str(tmp_path / "mixed.pt"))
    with pytest.raises(CheckpointError, match="2 to 4 members"):
        save_ensemble(paths[:1], str(tmp_path / "one.pt"))


def test_a_member_of_an_ensemble_is_the_policy_it_was_made_of(tmp_path, matmul):
    """Training starts from one policy: `save_member` gives back the K-th policy of an ensemble file (the
    shipped one is an ensemble), its weights and metadata as they went in."""
    from mlir_rl_tui.agent import checkpoint as ck
    from mlir_rl_tui.agent.policy import save_member

    paths = [str(tmp_path / f"{i}.pt") for i in range(3)]
    for i, p in enumerate(paths):
        save(member(i), p, {"trained_by": "bc", "seed": i})
    out = str(tmp_path / "ens.pt")
    save_ensemble(paths, out)
    for k in (1, 3):
        got = str(tmp_path / f"m{k}.pt")
        assert save_member(out, k, got) == {"trained_by": "bc", "seed": k - 1}
        mine, given = ck.load(got, "policy")[0], ck.load(paths[k - 1], "policy")[0]
        assert mine.keys() == given.keys() and all(torch.equal(mine[x], given[x]) for x in mine)
        model, meta = load(got)  # one policy: trains
        assert isinstance(model, ActorCritic) and meta["seed"] == k - 1
        assert Policy(model).schedule(Session(matmul)).schedule == \
            Policy(load(paths[k - 1])[0]).schedule(Session(matmul)).schedule
    with pytest.raises(CheckpointError, match="has no member 4 \\(1 to 3\\)"):
        save_member(out, 4, str(tmp_path / "m4.pt"))
    with pytest.raises(CheckpointError, match="not an ensemble"):
        save_member(paths[0], 1, str(tmp_path / "m.pt"))
    assert not (tmp_path / "m4.pt").exists() and not (tmp_path / "m.pt").exists()


def test_the_ensemble_command(tmp_path):
    paths = [str(tmp_path / f"{i}.pt") for i in range(2)]
    for i, p in enumerate(paths):
        save(member(i), p)
    r = cli("ensemble", str(tmp_path / "e.pt"), *paths)
    assert r.returncode == 0 and "an ensemble of 2 policies (decode vote)" in r.stdout, r.stderr  # the shipped rule
    assert isinstance(load_policy(str(tmp_path / "e.pt")).model, Ensemble)
    r = cli("ensemble", str(tmp_path / "f.pt"), paths[0], str(tmp_path / "missing.pt"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "missing.pt" in r.stderr
    r = cli("train", "--init", str(tmp_path / "e.pt"), "--programs", str(SAMPLES / "relu.mlir"), "--iterations", "1",
            "--out", str(tmp_path / "ppo"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "ensemble" in r.stderr, r.stderr
    assert "ensemble --member 1 OUT" in r.stderr  # the way out, named
    r = cli("ensemble", "--member", "2", str(tmp_path / "m2.pt"), str(tmp_path / "e.pt"))
    assert r.returncode == 0 and "member 2 of" in r.stdout, r.stderr
    assert isinstance(load(str(tmp_path / "m2.pt"))[0], ActorCritic)
    for bad in (["--member", "3", str(tmp_path / "m3.pt"), str(tmp_path / "e.pt")],
                ["--member", "1", str(tmp_path / "m1.pt"), *paths]):
        r = cli("ensemble", *bad)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / os.path.basename(bad[2])).exists()


def _decoding_ensemble(tmp_path, decode: str) -> tuple[list[str], Policy]:
    """Three members' checkpoints and the ensemble `mlir-rl-tui ensemble --decode DECODE` makes of them, loaded
    as the product loads it: the checkpoint says how it decodes."""
    paths = [str(tmp_path / f"{i}.pt") for i in range(3)]
    for i, p in enumerate(paths):
        save(member(i), p)
    r = cli("ensemble", "--decode", decode, str(tmp_path / f"{decode}.pt"), *paths)
    assert r.returncode == 0 and f"(decode {decode})" in r.stdout, r.stderr
    pol = load_policy(str(tmp_path / f"{decode}.pt"))
    assert pol.decode == decode and pol.meta["decode"] == decode
    return paths, pol


def test_a_consensus_ensemble_proposes_one_members_tile_sizes_at_every_step(tmp_path, matmul):
    """`ensemble --decode consensus`: the checkpoint says how it decodes, and each tiled action it takes on a
    real program carries the tile vector one of its members would have taken (agent.explain.consensus_sizes)."""
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.schedule.notation import TILED

    paths, pol = _decoding_ensemble(tmp_path, "consensus")
    sess, tiled = Session(matmul), 0
    while not sess.done:
        logp, masks, _, members = pol._heads(sess)
        e = pol.explain(sess)
        if e.decision.kind in TILED and not sess.pending:
            n = logp["T"].shape[0]
            own = [list(m[e.decision.kind].argmax(-1)) for m in members]
            assert list(e.decision.vector[1: 1 + n]) in own and e.decision.member is not None
            tiled += 1
        sess = pol.step(sess)
    assert tiled >= 1
    with pytest.raises(ValueError, match="ensemble"):
        Policy(load(paths[0])[0], decode="consensus")
    save(member(0), str(tmp_path / "one.pt"), {"decode": "consensus"})
    with pytest.raises(EngineError, match="decoding it cannot use .*consensus decoding chooses among an ensemble"):
        load_policy(str(tmp_path / "one.pt"))


def test_a_vote_ensemble_takes_the_transformation_most_members_chose_at_every_step(tmp_path, matmul):
    """`ensemble --decode vote` on a real program: at each step the transformation taken is the one more than
    half of the members chose on their own (agent.explain.decide), whatever the mixture says."""
    from mlir_rl_tui.agent.explain import decide

    paths, pol = _decoding_ensemble(tmp_path, "vote")
    sess, steps = Session(matmul), 0
    while not sess.done:
        _, masks, _, members = pol._heads(sess)
        own = [decide(m, masks, "grouped", bool(sess.pending)).kind for m in members]
        e = pol.explain(sess)
        top = max(set(own), key=own.count)
        if not sess.pending and 2 * own.count(top) > len(own):
            assert e.decision.kind == top and e.decision.votes == (own.count(top), 3)
            steps += 1
        sess = pol.step(sess)
    assert steps >= 1
    with pytest.raises(ValueError, match="vote decoding chooses among an ensemble"):
        Policy(load(paths[0])[0], decode="vote")
