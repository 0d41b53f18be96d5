"""The learned cost model on real measurements: the cache reader, training, prediction, the file round
trip, the command line and the model-guided search. Accuracy goals are in benchmarks/costmodel_search.py
and the README (they need hundreds of measurements)."""

from __future__ import annotations

import json
import math

import pytest
from conftest import SAMPLES

from mlir_rl_tui.engine import load_file
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.schedule.notation import Schedule, parse
from mlir_rl_tui.engine.schedule.state import check_schedule
from mlir_rl_tui.engine.search import search

pytest.importorskip("torch")

from mlir_rl_tui.agent import costmodel_train as cm  # noqa: E402
from mlir_rl_tui.agent.costmodel import CostModel, load_cost_model  # noqa: E402

TRAIN = [str(SAMPLES / "matmul.mlir"), str(SAMPLES / "add.mlir")]
HELD = [str(SAMPLES / "relu.mlir")]
SMALL = cm.TrainConfig(members=2, epochs=60)


@pytest.fixture(scope="module")
def measured(engine):
    """Real measurements of two samples and a held-out one in the session's cache (random draws)."""
    for f, budget in ((TRAIN[0], 5), (TRAIN[1], 4), (HELD[0], 3)):
        search(engine, load_file(f), "random", budget, seed=11)
    programs = cm.read_programs(TRAIN, HELD)
    return programs, cm.read_samples(engine.cache, programs)


@pytest.fixture(scope="module")
def model(measured) -> CostModel:
    programs, samples = measured
    return cm.train([s for s in samples if s.program not in programs.held_out], SMALL)


def test_the_cache_gives_back_every_intact_row(engine, matmul):
    m = engine.measure(matmul, parse("op0: T(32,32,8) V"))
    rows = engine.cache.entries(programs={matmul.sha256})
    texts = {t for _, t, mach, _ in rows if mach == engine.machine}
    assert "op0: T(32,32,8) V" in texts and "" in texts  # the schedule and its baseline
    rec = next(r for _, t, _, r in rows if t == "op0: T(32,32,8) V")
    assert rec["speedup"] == pytest.approx(m.speedup)
    assert engine.cache.entries(machine="no-such-machine") == []


def test_samples_are_the_ok_measurements_split_by_program(measured, matmul):
    programs, samples = measured
    assert {s.program for s in samples} >= {matmul.sha256} and programs.held_out
    held = [s for s in samples if s.program in programs.held_out]
    assert held and len(held) < len(samples)
    for s in samples:
        assert math.isfinite(s.log_speedup) and s.x.shape == s.x0.shape and s.x.shape[0] >= 1


def test_the_model_predicts_a_speedup_with_an_error_bar_and_fits_its_data(model, measured, matmul):
    programs, samples = measured
    scheds = [Schedule({}), parse("op0: T(32,32,8) V; op1: V"), parse("op0: TP(64,64,0) T(8,32,1) V; op1: V")]
    preds = model.predict(matmul, scheds)
    assert len(preds) == 3 and all(s > 0 and math.isfinite(s) and math.isfinite(sd) for s, sd in preds)
    assert any(sd > 0 for _, sd in preds)  # the error bar is the members' disagreement: they do not all agree
    assert preds[1] != preds[2]  # the schedule changes the prediction
    train = [s for s in samples if s.program not in programs.held_out]
    fit = cm.evaluate(model, train, programs.names, min_per_program=3)
    assert fit["spearman"] > 0.5, fit  # it learned the measured order of what it saw


def test_a_saved_model_loads_back_to_the_same_predictions(model, matmul, tmp_path):
    path = str(tmp_path / "cm.pt")
    model.save(path)
    back = load_cost_model(path)
    s = [parse("op0: T(32,32,8) V; op1: V")]
    assert back.predict(matmul, s) == pytest.approx(model.predict(matmul, s))
    with pytest.raises(EngineError, match="no such cost model"):
        load_cost_model(str(tmp_path / "missing.pt"))


def test_a_checkpoint_of_another_kind_is_refused_in_one_line(tmp_path):
    import torch

    from mlir_rl_tui.agent.checkpoint import save

    path = str(tmp_path / "policy.pt")
    save(path, "policy", {"w": torch.zeros(2)}, {})
    with pytest.raises(EngineError, match="not a 'cost-model' one"):
        load_cost_model(path)


def test_the_shipped_model_loads_and_ranks_a_tiled_matmul_above_the_naive_one(matmul):
    model = load_cost_model()
    assert model is not None, "agent/checkpoints/costmodel.pt is missing"
    (naive, _), (tiled, _) = model.predict(matmul, [Schedule({}), parse("op0: TP(32,32,0) T(8,32,1) V; op1: V")])
    assert tiled > 2 * naive


