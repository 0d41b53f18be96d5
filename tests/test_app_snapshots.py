"""Snapshots (fixed 120x40 terminal, fake adapter so timings and numbers are fixed): main screen, mask."""

from __future__ import annotations

import pathlib

from mlir_rl_tui.adapter import FakeAdapter
from mlir_rl_tui.app import make_app
from mlir_rl_tui.engine import load_file

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples"
SIZE = (120, 40)


def _app():
    prog = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))
    prog.path = "samples/matmul_bias_relu.mlir"  # the same title wherever the tests run
    return make_app(prog, FakeAdapter())


async def _settle(pilot) -> None:
    await pilot.pause(0.15)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.3)  # the deferred syntax highlighting
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_main_screen_after_two_steps(snap_compare):
    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press("p", "x")
        await _settle(pilot)
        await pilot.press("t", "x")
        await _settle(pilot)
        pilot.app.main.query_one("#ops").focus()
        await pilot.pause()

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_mask_view_for_parallel_tiling(snap_compare):
    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press("t", "x")
        await _settle(pilot)
        await pilot.press("p")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)


def test_loop_nest_view(snap_compare):
    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press("p", "x")
        await _settle(pilot)
        await pilot.press("4", "F")
        await _settle(pilot)

    assert snap_compare(_app(), terminal_size=SIZE, run_before=run_before)
