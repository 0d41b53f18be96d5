"""The app on real samples with the real engine: tile, vectorize, speedup rises, undo, trace read back."""

from __future__ import annotations

import asyncio
import pathlib

import pytest

from mlir_rl_tui.adapter import EngineAdapter
from mlir_rl_tui.app import make_app
from mlir_rl_tui.engine import load_file, to_text
from mlir_rl_tui.engine.rl.trace import read_trace
from mlir_rl_tui.widgets.action_bar import ActionBar
from mlir_rl_tui.widgets.plot import SpeedupPlot
from mlir_rl_tui.widgets.status_bar import StatusBar

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples"
pytestmark = pytest.mark.slow


async def settle(pilot, timeout: float = 240.0) -> None:
    """Wait for every worker (measurements really compile and run here)."""
    await pilot.pause(0.15)
    await asyncio.wait_for(pilot.app.workers.wait_for_complete(), timeout)
    await pilot.pause()


def test_tile_vectorize_undo_and_record(engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prog = load_file(str(SAMPLES / "matmul.mlir"))

    async def run() -> None:
        app = make_app(prog, EngineAdapter(engine))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            main = app.main
            bar = main.query_one(StatusBar)
            assert main.workspace.measurements[""].ok
            assert "speedup 1.00x" in bar.numbers_text
            await pilot.press("r")  # record on: <stem>-<time>.trace.jsonl in the working folder
            await pilot.press("t")
            await pilot.pause()
            for sel, v in zip(main.query_one(ActionBar)._params, (8, 32, 1), strict=True):
                sel.value = v
            await pilot.press("x")
            await settle(pilot)
            assert main.schedule_text == "op0: T(8,32,1)"
            tiled = main.workspace.measurements[main.schedule_text]
            assert tiled.ok, tiled.error
            await pilot.press("v")
            await settle(pilot)
            assert main.schedule_text == "op0: T(8,32,1) V"
            vec = main.workspace.measurements[main.schedule_text]
            assert vec.ok, vec.error
            assert vec.speedup > 1.5
            assert f"speedup {vec.speedup:.2f}x" in bar.numbers_text
            assert bar.status == "ok"
            pts = main.query_one(SpeedupPlot).points
            assert [p.step for p in pts] == [1, 2]
            assert pts[-1].speedup == pytest.approx(vec.speedup)
            await pilot.press("u")
            await settle(pilot)
            assert main.schedule_text == "op0: T(8,32,1)"
            assert f"speedup {tiled.speedup:.2f}x" in bar.numbers_text
            assert len(main.query_one(SpeedupPlot).points) == 1
            await pilot.press("r")  # record off: closes the file
            await pilot.pause()

    asyncio.run(run())
    traces = list(tmp_path.glob("matmul-*.trace.jsonl"))
    assert len(traces) == 1
    tr = read_trace(str(traces[0]))
    assert not tr.truncated
    assert [r["action"] for r in tr.records] == ["T(8,32,1)", "V"]
    assert all(r["source"] == "user" and r["program_sha256"] == prog.sha256 for r in tr.records)
    assert tr.records[1]["measurement"]["status"] == "ok"
    assert len(tr.records[0]["observation"]) > 0
    assert to_text(tr.schedules()[prog.sha256]) == "op0: T(8,32,1) V"  # V was measured before the undo


def test_transformed_ir_view_and_export_with_real_engine(engine, tmp_path):
    from mlir_rl_tui.widgets.ir_view import IRView

    prog = load_file(str(SAMPLES / "matmul.mlir"))
    folder = tmp_path / "exp"

    async def run() -> None:
        app = make_app(prog, EngineAdapter(engine))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            main = app.main
            await pilot.press("p")
            await pilot.pause()
            for sel, v in zip(main.query_one(ActionBar)._params, (64, 64, 0), strict=True):
                sel.value = v
            await pilot.press("x", "2")
            await settle(pilot)
            ir = main.query_one(IRView)
            assert "scf.forall" in ir._texts["transformed"]
            await pilot.press("3")
            await settle(pilot)
            assert "+" in ir._texts["diff"] and "scf.forall" in ir._texts["diff"]
            await pilot.press("e")
            await pilot.pause()
            app.screen.query_one("Input").value = str(folder)
            await pilot.press("enter")
            await settle(pilot)
            assert main.query_one("StatusBar").status == "ok", main.query_one("StatusBar").message

    asyncio.run(run())
    assert "scf.forall" in (folder / "matmul.transformed.mlir").read_text()
    assert "transform.named_sequence" in (folder / "matmul.transform.mlir").read_text()
    assert (folder / "schedule.txt").read_text().strip() == "op0: TP(64,64,0)"
    assert [r["action"] for r in read_trace(str(folder / "trace.jsonl")).records] == ["TP(64,64,0)"]
