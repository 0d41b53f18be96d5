"""Never worse than doing nothing: `optimize` says when its fallback fires, `evaluate` counts the programs where
the policy's own schedule is below the baseline and keeps its own geometric mean apart from the fallback's."""

from __future__ import annotations

import json
import math

import pytest
from conftest import SAMPLES

from mlir_rl_tui.agent.evaluate import summarize
from mlir_rl_tui.agent.fallback import below_baseline, fallback_fires, with_fallback


def test_the_thresholds():
    assert fallback_fires("op0: V", True, 0.99) and not below_baseline("op0: V", True, 0.99)
    assert fallback_fires("op0: V", True, 0.9) and below_baseline("op0: V", True, 0.9)
    assert fallback_fires("op0: V", False, None) and below_baseline("op0: V", False, None)
    assert not fallback_fires("op0: V", True, 1.2) and with_fallback("op0: V", True, 1.2) == 1.2
    assert with_fallback("op0: V", True, 0.5) == 1.0 and with_fallback("op0: V", False, None) == 1.0
    # an empty schedule is the untransformed program itself: its noise is not a loss
    assert not fallback_fires("", True, 0.93) and not below_baseline("", True, 0.93)


def _row(name, schedule, speedup, status="ok"):
    ok = status == "ok"
    return {"program": f"/x/{name}.mlir", "policy_schedule": schedule, "policy": speedup, "policy_status": status,
            "policy_below_baseline": below_baseline(schedule, ok, speedup),
            "fallback": fallback_fires(schedule, ok, speedup),
            "policy_with_fallback": with_fallback(schedule, ok, speedup)}


def test_summary_counts_losses_and_keeps_the_policys_own_gmean_apart():
    rows = [_row("good", "op0: V", 4.0), _row("slow", "op0: I(1,0)", 0.25), _row("noisy", "op0: T(8)", 0.97),
            _row("broken", "op0: V", None, "crash"), _row("left", "", 1.0)]
    s = summarize(rows)
    assert s["programs"] == 5 and s["policy_failed"] == 1
    assert s["below_baseline"] == 2 and s["below_baseline_programs"] == ["slow.mlir", "broken.mlir"]
    assert s["fallbacks"] == 3  # slow, noisy (under 1.0) and broken
    assert s["policy"] == pytest.approx((4.0 * 0.25 * 0.97 * 1.0) ** (1 / 4))  # the failure has no speedup
    assert s["policy_with_fallback"] == pytest.approx((4.0 * 1 * 1 * 1 * 1.0) ** (1 / 5))


def test_evaluate_table_marks_and_counts_them(capsys):
    from mlir_rl_tui.cli.evaluate_report import table

    rows = [_row("good", "op0: V", 4.0), _row("slow", "op0: I(1,0)", 0.25), _row("broken", "op0: V", None, "crash")]
    table(rows, summarize(rows), [50], 3)
    lines = capsys.readouterr().out.splitlines()
    assert "0.25x<" in lines[2] and "crash<" in lines[3] and "4.00x " in lines[1]
    assert lines[4].split()[2:4] == ["1.00x", "1.59x"]  # own (the failure left out) vs with the fallback
    assert ("below 0.95x of the baseline (or failed): 2 of 3 programs, 1 failed (slow.mlir, broken.mlir); "
            "optimize's fallback fires on 2") in lines[-1]


def _bad_policy(tmp_path, prog) -> str:
    """A real policy, cloned from a schedule 50x slower than the baseline: relu's loops interchanged."""
    import torch

    from mlir_rl_tui.agent.bc import behaviour_cloning, examples_from_schedule
    from mlir_rl_tui.agent.policy import ActorCritic, save
    from mlir_rl_tui.agent.suggest import Policy
    from mlir_rl_tui.engine import Session, parse

    torch.manual_seed(0)
    model = ActorCritic()
    sched = parse("op0: I(1,0) NT")
    behaviour_cloning(model, examples_from_schedule(prog, sched), epochs=60, seed=0)
    assert Policy(model).schedule(Session(prog)).schedule == sched
    path = str(tmp_path / "bad.pt")
    save(model, path)
    return path


def test_optimize_reports_its_fallback_and_evaluate_counts_it(tmp_path, cache_dir, capsys):
    from mlir_rl_tui.commands import main
    from mlir_rl_tui.engine import load_file

    relu = str(SAMPLES / "relu.mlir")
    ckpt = _bad_policy(tmp_path, load_file(relu))
    assert main(["optimize", relu, "--json", "--policy", ckpt, "--runs", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fallback_fired"] and out["policy_below_baseline"]
    assert out["fallback"]["schedule"] == "op0: I(1,0) NT" and out["fallback"]["speedup"] < 0.95
    assert out["schedule"] == "" and out["status"] == "ok"  # the untransformed program, measured
    assert main(["optimize", relu, "--policy", ckpt, "--runs", "3", "--no-fallback"]) == 0
    assert "below the baseline (--no-fallback)" in capsys.readouterr().out

    assert main(["evaluate", "--programs", relu, "--policy", ckpt, "--no-search", "--no-torch", "--rounds", "1",
                 "--runs", "3", "--json"]) == 0
    ev = json.loads(capsys.readouterr().out)
    row, g = ev["programs"][0], ev["gmean"]
    assert row["policy_schedule"] == "op0: I(1,0) NT" and row["policy"] < 0.95
    assert row["policy_below_baseline"] and row["fallback"] and row["policy_with_fallback"] == 1.0
    assert g["below_baseline"] == 1 and g["fallbacks"] == 1 and g["below_baseline_programs"] == ["relu.mlir"]
    assert math.isclose(g["policy"], row["policy"]) and g["policy_with_fallback"] == 1.0
