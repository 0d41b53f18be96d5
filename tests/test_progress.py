"""The progress line: silent for the first second, then rewritten in place (terminal) or rate-limited (log)."""

from __future__ import annotations

import io
import re
import time

from mlir_rl_tui.progress import ProgressLine


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_nothing_within_the_first_second_then_the_elapsed_time():
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=False, tick_s=None)
    line.update("apply: compiling")
    clock.t += 0.9
    line.update("apply: the first run")
    assert out.getvalue() == ""
    clock.t += 0.2
    line.update("apply: the first run")
    assert out.getvalue() == "apply: the first run (1 s)\n"


def test_a_log_gets_a_line_every_few_seconds_not_every_update():
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=False, every_s=5.0, tick_s=None)
    for i in range(1, 100):
        clock.t += 0.125
        line.update(f"apply: timing, round {i} of at least 10")
    lines = out.getvalue().splitlines()
    assert lines == ["apply: timing, round 8 of at least 10 (1 s)", "apply: timing, round 48 of at least 10 (6 s)",
                     "apply: timing, round 88 of at least 10 (11 s)"]
    line.clear()
    assert out.getvalue().endswith("(11 s)\n")  # a log keeps its lines


def test_a_log_repeats_an_unchanged_line_once_a_minute():
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=False, every_s=5.0, tick_s=None)
    for _ in range(130):  # 130 s of the same text, then a new one
        clock.t += 1
        line.update("teacher: 3/416")
    clock.t += 1
    line.update("teacher: 4/416")
    assert out.getvalue().splitlines() == ["teacher: 3/416 (1 s)", "teacher: 3/416 (61 s)",
                                           "teacher: 3/416 (2 min 01 s)", "teacher: 4/416 (2 min 11 s)"]


def test_a_terminal_line_is_rewritten_in_place_and_cleared():
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=True, tick_s=None)
    clock.t += 2
    line.update("loading x.mlir: parsing")
    clock.t += 1
    line.update("loading x.mlir: parsing")
    line.clear()
    assert out.getvalue() == ("\r\033[Kloading x.mlir: parsing (2 s)\r\033[Kloading x.mlir: parsing (3 s)"
                              "\r\033[K")


def test_the_ticker_shows_the_line_when_nothing_reports():
    """One long baseline run reports nothing for seconds: the line still appears and counts."""
    out = io.StringIO()
    line = ProgressLine(out, after_s=0.05, every_s=0.0, tty=False, tick_s=0.02)
    line.update("apply: the first run")  # before after_s: nothing yet
    time.sleep(0.3)
    line.clear()
    shown = out.getvalue()
    assert re.search(r"apply: the first run \(0\.[0-9] s\)", shown)  # below a second: tenths
    n = shown.count("\n")
    time.sleep(0.1)
    assert out.getvalue().count("\n") == n  # stopped after clear()


def test_engine_phases_read_as_words():
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=False, every_s=0.0, tick_s=None)
    clock.t += 1
    on_progress = line.phase("apply")
    on_progress("baseline", 0, 0)
    on_progress("run", 0, 0)
    on_progress("run", 3, 10)
    assert out.getvalue().splitlines() == ["apply: compiling and running the baseline (1 s)",
                                           "apply: the first run (1 s)", "apply: timing, round 3 of at least 10 (1 s)"]


def test_the_timing_says_how_long_its_least_rounds_still_take():
    """A slow kernel's rounds: the pace of those done gives the time left for the protocol's least rounds."""
    out, clock = io.StringIO(), Clock()
    line = ProgressLine(out, clock=clock, tty=False, every_s=0.0, tick_s=None)
    on_progress = line.phase("apply")
    for i in range(1, 4):
        clock.t += 8.6
        on_progress("run", i, 10)
    assert out.getvalue().splitlines()[-1] == "apply: timing, round 3 of at least 10, about 60 s left (26 s)"


def test_a_log_line_goes_above_the_progress_line_and_stays():
    out, clock = io.StringIO(), Clock()
    with ProgressLine(out, clock=clock, tty=True, tick_s=None) as line:
        clock.t += 2
        line.update("PPO iteration 1/2: collecting")
        line.log("[ 2.0s] BC epoch 1: 0.5")
    assert out.getvalue() == ("\r\033[KPPO iteration 1/2: collecting (2 s)\r\033[K[ 2.0s] BC epoch 1: 0.5\n"
                              "\r\033[KPPO iteration 1/2: collecting (2 s)\r\033[K")  # cleared on leaving
    log, clock = io.StringIO(), Clock()
    with ProgressLine(log, clock=clock, tty=False, tick_s=None) as line:
        line.log("teacher: 1/3")  # a log keeps every log line, at once
        line.log("teacher: 2/3")
    assert log.getvalue() == "teacher: 1/3\nteacher: 2/3\n"


def test_one_rule_writes_every_duration():
    from mlir_rl_tui.engine.units import duration, left

    assert [duration(s) for s in (0.04, 0.44, 0.96, 4.4, 42.4, 99.4, 99.6, 125, 5999, 6000, 11220)] == [
        "0.0 s", "0.4 s", "1 s", "4 s", "42 s", "99 s", "1 min 40 s", "2 min 05 s", "99 min 59 s", "1 h 40 min",
        "3 h 07 min"]
    assert duration(-3) == "0.0 s" and left(125) == "about 2 min 05 s left"
