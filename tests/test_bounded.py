"""Files of unknown origin are read within a memory bound: a gzip bomb, an oversized line and a 1 MB schedule
are refused in one line (or counted as bad lines) without holding them."""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc

import pytest

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.store import bounded


def _peak_mib(fn) -> tuple[object, float]:
    tracemalloc.start()
    try:
        try:
            out = fn()
        except EngineError as e:
            out = e
        return out, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def test_lines_are_held_only_up_to_their_limit():
    f = io.StringIO("short\n" + "y" * 5000 + "\nlast\ncut")
    assert list(bounded.lines(f, 100)) == ["short\n", None, "last\n", "cut"]
    f = io.BytesIO(b"a\n" + b"z" * 300 + b"\n")
    assert list(bounded.lines(f, 10)) == [b"a\n", None]


def test_a_gzip_bomb_measurement_file_is_refused_within_a_memory_bound(tmp_path):
    """64 MiB of one line, compressed to ~64 KB, after a valid header: refused in one line, and the reader
    never holds more than a few MiB (the line limit is 1 MiB)."""
    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION
    from mlir_rl_tui.engine.store.jsonl import MEASUREMENTS as MEASUREMENTS_FORMAT
    from mlir_rl_tui.engine.store.measurement_file import read_measurements

    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"format": MEASUREMENTS_FORMAT, "engine_version": ENGINE_VERSION, "rows": 1}) + "\n")
        block = "x" * (1 << 20)
        for _ in range(64):
            f.write(block)
        f.write("\n")
    assert path.stat().st_size < 1 << 20
    err, peak = _peak_mib(lambda: list(read_measurements(str(path))))
    assert isinstance(err, EngineError) and "row 1 is longer than a measurement row can be" in str(err)
    assert "\n" not in str(err) and peak < 16, peak


def test_a_trace_line_over_the_limit_is_a_bad_line_not_a_whole_read(tmp_path, monkeypatch):
    from mlir_rl_tui.engine.rl import trace

    monkeypatch.setattr(trace, "MAX_RECORD_CHARS", 1 << 20)
    path = tmp_path / "t.jsonl"
    with open(path, "w") as f:
        f.write("z" * (32 << 20) + "\n")
    got, peak = _peak_mib(lambda: trace.read_trace(str(path)))
    assert got.records == [] and got.bad_lines == 1 and not got.truncated and peak < 16, peak


def test_a_megabyte_schedule_is_refused_in_one_short_line():
    from mlir_rl_tui.engine.schedule.notation import ScheduleError, parse

    with pytest.raises(ScheduleError) as e:
        parse("op0: T(8,32,1) V; " * 60_000)
    assert "longer than a schedule can be" in str(e.value) and len(str(e.value)) < 200
    with pytest.raises(ScheduleError) as e:
        parse("op0: " + "Q" * 100_000)
    assert len(str(e.value)) < 300  # the offending part is quoted clipped, not whole


def test_an_import_refused_half_way_stores_none_of_its_rows(tmp_path):
    """A measurement file whose first row is good and whose second is a gzip bomb: one transaction, so the
    refusal leaves the cache as it was (no first row either)."""
    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION, Cache
    from mlir_rl_tui.engine.store.jsonl import MEASUREMENTS as MEASUREMENTS_FORMAT
    from mlir_rl_tui.engine.store.measurement_file import import_measurements

    good = Measurement(status="ok", schedule="op0: V", time_ms=1.0, baseline_ms=2.0, speedup=2.0).to_record()
    path = tmp_path / "half.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"format": MEASUREMENTS_FORMAT, "engine_version": ENGINE_VERSION, "rows": 2}) + "\n")
        f.write(json.dumps({"program": "a" * 64, "schedule": "op0: V", "machine": "m", "result": good}) + "\n")
        f.write("x" * (3 << 20) + "\n")
    cache = Cache(str(tmp_path / "c.sqlite"))
    with pytest.raises(EngineError, match="row 2 is longer"):
        import_measurements(cache, str(path))
    assert len(cache) == 0 and cache.usable
    cache.close()
    assert len(Cache(str(tmp_path / "c.sqlite"))) == 0
