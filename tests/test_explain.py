"""agent.explain without a network: the decoding rule, the joint probabilities, the words, the predictions."""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest
from fake_heads import FakeCostModel, fake_heads

from mlir_rl_tui.agent.explain import candidates, decide, explain, top_sizes
from mlir_rl_tui.engine import Action, Session

# the case: NT is the most probable transformation, yet T, TP, TF and I together are more probable
SPLIT = {"NT": 0.48, "T": 0.29, "TP": 0.15, "TF": 0.08}
SIZES = {"T": [{4: 0.6, 8: 0.4}, {32: 0.8, 16: 0.2}, {32: 0.7, 1: 0.3}],
         "TP": [{64: 0.9, 32: 0.1}, {64: 0.9, 32: 0.1}], "TF": [{16: 1.0}, {16: 1.0}]}


def test_the_group_decides_first_and_the_panel_says_so(matmul):
    sess = Session(matmul)
    logp, masks = fake_heads(sess, SPLIT, SIZES)
    e = explain(sess, logp, masks, value=1.2, k=4)
    assert e.action == "T(4,32,32)"  # "transform further" 52% > "finish" 48%; T leads that group; argmax sizes
    assert e.decision.group == "more" and e.decision.masses["more"] == pytest.approx(0.52, abs=1e-6)
    assert e.proposal.p_kind == pytest.approx(0.29, abs=1e-6)
    assert e.proposal.p_params == pytest.approx(0.6 * 0.8 * 0.7, abs=1e-6)
    assert [p.choice for p in e.params] == ["4", "32", "32"] and [p.name for p in e.params] == ["d0", "d1", "d2"]
    top = sorted(e.top, key=lambda c: -c.joint)
    assert top[0].action == "NT" and e.most_probable.action == "NT"
    assert e.proposal in e.top
    words = "\n".join(e.rule() + e.notes())
    assert "transform it further (T, TP, TF, I) 52% > finish the op (V, NT) 48%" in words
    assert "NT alone is the most probable action (48%), but the group decides first" in words
    assert "d0 4 60%, d1 32 80%, d2 32 70%" in words
    assert "V (vectorized extent" in words  # masked, with the mask's reason
    assert "3.32x" in e.value_text()  # exp(1.2): the critic's log speedup as a speedup


def test_argmax_decoding_takes_the_most_probable_transformation(matmul):
    sess = Session(matmul)
    logp, masks = fake_heads(sess, SPLIT, SIZES)
    e = explain(sess, logp, masks, decode="argmax")
    assert e.action == "NT" and e.decision.group is None
    assert not any("alone is the most probable" in n for n in e.notes())
    with pytest.raises(ValueError):
        decide(logp, masks, "sampled")


def test_tp_leaves_reduction_loops_untiled_with_probability_one(matmul):
    sess = Session(matmul)
    logp, masks = fake_heads(sess, {"TP": 0.7, "NT": 0.3}, SIZES)
    e = explain(sess, logp, masks)
    assert e.action == "TP(64,64,0)" and [p.choice for p in e.params] == ["64", "64", "- (reduction)"]
    assert e.params[2].p == pytest.approx(1.0) and e.proposal.p_params == pytest.approx(0.81, abs=1e-6)


def test_top_sizes_is_the_exact_k_best():
    rng = np.random.default_rng(0)
    rows = np.log(rng.dirichlet(np.ones(4), size=3))
    allowed = np.ones((3, 4), bool)
    allowed[1, 2] = False
    brute = sorted(((sum(rows[i, j] for i, j in enumerate(c)), list(c))
                    for c in itertools.product(range(4), repeat=3) if allowed[1, c[1]]), key=lambda b: -b[0])
    got = top_sizes(rows, allowed, 7)
    assert [idx for _, idx in got] == [idx for _, idx in brute[:7]]
    assert [lp for lp, _ in got] == pytest.approx([lp for lp, _ in brute[:7]])


