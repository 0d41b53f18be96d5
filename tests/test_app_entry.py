"""The app on a file with several functions and no --entry: a picker, real loading, fake measurements."""

from __future__ import annotations

import asyncio
import functools

from bad_inputs import add, matmul
from fake_adapter import FakeAdapter

from mlir_rl_tui.app import EntryChoice, make_app
from mlir_rl_tui.engine import load_file
from mlir_rl_tui.engine.errors import EntryError
from mlir_rl_tui.engine.ir.program import measurement_note
from mlir_rl_tui.screens.entry import EntryPicker
from mlir_rl_tui.screens.main import MainScreen

SIZE = (120, 40)
DYNAMIC = """func.func @dynamic(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %a : tensor<?x4xf32>
}
"""


def sync(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return asyncio.run(fn(*a, **kw))

    return wrapper


def choice_for(path) -> EntryChoice:
    """What the command line builds when loading `path` without --entry raised EntryError."""
    try:
        load_file(str(path))
    except EntryError as e:
        return EntryChoice(str(path), e.candidates, str(e), lambda name: load_file(str(path), name),
                           lambda prog: measurement_note(prog, str(path)))
    raise AssertionError("expected an EntryError")


async def wait_for(pilot, cond, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


@sync
async def test_picker_opens_the_chosen_function(tmp_path):
    path = tmp_path / "two.mlir"
    path.write_text(matmul(32, "first") + add(32, "second"))
    app = make_app(choice_for(path), FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, EntryPicker)
        options = app.screen.query_one("#entries")
        assert [options.get_option_at_index(i).id for i in range(options.option_count)] == ["first", "second"]
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.program.func_name == "second" and [o.name for o in app.program.ops] == ["linalg.add"]
        assert "@second" in app.main.sub_title


@sync
async def test_picker_shows_why_a_function_cannot_be_opened_and_stays(tmp_path):
    path = tmp_path / "mixed.mlir"
    path.write_text(DYNAMIC + add(16, "good"))
    app = make_app(choice_for(path), FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # @dynamic
        picker = app.screen
        await wait_for(pilot, lambda: "dynamic shape" in picker.error)
        assert picker.error.startswith(f"{path}: argument 0 of @dynamic has dynamic shape")
        assert isinstance(app.screen, EntryPicker)
        await pilot.press("down", "enter")  # @good
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert app.program.func_name == "good"


@sync
async def test_quitting_the_picker_ends_with_the_command_line_error(tmp_path):
    path = tmp_path / "two.mlir"
    path.write_text(matmul(16, "first") + add(16, "second"))
    choice = choice_for(path)
    app = make_app(choice, FakeAdapter())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_code == 2 and app.exit_error == choice.message and "--entry" in choice.message


@sync
async def test_a_slow_program_opens_with_a_note(tmp_path):
    path = tmp_path / "mm.mlir"
    path.write_text(matmul(2048))
    prog = load_file(str(path))
    note = measurement_note(prog, str(path))
    app = make_app(prog, FakeAdapter(), note=note)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert [n.message for n in app._notifications] == [note]
