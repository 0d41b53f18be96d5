"""Schedule notation: parse, print, errors."""

from __future__ import annotations

import pytest

from mlir_rl_tui.engine import Action, ScheduleError, parse, to_text


def test_round_trip_and_canonical_order():
    s = parse("op1: TF(32,64) NT;  op0: TP(64,64,0) T(8,32,1) V")
    assert to_text(s) == "op0: TP(64,64,0) T(8,32,1) V; op1: TF(32,64) NT"
    assert s.actions("op0") == [Action("TP", (64, 64, 0)), Action("T", (8, 32, 1)), Action("V")]
    assert parse(to_text(s)) == s


def test_empty_is_baseline():
    assert len(parse("")) == 0 and to_text(parse("  ")) == ""


@pytest.mark.parametrize("bad", ["op0 T(8)", "op0: X(1)", "op0: T(a,b)", "op0: T()", "op0: T(8", "foo: V",
                                 "op0: V; op0: NT"])
def test_malformed_schedule_is_one_line_error(bad):
    with pytest.raises(ScheduleError) as e:
        parse(bad)
    assert "\n" not in str(e.value)


def test_undo_helpers():
    s = parse("op0: T(8,32,1) V")
    assert to_text(s.without_last("op0")) == "op0: T(8,32,1)"
    assert to_text(s.with_action("op1", Action("NT"))) == "op0: T(8,32,1) V; op1: NT"
