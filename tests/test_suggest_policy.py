"""The shipped policy on real samples: what its explanation says is what it does, and the probabilities it
shows are its own (checked against the log-probability PPO trains with)."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import SAMPLES
from fake_heads import FakeCostModel

from mlir_rl_tui.agent.explain import FINISH, MEMBER_DECODES, MORE, decide
from mlir_rl_tui.agent.policy import evaluate_actions
from mlir_rl_tui.agent.suggest import load_policy
from mlir_rl_tui.engine import Session, load_file
from mlir_rl_tui.engine.schedule.notation import TILED


@pytest.mark.parametrize("name", ["matmul", "matmul_generic", "matmul_bias_relu"])
def test_the_shipped_policy_explains_what_it_proposes(name):
    pol = load_policy()
    model = FakeCostModel()
    sess = Session(load_file(str(SAMPLES / f"{name}.mlir")))
    steps = 0
    while not sess.done:
        e = pol.explain(sess, k=5, cost_model=model)
        action = pol.decide(sess)
        assert str(action) == e.action == str(pol.action_of(sess, e))  # what it says is what it does
        logp, masks, value, members = pol._heads(sess, with_value=True)
        assert e.value == pytest.approx(value) and math.isfinite(e.value)
        # the proposal's probability is the policy's own: the log-probability PPO and BC train
        t_logp = {k: torch.from_numpy(v)[None] for k, v in logp.items()}
        t_masks = {k: torch.from_numpy(v)[None] for k, v in masks.items()}
        lp, _ = evaluate_actions(t_logp, t_masks, torch.from_numpy(e.decision.vector)[None])
        assert e.proposal.joint == pytest.approx(math.exp(float(lp[0])), rel=1e-4, abs=1e-9)
        # the rule: the chosen group holds more probability, the transformation leads its group,
        # every parameter is its row's most probable choice
        p = dict(e.kinds)
        d = e.decision
        if d.votes is not None:  # decode "vote": more than half of the members chose it, each by the rule
            own = [decide(m, masks, "grouped", bool(sess.pending)).kind for m in members]
            assert d.votes == (own.count(d.kind), len(members)) and 2 * d.votes[0] > d.votes[1]
        elif d.group is not None:
            other = "finish" if d.group == "more" else "more"
            assert d.masses[d.group] >= d.masses[other]
            pool = MORE if d.group == "more" else FINISH
            assert p[d.kind] == max(q for k, q in p.items() if k in pool)
        else:
            assert p[d.kind] == max(p.values())
        rows = [logp["I"]] if d.kind == "I" else list(logp.get(d.kind, []))
        n = logp["T"].shape[0]
        chosen = [int(d.vector[1 + n])] if d.kind == "I" else list(d.vector[1: 1 + n])
        if pol.decode in MEMBER_DECODES and d.kind in TILED:  # one member's own vector (the shipped ensemble's rule)
            assert chosen in [list(m[d.kind].argmax(-1)) for m in members] and d.member is not None
        else:  # each parameter the most probable of its row
            assert all(int(row.argmax()) == j for row, j in zip(rows, chosen))
        for param, row, j in zip(e.params, rows, chosen):  # shown with the ensemble's probability of that choice
            assert param.p == pytest.approx(math.exp(float(row[j])))
        assert e.proposal.p_params == pytest.approx(math.prod(q.p for q in e.params) if e.params else 1.0)
        assert e.rule()[-1].startswith(f"proposal {e.action}: p = ")
        noted = any("alone is the most probable" in n for n in e.notes())
        assert noted == (e.most_probable.action != e.action)
        # the table: joint probabilities, most probable first, the proposal among them, predictions for them
        _, top = pol.suggest(sess, k=5)
        assert [q for _, q in top] == sorted((q for _, q in top), reverse=True)
        assert e.proposal in e.top
        assert sum(c.joint for c in e.top) <= 1 + 1e-6
        assert all(c.predicted is not None for c in e.top if not c.action.startswith("I:"))
        sess = pol.step(sess)
        steps += 1
    assert steps >= len(sess.program.ops)


def test_the_app_adapter_hands_the_panel_the_explanation(monkeypatch):
    from rich.console import Console

    from mlir_rl_tui import adapter as app_adapter
    from mlir_rl_tui.adapter import EngineAdapter
    from mlir_rl_tui.widgets.suggest import render_suggestion

    monkeypatch.setattr(app_adapter, "optional_cost_model", lambda: FakeCostModel())
    adapter = EngineAdapter()  # the policy only: no engine (and no worker process) is started
    sess = Session(load_file(str(SAMPLES / "matmul_generic.mlir")))
    sug = adapter.suggest(sess, k=3)
    why = sug.explanation
    assert why is not None and str(sug.action) == why.action
    assert [a for a, _ in sug.top] == [c.action for c in sorted(why.top, key=lambda c: -c.joint)][:3]
    console = Console(width=40, record=True)
    console.print(render_suggestion(str(sug.action), sug.top, why))
    text = " ".join(console.export_text().split())
    assert f"policy suggests {why.action}" in text and "value " in text
    sp, lo, hi = next(c.predicted for c in why.top if c.predicted is not None)
    assert f"{sp:.2f}x {lo:.1f}-{hi:.1f}" in text  # the prediction with its interval
    assert all(line.split(":")[0] in text for line in why.rule())
    assert adapter._engine is None


def test_a_missing_shipped_policy_is_none_or_one_line_when_required(monkeypatch, tmp_path):
    from mlir_rl_tui.agent import suggest
    from mlir_rl_tui.engine.errors import EngineError

    monkeypatch.setattr(suggest, "DEFAULT_CHECKPOINT", str(tmp_path / "default.pt"))
    assert suggest.load_policy() is None  # the app: no suggestion, the session goes on
    with pytest.raises(EngineError, match=r"^no shipped policy .*train one with `mlir-rl-tui train`"):
        suggest.load_policy(required=True)  # optimize, evaluate, tune: one line
    with pytest.raises(EngineError, match="no such policy checkpoint"):
        suggest.load_policy(str(tmp_path / "given.pt"), required=True)


def test_a_checkpoint_write_that_fails_leaves_the_old_file(monkeypatch, tmp_path):
    import torch

    from mlir_rl_tui.agent import checkpoint

    path = tmp_path / "last.pt"
    checkpoint.save(str(path), "policy", {"w": torch.ones(2)}, {"step": 1})
    before = path.read_bytes()

    def half(obj, f):
        open(f, "wb").write(b"half a checkpoint")
        raise OSError("No space left on device")

    monkeypatch.setattr(checkpoint.torch, "save", half)
    with pytest.raises(OSError):
        checkpoint.save(str(path), "policy", {"w": torch.zeros(2)}, {"step": 2})
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]


def test_the_suggestion_tables_numbers_are_read_in_full_in_a_narrow_panel():
    """In a 140x42 terminal the panel is 40 columns wide: the probabilities and the predicted speedups with
    their intervals are never cut (they once read "8…" and "11.16x 2.1-5…"); the action's name is cut first."""
    import dataclasses

    from fake_heads import fake_heads
    from rich.console import Console

    from mlir_rl_tui.agent.explain import explain
    from mlir_rl_tui.widgets.suggest import render_suggestion

    sess = Session(load_file(str(SAMPLES / "matmul_bias_relu.mlir")))
    logp, masks = fake_heads(sess, {"NT": 0.48, "T": 0.29, "TP": 0.15, "TF": 0.08},
                             {"T": [{4: 0.6, 8: 0.4}, {32: 0.8, 16: 0.2}], "TP": [{32: 0.9, 64: 0.1}, {64: 1.0}]})
    why = explain(sess, logp, masks, value=1.1, k=4, cost_model=FakeCostModel())
    wide = [dataclasses.replace(c, predicted=(11.16 + i, 2.1, 52.3)) for i, c in enumerate(why.top)]
    why = dataclasses.replace(why, top=wide)
    for width in (34, 37, 40):
        console = Console(width=width, record=True)
        console.print(render_suggestion(why.action, [], why))
        text = console.export_text()
        for i, c in enumerate(wide):
            assert f"{c.joint:.0%}" in text and f"{11.16 + i:.2f}x 2.1-52.3" in text, (width, text)
