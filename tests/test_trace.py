"""Traces: written per step by search and the env, read back whole lines only, replayed and re-measured."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import SAMPLES

from engine import load_file, parse
from engine.search import search
from engine.trace import read_trace, write_schedule


@pytest.fixture
def cli(capsys, cache_dir):
    """Run the command line in this process (one import of the app, same cache): (code, stdout, stderr)."""
    from mlir_rl_tui.commands import main

    def run(*args: str) -> subprocess.CompletedProcess:
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run


def test_search_trace_holds_the_best_schedule_step_by_step(engine, matmul, tmp_path):
    path = str(tmp_path / "hill.jsonl")
    r = search(engine, matmul, "hill", 4, trace=path)
    tr = read_trace(path)
    assert not tr.truncated and tr.bad_lines == 0
    (ep,) = tr.episodes()
    assert ep.schedule == r.schedule and ep.program_sha256 == matmul.sha256
    assert {rec["source"] for rec in ep.records} == {"search"}
    assert [rec["step"] for rec in ep.records] == list(range(len(r.schedule)))
    assert ep.measurement["speedup"] == r.best.speedup
    assert all(rec["measurement"] is None for rec in ep.records[:-1])
    from engine.features import feature_size

    assert len(ep.records[0]["observation"]) == 2 * feature_size()
    assert ep.records[0]["mask"][0] == [1, 1, 1, 1, 0, 1]  # V masked on the untiled matmul


def test_replay_reproduces_the_schedule_and_the_speedup(engine, matmul, tmp_path, cli):
    path = str(tmp_path / "t.jsonl")
    # serial: a parallel kernel's time swings far more when the other core is busy
    sched = parse("op0: T(4,32,1) V; op1: NT")
    m = engine.measure(matmul, sched)
    write_schedule(path, matmul, sched, "user", m)
    r = cli("replay", path, "--json", "--runs", "3")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    (ep,) = d["episodes"]
    assert not d["truncated"] and ep["schedule"] == str(sched) and ep["complete"]
    assert ep["status"] == "ok" and ep["validated"]
    # a re-measurement, not a cache answer: same schedule, speedup within the timing noise of a busy
    # 2-core machine (benchmarks/search_quality.py reports the replayed figures)
    assert ep["recorded_speedup"] == m.speedup
    assert ep["speedup"] > 1.5 and m.speedup / 5 < ep["speedup"] < m.speedup * 5


def test_truncated_trace_replays_its_whole_lines_and_says_so(engine, matmul, tmp_path, cli):
    path = tmp_path / "cut.jsonl"
    write_schedule(str(path), matmul, parse("op0: T(32,32,32) NT; op1: NT"), "user", None)
    write_schedule(str(path), matmul, parse("op0: T(16,16,16) T(8,8,8) V; op1: NT"), "policy", None)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])  # killed in the middle of the last record
    tr = read_trace(str(path))
    assert tr.truncated and len(tr.records) == 6
    assert [e.schedule for e in tr.episodes()] == [parse("op0: T(32,32,32) NT; op1: NT"),
                                                    parse("op0: T(16,16,16) T(8,8,8) V")]
    r = cli("replay", str(path), "--json", "--runs", "1")
    d = json.loads(r.stdout)
    assert d["truncated"] and d["records"] == 6
    assert [e["complete"] for e in d["episodes"]] == [True, False]
    assert all(e["status"] == "ok" for e in d["episodes"]), d
    text = cli("replay", str(path), "--runs", "1")
    assert "truncated" in text.stdout and "incomplete episode" in text.stdout


def test_program_text_travels_with_a_trace_of_an_in_memory_program(engine, tmp_path):
    from engine import load

    prog = load((SAMPLES / "relu.mlir").read_text())
    path = str(tmp_path / "mem.jsonl")
    write_schedule(path, prog, parse("op0: T(8,64) V"), "user", None)
    (ep,) = read_trace(path).episodes()
    assert ep.program_text == prog.text and ep.program == prog.sha256


def test_env_traces_number_their_episodes_after_those_in_the_file(engine, matmul, tmp_path):
    from engine.actions import to_vectors
    from engine.env import ScheduleEnv
    from engine.schedule import Action

    path = str(tmp_path / "env.jsonl")
    write_schedule(path, matmul, parse("op0: NT; op1: NT"), "user", None)
    env = ScheduleEnv(matmul, engine=engine, measure="never", trace=path)
    for _ in range(2):
        env.reset()
        while not env.unwrapped.session.done:
            (v,) = to_vectors(env.session, Action("NT"))
            env.step(v)
    env.close()
    eps = read_trace(path).episodes()
    assert [e.records[0]["episode"] for e in eps] == [0, 1, 2]
    assert [e.records[0]["source"] for e in eps] == ["user", "policy", "policy"]


def test_replay_errors_are_one_line(tmp_path, cli):
    r = cli("replay", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 2 and "cannot read" in r.stderr and r.stderr.count("\n") == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"program": "x", "prog')
    r = cli("replay", str(empty))
    assert r.returncode == 2 and "no whole trace record (truncated)" in r.stderr
    moved = tmp_path / "moved.jsonl"
    moved.write_text(json.dumps({"program": "gone.mlir", "program_sha256": "0" * 64, "op": "op0", "step": 0,
                                 "action": "NT", "source": "user"}) + "\n")
    r = cli("replay", str(moved))
    assert r.returncode == 2 and "gone.mlir not found" in r.stderr


def test_replay_refuses_a_program_that_changed(tmp_path, cli):
    src = tmp_path / "m.mlir"
    src.write_text((SAMPLES / "matmul.mlir").read_text())
    prog = load_file(str(src))
    path = str(tmp_path / "t.jsonl")
    write_schedule(path, prog, parse("op0: NT; op1: NT"), "user", None)
    src.write_text((SAMPLES / "matmul.mlir").read_text() + "\n// edited\n")
    r = cli("replay", path)
    assert r.returncode == 2 and "changed since the trace was recorded" in r.stderr


def test_appending_after_a_cut_last_line_drops_it_first(matmul, tmp_path, capsys):
    path = tmp_path / "cut.jsonl"
    first, second, third = (parse("op0: T(32,32,32) NT; op1: NT"), parse("op0: T(16,16,16) T(8,8,8) V; op1: NT"),
                            parse("op0: T(8,32,1) V; op1: NT"))
    write_schedule(str(path), matmul, first, "user", None)
    whole = path.read_bytes()
    write_schedule(str(path), matmul, second, "policy", None)
    data = path.read_bytes()
    path.write_bytes(data[: len(whole) + 100])  # killed 100 bytes into the second episode's first record
    assert read_trace(str(path)).truncated
    capsys.readouterr()
    write_schedule(str(path), matmul, third, "search", None)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("mlir-rl-tui: warning: trace ") and "100 bytes" in line
    assert path.read_bytes().startswith(whole)  # every whole record kept as it was
    tr = read_trace(str(path))
    assert not tr.truncated and tr.bad_lines == 0 and len(tr.records) == 3 + 3
    eps = tr.episodes()
    assert [e.schedule for e in eps] == [first, third]  # the next episode is complete, on lines of its own
    assert [r["step"] for r in eps[1].records] == [0, 1, 2] and eps[1].records[0]["source"] == "search"


def test_a_file_holding_only_a_cut_line_is_emptied_before_appending(matmul, tmp_path):
    from engine.trace import TraceWriter

    path = tmp_path / "only-cut.jsonl"
    path.write_bytes(b'{"program": "samples/matmul.ml')
    with TraceWriter(str(path)) as w:
        w.append({"program": "x", "program_sha256": "y", "op": "op0", "step": 0, "action": "NT"})
        assert w.repaired == 30
    tr = read_trace(str(path))
    assert not tr.truncated and tr.bad_lines == 0 and [r["op"] for r in tr.records] == ["op0"]
