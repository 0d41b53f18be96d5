"""The app's model without Textual: steps, undo, lesson jumps, measurements, trace records, export."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLES
from fake_adapter import FakeAdapter

from mlir_rl_tui.engine import Action, EngineError, load_file
from mlir_rl_tui.workspace import Workspace


@pytest.fixture()
def ws(tmp_path):
    return Workspace(load_file(str(SAMPLES / "matmul.mlir")), FakeAdapter(), record=str(tmp_path / "t.jsonl"))


def test_apply_undo_and_a_masked_action(ws):
    ws.apply(Action("T", (8, 32, 1)))
    assert ws.schedule_text == "op0: T(8,32,1)" and ws.previous_schedule == ""
    with pytest.raises(EngineError, match="not allowed"):
        ws.apply(Action("TF", (8, 8, 0)))  # TF must be the op's first tiling
    assert ws.schedule_text == "op0: T(8,32,1)" and len(ws.steps) == 1
    step = ws.undo()
    assert step is not None and step.label == "T(8,32,1) on op0" and ws.schedule_text == ""
    assert ws.undo() is None


def test_a_lesson_jump_is_one_step_undone_like_any(ws):
    ws.apply(Action("T", (8, 32, 1)))
    ws.jump("op0: TP(32,32,0) T(8,32,1) V; op1: NT", label="lesson step 4")
    assert ws.schedule_text == "op0: TP(32,32,0) T(8,32,1) V; op1: NT" and ws.session.done
    ws.undo()
    assert ws.schedule_text == "op0: T(8,32,1)"


def test_records_are_written_in_step_order_with_their_measurement(ws, tmp_path):
    ws.start_recording()
    ws.apply(Action("T", (8, 32, 1)))
    ws.measured(ws.schedule_text, ws.measure(ws.session))
    ws.apply(Action("V"))
    ws.apply(Action("NT"))  # op1 (the fill): the app moved on before V was measured
    ws.measured(ws.schedule_text, ws.measure(ws.session))
    ws.stop_recording()
    recs = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["action"] for r in recs] == ["T(8,32,1)", "V", "NT"]
    assert [(r["measurement"] or {}).get("status") for r in recs] == ["ok", None, "ok"]  # V: never measured
    assert ws.plot_points()[-1][1] == pytest.approx(8.0)  # the fake: 2x per action


def test_cancelled_measurement_is_forgotten_and_export_writes_four_files(ws, tmp_path):
    from mlir_rl_tui.engine import Measurement

    ws.apply(Action("T", (8, 32, 1)))
    ws.measured(ws.schedule_text, Measurement("cancelled", ws.schedule_text))
    assert ws.needs_measurement()
    files = ws.export(str(tmp_path / "out"), ws.session)
    assert set(files) == {"matmul.transformed.mlir", "matmul.transform.mlir", "schedule.txt", "trace.jsonl"}
    assert (tmp_path / "out" / "schedule.txt").read_text().strip() == "op0: T(8,32,1)"


def test_per_op_shares_follow_the_schedule(ws):
    assert ws.shares() == {}
    ws.profile(ws.session)
    shares = ws.shares()
    assert set(shares) == {"op0", "op1"} and shares["op0"] > shares["op1"]
    ws.apply(Action("T", (8, 32, 1)))
    assert ws.shares() == {}  # another schedule: not profiled yet
