"""The app with a fake adapter (fixed timings): keys, mask, failures, suggestion, recording, export."""

from __future__ import annotations

import asyncio
import functools
import pathlib

import pytest
from fake_adapter import FakeAdapter

from mlir_rl_tui.adapter import Suggestion
from mlir_rl_tui.app import make_app
from mlir_rl_tui.engine import Action, Measurement, load_file
from mlir_rl_tui.engine.rl.trace import read_trace
from mlir_rl_tui.widgets.action_bar import ActionBar
from mlir_rl_tui.widgets.plot import SpeedupPlot
from mlir_rl_tui.widgets.status_bar import StatusBar

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples"
SIZE = (120, 40)


def sync(fn):
    """Run an async test with asyncio.run (no pytest-asyncio in the test dependencies)."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(fn(*a, **kw))

    return wrapper


async def settle(pilot) -> None:
    await pilot.pause(0.15)  # the baseline starts 0.1 s after the first paint
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def status(app) -> str:
    bar = app.main.query_one(StatusBar)
    return f"{bar.numbers_text} | {bar.status}: {bar.message}"


@pytest.fixture
def matmul_prog():
    return load_file(str(SAMPLES / "matmul.mlir"))


@sync
async def test_tile_with_default_sizes_then_undo(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "speedup 1.00x" in status(app)
        await pilot.press("t", "x")
        await settle(pilot)
        main = app.main
        assert main.schedule_text == "op0: T(32,32,32)"
        assert "speedup 2.00x" in status(app)
        assert [p.speedup for p in main.query_one(SpeedupPlot).points] == [2.0]
        await pilot.press("u")
        await settle(pilot)
        assert main.schedule_text == ""
        assert "speedup 1.00x" in status(app)
        assert main.query_one(SpeedupPlot).points == []


@sync
async def test_masked_step_shows_reason_and_app_stays_usable(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")  # 256x256x256 cannot be vectorized before tiling
        await settle(pilot)
        assert app.main.schedule_text == ""
        bar = app.main.query_one(StatusBar)
        assert bar.status == "masked"
        assert "8192" in bar.message
        await pilot.press("t", "x")
        await settle(pilot)
        assert app.main.schedule_text == "op0: T(32,32,32)"


@sync
async def test_a_tiling_that_tiles_nothing_is_said(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said: list[str] = []
        real = app.main.notify
        app.main.notify = lambda message, **kw: (said.append(message), real(message, **kw))
        app.main.apply_action(Action("T", (32, 32, 32)))
        await settle(pilot)
        assert said == []
        app.main.apply_action(Action("T", (32, 32, 32)))  # the tile is 32x32x32 already
        await settle(pilot)
        assert app.main.schedule_text == "op0: T(32,32,32) T(32,32,32)"
        assert len(said) == 1 and "tiles no loop of op0 (its tile is 32x32x32): no code" in said[0]


@sync
async def test_crashing_step_shows_status_and_undo_recovers(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter(fail={"TP": "crash"}))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "x")
        await settle(pilot)
        bar = app.main.query_one(StatusBar)
        assert bar.status == "crash"
        assert bar.message == "fake crash for TP"
        assert "speedup -" in bar.numbers_text
        await pilot.press("u", "t", "x")
        await settle(pilot)
        assert app.main.query_one(StatusBar).status == "ok"


@sync
async def test_a_kind_key_and_apply_in_one_tick_apply_that_kind(matmul_prog):
    # `p x` typed fast (or on a loaded machine, as in a served classroom) reaches the screen in one batch
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.main.action_pick("TP")
        app.main.action_apply()
        await settle(pilot)
        assert app.main.schedule_text == "op0: TP(32,32,0)"


class RaisingAdapter(FakeAdapter):
    def measure(self, program, schedule, on_progress=None, cancel=None):
        if schedule.ops:
            raise RuntimeError("worker pool\nexploded")
        return super().measure(program, schedule, on_progress, cancel)


@sync
async def test_worker_exception_is_one_line_in_status(matmul_prog):
    app = make_app(matmul_prog, RaisingAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t", "x")
        await settle(pilot)
        bar = app.main.query_one(StatusBar)
        assert bar.status == "error"
        assert bar.message == "measure: worker pool exploded"
        await pilot.press("u")
        await settle(pilot)
        assert app.main.query_one(StatusBar).status == "ok"


@sync
async def test_interchange_and_tile_choices_from_the_action_bar(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await pilot.pause()
        bar = app.main.query_one(ActionBar)
        assert bar.kind == "I"
        for sel, v in zip(bar._params, (2, 0, 1), strict=True):
            sel.value = v
        await pilot.press("x")
        await settle(pilot)
        assert app.main.schedule_text == "op0: I(2,0,1)"
        await pilot.press("i")
        await pilot.pause()
        for sel in bar._params:
            sel.value = 0
        await pilot.press("x")
        await settle(pilot)
        assert app.main.schedule_text == "op0: I(2,0,1)"  # not a permutation: refused
        assert app.main.query_one(StatusBar).status == "invalid"


@sync
async def test_suggest_without_policy_says_so(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        assert app.main.query_one(StatusBar).message == "no policy checkpoint available"
        await pilot.press("a")
        await settle(pilot)
        assert app.main.schedule_text == ""


@sync
async def test_suggest_and_accept_records_policy_source(matmul_prog, tmp_path):
    sug = Suggestion(Action("T", (8, 32, 1)), [("T(8,32,1)", 0.7), ("TP(32,32,0)", 0.2), ("NT", 0.1)])
    trace = tmp_path / "t.jsonl"
    app = make_app(matmul_prog, FakeAdapter(suggestion=sug), record=str(trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert app.main.schedule_text == "op0: T(8,32,1)"
        await pilot.press("v")
        await settle(pilot)
        pts = app.main.query_one(SpeedupPlot).points
        assert [(p.source, p.speedup) for p in pts] == [("policy", 2.0), ("user", 4.0)]
    tr = read_trace(str(trace))
    assert [(r["action"], r["source"]) for r in tr.records] == [("T(8,32,1)", "policy"), ("V", "user")]
    assert tr.records[1]["measurement"]["speedup"] == 4.0


@sync
async def test_export_writes_ir_script_schedule_and_trace(matmul_prog, tmp_path):
    app = make_app(matmul_prog, FakeAdapter())
    folder = tmp_path / "out"
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t", "x")
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        inp = app.screen.query_one("Input")
        inp.value = str(folder)
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.query_one(StatusBar).status == "ok"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["matmul.transform.mlir", "matmul.transformed.mlir", "schedule.txt", "trace.jsonl"]
    assert (folder / "schedule.txt").read_text().strip() == "op0: T(32,32,32)"
    assert [r["action"] for r in read_trace(str(folder / "trace.jsonl")).records] == ["T(32,32,32)"]


@sync
async def test_views_switch_and_loop_nest_follows_the_schedule(matmul_prog):
    from mlir_rl_tui.widgets.ir_view import IRView

    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t", "x")
        await settle(pilot)
        ir = app.main.query_one(IRView)
        await pilot.press("4")
        await pilot.pause()
        assert ir.mode == "loops"
        assert "for i0 in 0..256 step 32:" in ir._texts["loops"]
        await pilot.press("3")
        await settle(pilot)
        assert ir._texts["diff"].startswith("--- original")
        await pilot.press("5")
        await pilot.pause()
        assert "transform.structured.tile_using_for" in ir._texts["script"]


def test_command_palette_lists_every_binding():
    from mlir_rl_tui.palette import COMMANDS
    from mlir_rl_tui.screens.main import MainScreen

    actions = {a for _, a, _ in COMMANDS}
    for b in MainScreen.BINDINGS:
        assert b.action in actions, b.action


@sync
async def test_palette_command_runs_on_main_screen(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"view: loop nest")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)
        from mlir_rl_tui.widgets.ir_view import IRView

        assert app.main.query_one(IRView).mode == "loops"


@sync
async def test_every_sample_opens_and_steps(tmp_path):
    for path in sorted(SAMPLES.glob("*.mlir")):
        prog = load_file(str(path))
        app = make_app(prog, FakeAdapter())
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("n")
            await settle(pilot)
            assert app.main.workspace.steps and app.main.workspace.steps[0].action == Action("NT"), path.name


@sync
async def test_long_ir_is_cut_with_a_note_and_still_highlighted(matmul_prog):
    from mlir_rl_tui.widgets.ir_view import MAX_LINES, IRView

    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        ir = app.main.query_one(IRView)
        ir.set_text("original", "\n".join(f"%c{i} = arith.constant {i} : i32" for i in range(3 * MAX_LINES)))
        await settle(pilot)  # parsed and highlighted in a thread worker (the text is long)
        doc = ir.query_one("#ir-text").document
        assert doc.line_count == MAX_LINES + 1
        assert doc.get_line(MAX_LINES).startswith(f"// ... {2 * MAX_LINES} more lines not shown here")
        assert ir.query_one("#ir-text")._highlights
        assert ir._texts["original"].count("\n") == 3 * MAX_LINES - 1  # the text itself is whole (export)


def _tree_lines(tree) -> list[str]:
    lines = []

    def walk(node, depth):
        lines.append("  " * depth + node.label.plain)
        for child in node.children:
            walk(child, depth + 1)

    walk(tree.root, 0)
    return lines


@sync
async def test_op_tree_follows_steps_in_place(matmul_prog):
    """The op tree relabels its nodes (no clear and rebuild per step) and shows what a fresh tree would."""
    from mlir_rl_tui.widgets.op_tree import OpTree

    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.main.query_one(OpTree)
        nodes = list(tree.root.children)
        await pilot.press("t")
        await settle(pilot)
        assert app.focused is app.main.query_one(ActionBar)._params[0]
        await pilot.press("x")
        await settle(pilot)
        assert list(tree.root.children) == nodes
        fresh = OpTree()
        fresh.show(app.main.session)
        assert _tree_lines(tree) == _tree_lines(fresh)
        assert any("T(32,32,32)" in line for line in _tree_lines(tree))
        await pilot.press("u")
        await settle(pilot)
        fresh = OpTree()
        fresh.show(app.main.session)
        assert _tree_lines(tree) == _tree_lines(fresh)
        assert not any("T(32,32,32)" in line for line in _tree_lines(tree))


@sync
async def test_every_textual_workaround_can_be_switched_off(matmul_prog, monkeypatch):
    """The public-API paths `benchmarks/app_responsiveness.py --off` measures: they must work too."""
    from textual.widgets import TextArea

    from mlir_rl_tui import workarounds

    monkeypatch.setenv(workarounds.ENV, ",".join(workarounds.NAMES))
    assert workarounds.off() == set(workarounds.NAMES)
    app = make_app(matmul_prog, FakeAdapter())
    assert app.idle_gc is None
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t", "x")
        await settle(pilot)
        main = app.main
        assert main.schedule_text == "op0: T(32,32,32)"
        area = main.query_one("#ir-text", TextArea)
        await pilot.press("2")
        await settle(pilot)
        assert area.text.startswith("// transformed by: op0: T(32,32,32)")  # loaded by TextArea.load_text
        assert area.language == "mlir"  # the grammar, registered with TextArea once it was compiled


class _ParallelAdapter(FakeAdapter):
    """The fake adapter, with a schedule that has TP measured on the OpenMP runtime (as the engine reports)."""

    def measure(self, program, schedule, on_progress=None, cancel=None):
        m = super().measure(program, schedule, on_progress, cancel)
        if any(a.kind == "TP" for acts in schedule.ops.values() for a in acts):
            m.runtime = "openmp"
        return m


@sync
async def test_status_bar_names_the_parallel_runtime(matmul_prog):
    app = make_app(matmul_prog, _ParallelAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t", "x")
        await settle(pilot)
        assert "speedup 2.00x" in status(app) and "openmp" not in status(app)  # serial: nothing to say
        await pilot.press("u", "p", "x")
        await settle(pilot)
        assert app.main.schedule_text.startswith("op0: TP(")
        assert app.main.query_one(StatusBar).numbers_text.rstrip().endswith("openmp")


@sync
async def test_a_figure_timed_while_the_cores_were_far_says_so(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.main.query_one(StatusBar)
        bar.set_measurement(Measurement("ok", "op0: TP(32,32,32)", time_ms=1.0, baseline_ms=2.0, speedup=2.0, far=True))
        await pilot.pause()
        assert "far cores" in status(app)
        bar.set_measurement(Measurement("ok", "op0: TP(32,32,32)", time_ms=1.0, baseline_ms=2.0, speedup=2.0))
        await pilot.pause()
        assert "far cores" not in status(app)


@sync
async def test_the_status_bar_says_the_machines_state_in_one_word(matmul_prog):
    app = make_app(matmul_prog, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.main.query_one(StatusBar)
        for word in ("quiet", "noisy", "unstable"):
            bar.set_measurement(Measurement("ok", "op0: T(8)", time_ms=1.0, baseline_ms=2.0, speedup=2.0, state=word))
            await pilot.pause()
            assert bar.numbers_text.rstrip().endswith(word)
        bar.set_measurement(None)
        await pilot.pause()
        assert not any(w in bar.numbers_text for w in ("quiet", "noisy", "unstable"))
