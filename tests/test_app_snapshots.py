"""Snapshots (fixed 120x40 terminal, fake adapter so timings and numbers are fixed): main screen, mask."""

from __future__ import annotations

import pathlib

from fake_adapter import FakeAdapter

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


def test_suggestion_explains_itself(snap_compare):
    """The panel: the rule in words (the group decides before the single most probable action, NT), the top
    actions with joint probabilities and a (fake) cost model's predictions, the critic's value."""
    from fake_heads import FakeCostModel, fake_heads

    from mlir_rl_tui.adapter import Suggestion
    from mlir_rl_tui.agent.explain import explain
    from mlir_rl_tui.engine import Session, parse

    prog = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))
    prog.path = "samples/matmul_bias_relu.mlir"
    sess = Session(prog)
    logp, masks = fake_heads(sess, {"NT": 0.48, "T": 0.29, "TP": 0.15, "TF": 0.08},
                             {"T": [{4: 0.6, 8: 0.4}, {32: 0.8, 16: 0.2}], "TP": [{32: 0.9, 64: 0.1}, {64: 1.0}]})
    why = explain(sess, logp, masks, value=1.1, k=4, cost_model=FakeCostModel())
    action = parse(f"op0: {why.action}").actions("op0")[0]
    app = make_app(prog, FakeAdapter(suggestion=Suggestion(action, [], why)))

    async def run_before(pilot) -> None:
        await _settle(pilot)
        await pilot.press("s")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
