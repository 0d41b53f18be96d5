"""Lessons: the format is checked, and every shipped lesson runs end to end in the app on the real engine
(each step applies, validates and speeds up: at least a third of the gain the lesson promises, see floor());
a snapshot of a lesson screen."""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import replace

import pytest
from fake_adapter import FakeAdapter

from mlir_rl_tui import lessons
from mlir_rl_tui.adapter import EngineAdapter
from mlir_rl_tui.app import make_app
from mlir_rl_tui.engine import EngineError, load_file
from mlir_rl_tui.engine.schedule.state import check_schedule
from mlir_rl_tui.widgets.lesson import LessonView


def test_shipped_lessons_are_legal_schedules_on_their_programs():
    names = lessons.shipped()
    assert len(names) >= 3
    for name in names:
        les = lessons.load(name)
        prog = load_file(les.program)
        for step in les.steps:
            from mlir_rl_tui.engine import parse

            check_schedule(prog, parse(step.schedule))  # raises on an illegal step
        assert any(s.faster for s in les.steps)


@pytest.mark.parametrize("text,what", [
    ('title = "x"\nprogram = "matmul"\n', "missing `step`"),
    ('title = "x"\nprogram = "matmul"\n[[step]]\ntitle = "a"\ntext = "b"\nschedule = "op0: T(7,1,1)"\n', "step 1"),
    ('title = "x"\nprogram = "nope"\n[[step]]\ntitle = "a"\ntext = "b"\nschedule = ""\n', "no sample"),
    ('title = "x"\nprogram = "matmul"\n[[step]]\ntitle = "a"\ntext = "b"\nschedule = ""\nlook = "x"\n', "look"),
    ("not toml [", "not a lesson"),
])
def test_a_bad_lesson_file_is_one_line(tmp_path, text, what):
    p = tmp_path / "l.toml"
    p.write_text(text)
    with pytest.raises(EngineError, match=what):
        lessons.load(str(p))


async def settle(pilot, timeout: float = 300.0) -> None:
    await pilot.pause(0.15)
    await asyncio.wait_for(pilot.app.workers.wait_for_complete(), timeout)
    await pilot.pause()


def measured_again(engine, prog, before: str, after: str) -> float:
    """How many times faster `after` is than `before`, timed afresh side by side (engine.measure.remeasure: 5
    interleaved rounds, more while split), median over median: once measured in the app, a 2x claim read
    1.04x in one CI run, when the machine slowed down between the two steps' timings."""
    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.measure.remeasure import remeasure

    runs = remeasure(engine, prog, [parse(before), parse(after)], rounds=5)
    times = [statistics.median(m.time_ms for m in ms if m.ok and m.time_ms) for ms in runs.values()]
    return times[0] / times[1]


def floor(promise: float) -> float:
    """The least gain the test accepts for a promised one: a third of the promised gain over 1x (10x -> 4x,
    1.3x -> 1.1x). A broken step (no vector code, a serial loop where a parallel one was asked for) lands
    near 1x and fails; a parallel step on a VM whose second core the host shares at times (an Intel VM
    measured 1.13x to 1.7x for the matmul lesson's 1.3x) passes. The promises themselves are measured
    with their spread by benchmarks/lessons.py, not asserted here."""
    return 1.0 + (promise - 1.0) / 3.0


@pytest.mark.parametrize("name", lessons.shipped())
def test_lesson_runs_end_to_end(engine, name, monkeypatch):
    # a lesson's gains are its point: measurements of the product's length, not the suite's least rounds
    monkeypatch.setattr(engine, "config", replace(engine.config, budget_s=1.5))
    les = lessons.load(name)
    prog = load_file(les.program)

    async def run() -> None:
        app = make_app(prog, EngineAdapter(engine), lesson=les)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            main = app.main
            view = main.query_one(LessonView)
            for k, step in enumerate(les.steps):
                await pilot.press("right_square_bracket")
                await settle(pilot)
                assert main.schedule_text == step.schedule, (k, main.schedule_text)
                m, gain = view.result(k, main.workspace)
                assert m is not None and m.ok and m.validated, (step.title, m and m.error)
                if step.faster:
                    assert gain is not None, step.title
                    tries = 0
                    while gain < floor(step.faster) and tries < 2:  # one pair of timings: a slow spell of the
                        # machine (or of the host's use of the second core) can hide the gain: time both again
                        gain = max(gain, measured_again(engine, prog, les.steps[k - 1].schedule, step.schedule))
                        tries += 1
                    assert gain >= floor(step.faster), (step.title, gain, step.faster)
            # leave the lesson (undo its last step), come back to the step it shows
            await pilot.press("u")
            await settle(pilot)
            assert main.schedule_text == les.steps[-2].schedule
            await pilot.press("l")
            await settle(pilot)
            assert main.schedule_text == les.steps[-1].schedule

    asyncio.run(run())


def test_lesson_screen_snapshot(snap_compare):
    les = lessons.load("matmul")
    prog = load_file(les.program)
    prog.path = "samples/matmul.mlir"

    async def run_before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.app.workers.wait_for_complete()
        for _ in range(3):
            await pilot.press("right_square_bracket")
            await pilot.pause(0.2)
            await pilot.app.workers.wait_for_complete()
        await pilot.pause(0.3)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(make_app(prog, FakeAdapter(), lesson=les), terminal_size=(120, 40), run_before=run_before)