def test_joint_probabilities_of_every_action_sum_to_one(matmul):
    sess = Session(matmul)
    rng = np.random.default_rng(1)
    kinds = dict(zip(["T", "TP", "TF", "I", "NT"], rng.dirichlet(np.ones(5))))
    sizes = {k: [dict(zip([1, 4, 16, 64], rng.dirichlet(np.ones(4)))) for _ in range(3)] for k in ("T", "TP", "TF")}
    logp, masks = fake_heads(sess, kinds, sizes, pointers={0: 0.2, 1: 0.5, 2: 0.3})
    every = candidates(sess, logp, masks, k=1000)
    assert sum(pk * pp for pk, pp, _, _ in every) == pytest.approx(1.0, abs=1e-6)
    labels = [str(a) for _, _, a, _ in every]
    assert len(labels) == len(set(labels)) and "I: loop 1 -> position 0" in labels


def test_predictions_are_for_the_schedule_each_action_leads_to(matmul):
    sess = Session(matmul).apply(Action("T", (8, 32, 1)))
    model = FakeCostModel()
    logp, masks = fake_heads(sess, {"T": 0.5, "V": 0.3, "NT": 0.2}, {"T": [{4: 0.9, 1: 0.1}, {8: 1.0}, {1: 1.0}]})
    e = explain(sess, logp, masks, k=3, cost_model=model)
    assert {c.action for c in e.top} == {"T(4,8,1)", "V", "NT"}
    for c in e.top:
        action = Action(c.kind, tuple(int(x) for x in c.action[len(c.kind) + 1:-1].split(","))) \
            if "(" in c.action else Action(c.kind)
        assert c.predicted == FakeCostModel.speedup(sess.apply(action).schedule)
    assert "op0: T(8,32,1) V" in model.asked

    class Broken:
        def predict_interval(self, program, schedules):
            raise RuntimeError("no")

    assert all(c.predicted is None for c in explain(sess, logp, masks, cost_model=Broken()).top)
    assert all(c.predicted is None for c in explain(sess, logp, masks).top)


def test_an_interchange_in_progress_chooses_only_the_pointer(matmul):
    sess = Session(matmul).point(2)
    logp, masks = fake_heads(sess, {"I": 1.0}, pointers={0: 0.7, 1: 0.3})
    model = FakeCostModel()
    e = explain(sess, logp, masks, cost_model=model)
    assert e.action == "I: loop 0 -> position 1" and e.pending == [2]
    assert "interchange in progress (d2 placed)" in e.rule()[0]
    assert e.proposal.p_params == pytest.approx(0.7, abs=1e-6)
    assert all(c.predicted is None for c in e.top)  # the interchange is not finished: no schedule to predict
    last = sess.point(0)
    logp, masks = fake_heads(last, {"I": 1.0}, pointers={1: 1.0})
    e = explain(last, logp, masks, cost_model=model)
    assert e.top[0].predicted == FakeCostModel.speedup(last.point(1).schedule)  # the last pointer: I(2,0,1)


def test_no_cost_model_module_means_no_predictions(monkeypatch):
    from mlir_rl_tui.adapter import optional_cost_model

    assert optional_cost_model() is not None  # the shipped one
    monkeypatch.setitem(sys.modules, "mlir_rl_tui.agent.costmodel", None)  # importing it raises ImportError
    assert optional_cost_model() is None


def test_explanation_json_has_the_rule_and_joint_probabilities(matmul):
    import json

    sess = Session(matmul)
    logp, masks = fake_heads(sess, SPLIT, SIZES)
    d = json.loads(json.dumps(explain(sess, logp, masks, value=0.5).to_json()))
    assert d["action"] == "T(4,32,32)" and d["rule"][0].startswith("group:")
    assert d["proposal"]["joint"] == pytest.approx(0.29 * 0.6 * 0.8 * 0.7, abs=1e-6)
    assert math.isclose(d["value"], 0.5)


