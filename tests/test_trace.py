"""Traces: written per step by search and the env, read back whole lines only, replayed and re-measured."""

from __future__ import annotations

import json
import math
import subprocess

import pytest
from conftest import SAMPLES

from mlir_rl_tui.engine import load_file, parse
from mlir_rl_tui.engine.rl.trace import read_trace, write_schedule
from mlir_rl_tui.engine.search import search


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
    from mlir_rl_tui.engine.rl.features import feature_size

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
    from mlir_rl_tui.engine import load

    prog = load((SAMPLES / "relu.mlir").read_text())
    path = str(tmp_path / "mem.jsonl")
    write_schedule(path, prog, parse("op0: T(8,64) V"), "user", None)
    (ep,) = read_trace(path).episodes()
    assert ep.program_text == prog.text and ep.program == prog.sha256


def test_env_traces_number_their_episodes_after_those_in_the_file(engine, matmul, tmp_path):
    import gymnasium

    from mlir_rl_tui.engine.rl.actions import to_vectors
    from mlir_rl_tui.engine.schedule.notation import Action

    path = str(tmp_path / "env.jsonl")
    write_schedule(path, matmul, parse("op0: NT; op1: NT"), "user", None)
    env = gymnasium.make("mlir_rl/Schedule-v0", program=matmul, engine=engine, measure="never", trace=path)
    for _ in range(2):
        env.reset()
        while not env.unwrapped.session.done:
            (v,) = to_vectors(env.unwrapped.session, Action("NT"))
            env.step(v)
    env.close()
    eps = read_trace(path).episodes()
    assert [e.records[0]["episode"] for e in eps] == [0, 1, 2]
    assert [e.records[0]["source"] for e in eps] == ["user", "policy", "policy"]


def test_env_wrapper_records_an_interchange_whole_with_the_observation_before_its_first_level(engine, matmul,
                                                                                               tmp_path):
    from mlir_rl_tui.engine.rl.actions import to_vectors
    from mlir_rl_tui.engine.rl.env import RecordTrace, ScheduleEnv
    from mlir_rl_tui.engine.schedule.notation import Action

    path = str(tmp_path / "env.jsonl")
    env = RecordTrace(ScheduleEnv(matmul, engine=engine, measure="never"), path, source="user")
    obs, info = env.reset(seed=0)
    mask = [m.tolist() for m in info["action_mask"]]
    for a in [Action("I", (2, 0, 1)), Action("NT"), Action("NT")]:
        for v in to_vectors(env.unwrapped.session, a):
            env.step(v)
    env.close()
    (ep,) = read_trace(path).episodes()
    assert [r["action"] for r in ep.records] == ["I(2,0,1)", "NT", "NT"]
    assert [r["step"] for r in ep.records] == [0, 1, 2] and {r["source"] for r in ep.records} == {"user"}
    assert ep.records[0]["observation"] == obs.tolist() and ep.records[0]["mask"] == mask
    assert ep.records[1]["observation"] != obs.tolist()  # NT on op0 sees the interchanged loops


def test_recorder_writes_steps_in_step_order_once_a_measurement_is_known(matmul, tmp_path):
    """The app's use: measurements arrive later, some never (cancelled), a step may be undone."""
    from mlir_rl_tui.engine import Session
    from mlir_rl_tui.engine.rl.actions import flat_mask
    from mlir_rl_tui.engine.rl.trace import TraceRecorder

    path = tmp_path / "t.jsonl"
    sess = Session(matmul)
    rec = TraceRecorder(str(path))

    def step(text: str, source: str = "user"):
        nonlocal sess
        a = parse(f"op0: {text}").actions("op0")[0]
        h = rec.step(matmul, sess.current.op.id, a, sess.observation(), flat_mask(sess.mask()), source)
        sess = sess.apply(a)
        return h

    def actions():
        return [(r["action"], r["step"], r["measurement"]) for r in read_trace(str(path)).records]

    h0, h1, h2 = step("T(32,32,32)"), step("T(8,8,8)", "policy"), step("T(4,4,4)")
    assert actions() == []  # nothing measured yet
    rec.measured(h1, {"status": "ok", "speedup": 2.0})  # h0's measurement was cancelled: it goes without
    assert actions() == [("T(32,32,32)", 0, None), ("T(8,8,8)", 1, {"status": "ok", "speedup": 2.0})]
    rec.measured(h0, {"status": "ok", "speedup": 1.5})  # too late: already written
    assert not rec.discard(h1) and rec.discard(h2)  # undo: h2 is forgotten, h1 is in the file
    h3 = step("V")
    assert h3.record["step"] == 2
    rec.close()  # writes h3, still waiting
    assert actions()[2:] == [("V", 2, None)]
    (ep,) = read_trace(str(path)).episodes()
    assert ep.schedule == parse("op0: T(32,32,32) T(8,8,8) V") and ep.measurement["speedup"] == 2.0
    assert [r["source"] for r in ep.records] == ["user", "policy", "user"]


