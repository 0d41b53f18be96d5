"""The one JSON-lines writer and reader (engine.store.jsonl): whatever a killed writer left, the file holds whole
records, the next append starts on a line of its own, and a reader drops the cut line and counts bad ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mlir_rl_tui.engine.store import jsonl


def test_a_line_cut_by_a_kill_is_dropped_on_read_and_cut_off_before_the_next_append(tmp_path):
    path = str(tmp_path / "rows.jsonl")
    jsonl.append(path, jsonl.header(jsonl.EVALUATE_ROWS, seed=0), {"program": "a"})
    with open(path, "a") as f:
        f.write('{"program": "b", "spe')  # the writer killed mid-line
    lines = jsonl.read(path)
    assert lines.cut and [r.get("program") for r in lines.records[1:]] == ["a"]
    assert jsonl.is_header(lines.records[0], jsonl.EVALUATE_ROWS) and not jsonl.is_header({}, jsonl.EVALUATE_ROWS)
    assert jsonl.append(path, {"program": "c"}) == len('{"program": "b", "spe')
    lines = jsonl.read(path)
    assert not lines.cut and [r["program"] for r in lines.records[1:]] == ["a", "c"]
    assert open(path).read().endswith('{"program":"c"}\n')


def test_a_writer_killed_by_a_signal_leaves_whole_records_only(tmp_path):
    """A real kill -9 of a process appending large records: every line read back is a whole record."""
    path = str(tmp_path / "big.jsonl")
    code = ("import sys; from mlir_rl_tui.engine.store import jsonl\n"
            "i = 0\n"
            "while True:\n"
            "    jsonl.append(sys.argv[1], {'i': i, 'pad': 'x' * 200000}); i += 1\n")
    p = subprocess.Popen([sys.executable, "-c", code, path])
    try:
        while not os.path.exists(path) or os.path.getsize(path) < 2_000_000:
            assert p.poll() is None
        p.kill()
    finally:
        p.wait()
    lines = jsonl.read(path)
    assert [r["i"] for r in lines.records] == list(range(len(lines.records))) and lines.bad == 0
    jsonl.append(path, {"i": -1})
    assert jsonl.read(path).records[-1] == {"i": -1} and not jsonl.read(path).cut


def test_bad_and_over_long_lines_are_counted_with_their_numbers_never_held_whole(tmp_path):
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"a": 1}\n\nnot json\n' + json.dumps({"x": "y" * 5000}) + "\n[2]\n")
    lines = jsonl.read(str(path), limit=1000)
    assert lines.records == [{"a": 1}, None, None, [2]] and lines.numbers == [1, 3, 4, 5] and lines.bad == 2
    assert jsonl.read(str(tmp_path / "missing.jsonl")).records == []