def _mixture(members: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The ensemble's heads (agent.policy.Ensemble.mix): log of the mean of the members' distributions."""
    return {k: np.logaddexp.reduce([m[k] for m in members], axis=0) - math.log(len(members)) for k in members[0]}


def test_consensus_decoding_proposes_a_members_tile_vector_never_a_mix_of_them(matmul):
    """Row by row, the mean of two members that disagree picks T(4,16,1), which neither proposed; consensus
    takes the members' own vectors and proposes the one the two find most probable together:
    (8,16,1) has mean joint (0.1*0.1*0.4 + 0.8*1*1) / 2 = 0.40, (4,32,32) has (0.9*0.9*0.6 + ~0) / 2 = 0.24."""
    sess = Session(matmul)
    kinds = {"T": 0.7, "NT": 0.3}
    a, masks = fake_heads(sess, kinds, {"T": [{4: 0.9, 8: 0.1}, {32: 0.9, 16: 0.1}, {32: 0.6, 1: 0.4}]})
    b, _ = fake_heads(sess, kinds, {"T": [{8: 0.8, 4: 0.2}, {16: 1.0}, {1: 1.0}]})
    mix = _mixture([a, b])
    assert explain(sess, mix, masks).action == "T(4,16,1)"  # the mix
    e = explain(sess, mix, masks, decode="consensus", members=[a, b])
    assert e.action == "T(8,16,1)" and (e.decision.member, e.decision.agreeing) == (1, 1)
    assert e.proposal.p_params == pytest.approx(0.45 * 0.55 * 0.7, abs=1e-6)  # the mixture's rows
    assert "then the tile sizes member 2 proposed, the members' most probable vector: d0 8 45%" in "\n".join(e.rule())
    assert e.to_json()["decision"]["member"] == 1
    # members that agree: their vector, whatever the weights; the group and transformation are the mixture's
    d = decide(_mixture([a, a]), masks, "consensus", members=[a, a])
    assert (d.kind, list(d.vector[1:4]), d.member, d.agreeing) == ("T", [3, 6, 6], 0, 2)  # sizes 4, 32, 32
    nt, _ = fake_heads(sess, {"T": 0.2, "NT": 0.8}, {"T": [{4: 1.0}]})
    d = decide(_mixture([nt, a]), masks, "consensus", members=[nt, a])  # finish 55% > more 45%
    assert d.kind == "NT" and d.member is None
    with pytest.raises(ValueError, match="members"):
        decide(mix, masks, "consensus")


def test_vote_decoding_takes_the_transformation_most_members_chose_not_the_mixtures(matmul):
    """The mixture can take what most members rejected (the stride-1 pooling of agent.explain's docstring):
    two members choose T (0.52, 0.57), one TP (0.69); the mixture's TP = (0.48 + 0.43 + 0.69) / 3 = 0.53 leads,
    and "consensus" takes it; "vote" takes T, with the tile vector the members find most probable."""
    sess = Session(matmul)
    sizes = {"T": [{4: 1.0}, {32: 1.0}, {32: 1.0}], "TP": [{64: 1.0}, {64: 1.0}]}
    members = [fake_heads(sess, {"T": pt, "TP": 1 - pt}, sizes)[0] for pt in (0.52, 0.57, 0.31)]
    masks = fake_heads(sess, {"T": 1.0}, sizes)[1]
    mix = _mixture(members)
    assert decide(mix, masks, "consensus", members=members).kind == "TP"
    e = explain(sess, mix, masks, decode="vote", members=members)
    assert e.action == "T(4,32,32)" and e.decision.votes == (2, 3) and e.decision.agreeing == 3
    assert "transformation: T, chosen by 2 of 3 members" in "\n".join(e.rule())
    assert e.heading() == "why: the members' vote on the transformation, then its parameters"
    assert tuple(e.to_json()["decision"]["votes"]) == (2, 3)
    # across groups: two members finish (NT 0.55), one transforms (T 0.95); the mixture's "more" is 0.62
    members = [fake_heads(sess, {"NT": pn, "T": 1 - pn}, sizes)[0] for pn in (0.55, 0.55, 0.05)]
    assert decide(_mixture(members), masks, "consensus", members=members).kind == "T"
    d = decide(_mixture(members), masks, "vote", members=members)
    assert (d.kind, d.group, d.votes, d.member) == ("NT", "finish", (2, 3), None)
    # no majority (one member each way): the mixture's rule decides, as with "consensus"
    two = members[1:]
    d = decide(_mixture(two), masks, "vote", members=two)
    assert d.kind == "T" and d.votes is None
    with pytest.raises(ValueError, match="vote decoding needs the members"):
        decide(mix, masks, "vote")