def test_recorders_never_share_an_episode_number(matmul, tmp_path):
    from mlir_rl_tui.engine.rl.trace import TraceRecorder

    path = str(tmp_path / "t.jsonl")
    with open(path, "w") as f:  # a record of an older trace, without "episode": episode 0
        f.write(json.dumps({"program": matmul.path, "program_sha256": matmul.sha256, "op": "op0", "step": 0,
                            "action": "NT", "source": "user"}) + "\n")
    a, b = TraceRecorder(path), TraceRecorder(path)
    for rec in (a, b, a, b):
        rec.new_episode()
        rec.measured(rec.step(matmul, "op0", "NT", [], [], "search"), None)
    a.close()
    b.close()
    assert [r.get("episode") for r in read_trace(path).records] == [None, 1, 2, 3, 4]
    assert len(read_trace(path).episodes()) == 5


def test_traces_of_earlier_writers_still_read(matmul, tmp_path):
    """As the app (no "episode", steps from 1, "cancelled" measurements) and agent.expert (mask [], no
    "episode") wrote them before the recorder: each file is one episode."""
    from mlir_rl_tui.agent.bc import examples_from_trace

    def rec(step, action, measurement=None, **kw):
        return json.dumps({"program": str(SAMPLES / "matmul.mlir"), "program_sha256": matmul.sha256, "op": "op0",
                           "step": step, "action": action, "observation": [], "mask": [], "source": "user",
                           "measurement": measurement, "time": 0.0, **kw})

    app = tmp_path / "app.jsonl"
    app.write_text("\n".join([rec(1, "T(8,32,1)", {"status": "cancelled", "schedule": "op0: T(8,32,1)"}),
                              rec(2, "V", {"status": "ok", "speedup": 3.0})]) + "\n")
    (ep,) = read_trace(str(app)).episodes()
    assert ep.schedule == parse("op0: T(8,32,1) V") and ep.measurement["speedup"] == 3.0
    assert len(examples_from_trace(str(app), [matmul])) == 3  # T, V, and NT on op1

    env = tmp_path / "env.jsonl"
    env.write_text("\n".join([rec(0, "NT", episode=4), rec(0, "T(8,8,8)", episode=5), rec(1, "NT", episode=5)])
                   + "\n")
    assert [e.schedule for e in read_trace(str(env)).episodes()] == [parse("op0: NT"), parse("op0: T(8,8,8) NT")]
    assert len(examples_from_trace(str(env), [matmul])) == 2 + 3


def test_two_episodes_of_one_program_read_back_and_clone_as_two_schedules(matmul, tmp_path):
    from mlir_rl_tui.engine import Session
    from mlir_rl_tui.engine.rl.actions import flat_mask
    from mlir_rl_tui.engine.rl.trace import TraceRecorder

    path = str(tmp_path / "t.jsonl")
    first, second = parse("op0: T(32,32,32) NT; op1: NT"), parse("op0: TF(64,64,0) T(8,32,1) V; op1: NT")
    with TraceRecorder(path) as rec:
        for sched, m in [(first, {"status": "ok", "speedup": 2.0}), (second, None)]:
            rec.new_episode()
            sess, h = Session(matmul), None
            for op in matmul.ops:
                for a in sched.actions(op.id):
                    h = rec.step(matmul, op.id, a, sess.observation(), flat_mask(sess.mask()), "user")
                    sess = sess.apply(a)
            rec.measured(h, m)
    eps = read_trace(path).episodes()
    assert [e.schedule for e in eps] == [first, second]
    assert [e.program_sha256 for e in eps] == [matmul.sha256] * 2

    from mlir_rl_tui.agent.bc import examples_from_schedule, examples_from_trace

    got = examples_from_trace(path, [matmul])
    want = examples_from_schedule(matmul, first, math.log(2.0)) + examples_from_schedule(matmul, second)
    assert len(got) == len(want) == 3 + 4
    assert all((g.action == w.action).all() and g.value == w.value for g, w in zip(got, want))


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
    from mlir_rl_tui.engine.rl.trace import TraceWriter

    path = tmp_path / "only-cut.jsonl"
    path.write_bytes(b'{"program": "samples/matmul.ml')
    with TraceWriter(str(path)) as w:
        w.append({"program": "x", "program_sha256": "y", "op": "op0", "step": 0, "action": "NT"})
        assert w.repaired == 30
    tr = read_trace(str(path))
    assert not tr.truncated and tr.bad_lines == 0 and [r["op"] for r in tr.records] == ["op0"]