def test_the_conformal_quantile_covers_a_new_score_as_often_as_it_claims():
    import numpy as np

    rng = np.random.default_rng(0)
    hits = []
    for _ in range(400):  # exchangeable scores: a new one falls under the quantile of the others >= 90%
        xs = rng.exponential(size=21)
        hits.append(xs[-1] <= cm.conformal_q(xs[:-1], 0.9))
    assert 0.88 <= np.mean(hits) <= 0.97
    assert cm.conformal_q(np.arange(1.0, 11.0), 0.9) == 10.0  # ceil(11 * 0.9) = 10th of 10
    assert cm.conformal_q(np.arange(1.0, 5.0), 0.9) == 4.0  # past n: the largest


def test_a_calibrated_interval_holds_its_share_of_held_out_speedups(model, measured, matmul):
    """Calibrated on held-out measurements, the interval holds about its level of them (each half of the
    programs checked against the other half's calibration); a program with an op kind the model was not
    trained on gets no interval; an uncalibrated model none either."""
    programs, samples = measured
    assert model.predict_interval(matmul, [parse("op0: T(8,32,1) V")]) == [None]  # not calibrated
    data = [s for s in samples if s.program in programs.held_out] + \
        [s for s in samples if s.program not in programs.held_out]  # two programs at least
    model.info["interval"] = cm.calibrate(model, data, ["matmul", "unknown", "generic", "add"], 0.9)
    try:
        c = model.calibration
        assert c is not None and c["q"] > 0 and c["floor"] > 0 and 0 <= c["coverage"] <= 1
        sp, lo, hi = model.predict_interval(matmul, [parse("op0: T(8,32,1) V")])[0]
        assert lo < sp < hi
        inside = cm.evaluate(model, data, programs.names, min_per_program=3)["within_interval"]
        assert inside >= 0.9  # calibrated on these very samples: at least its level, by construction
        c["op_types"] = ["add"]  # a model that never saw a matmul does not know the matmul sample
        assert model.predict_interval(matmul, [parse("op0: T(8,32,1) V")]) == [None]
    finally:
        model.info.pop("interval")


def test_the_shipped_model_is_calibrated_on_held_out_programs(matmul):
    c = load_cost_model().calibration
    assert c is not None and c["level"] == 0.9 and c["programs"] >= 10 and c["coverage"] >= 0.8
    assert "matmul" in c["op_types"]


def test_the_guided_search_measures_the_models_picks_within_its_budget(engine, model, matmul):
    r = search(engine, matmul, "guided", 5, seed=0, ranker=model)
    assert r.candidates <= 5 and r.evaluated <= 5 and r.stopped == "budget"
    assert r.best.ok and r.best.validated and r.speedup >= 1.0
    if r.schedule.ops:
        check_schedule(matmul, r.schedule)
    with pytest.raises(EngineError, match="needs a cost model"):
        search(engine, matmul, "guided", 5)


def test_costmodel_train_and_eval_on_the_command_line(measured, cache_dir, tmp_path, capsys):
    from mlir_rl_tui.commands import main

    out = str(tmp_path / "cm.pt")
    code = main(["costmodel", "train", "--programs", *TRAIN, "--held-out", *HELD, "--cache", str(cache_dir),
                 "--out", out, "--members", "2", "--epochs", "40", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["train_samples"] > 0 and rep["held_out"]["samples"] > 0
    code = main(["costmodel", "eval", "--model", out, "--held-out", *HELD, "--cache", str(cache_dir)])
    text = capsys.readouterr().out
    assert code == 0 and "held out:" in text and "spearman" in text
    assert main(["costmodel", "eval", "--model", out]) == 2  # no programs: one line, status 2
    assert "--programs" in capsys.readouterr().err
    cal = str(tmp_path / "cal.pt")  # calibrated on the held-out relu and the trained programs together
    code = main(["costmodel", "calibrate", "--model", out, "--held-out", *HELD, *TRAIN, "--cache", str(cache_dir),
                 "--out", cal, "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["out"] == cal and rep["level"] == 0.9 and rep["programs"] == 3
    assert CostModel.load(cal).calibration["q"] == rep["q"]
    assert main(["costmodel", "calibrate", "--model", out, "--held-out", *HELD, "--level", "1.5"]) == 2


def test_dataset_measure_fills_the_cache(engine, cache_dir, capsys):
    from mlir_rl_tui.commands import main

    before = len(engine.cache)
    code = main(["dataset", "measure", str(SAMPLES / "relu.mlir"), "--budget", "2", "--methods", "random",
                 "--seed", "5"])
    assert code == 0 and "measurements on 1 programs" in capsys.readouterr().out
    assert len(engine.cache) > before
