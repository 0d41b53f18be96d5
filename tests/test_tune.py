"""`mlir-rl-tui tune`, the tuning database and `mlir_rl_tui.torch.load`, on real MLIR: workloads shared by
identical ops, a second run served from the database without a search, a library that matches PyTorch,
a database that survives kill -9 and damage without serving a wrong record."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import ROOT, cli

MODELS = ROOT / "tests" / "data" / "import_models.py"

# three ReLUs in a chain on 4096 floats (op ids count from the last op): op0 and op1 read an identical producer
# (one workload), op2 reads an argument (another)
CHAIN = textwrap.dedent("""\
    #id = affine_map<(d0) -> (d0)>
    func.func @forward(%x: tensor<4096xf32>) -> tensor<4096xf32> {
      %z = arith.constant 0.0 : f32
      %e0 = tensor.empty() : tensor<4096xf32>
      %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%x : tensor<4096xf32>) outs(%e0 : tensor<4096xf32>) {
        ^bb0(%i: f32, %o: f32):
          %r = arith.maximumf %i, %z : f32
          linalg.yield %r : f32
      } -> tensor<4096xf32>
      %e1 = tensor.empty() : tensor<4096xf32>
      %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%a : tensor<4096xf32>) outs(%e1 : tensor<4096xf32>) {
        ^bb0(%i: f32, %o: f32):
          %r = arith.maximumf %i, %z : f32
          linalg.yield %r : f32
      } -> tensor<4096xf32>
      %e2 = tensor.empty() : tensor<4096xf32>
      %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%b : tensor<4096xf32>) outs(%e2 : tensor<4096xf32>) {
        ^bb0(%i: f32, %o: f32):
          %r = arith.maximumf %i, %z : f32
          linalg.yield %r : f32
      } -> tensor<4096xf32>
      return %c : tensor<4096xf32>
    }
    """)


def test_identical_ops_share_a_workload_and_shapes_do_not():
    from mlir_rl_tui.engine import load
    from mlir_rl_tui.engine.tune import workload as wl

    prog = load(CHAIN)
    keys = wl.of_program(prog)
    assert keys["op0"] == keys["op1"] != keys["op2"]  # op2 has no producer to fuse
    assert list(wl.groups(prog).values()) == [["op0", "op1"], ["op2"]]
    assert set(wl.of_program(load(CHAIN.replace("maximumf", "minimumf"))).values()).isdisjoint(keys.values())
    other = load(CHAIN.replace("4096", "2048"))
    assert set(wl.of_program(other).values()).isdisjoint(keys.values())
    desc = wl.describe(prog.op("op0"), prog)
    assert desc["fused"]["producer"]["loops"] == [[4096, "parallel"]] and desc["dtypes"] == ["f32", "f32"]


def test_tune_tunes_each_workload_once_and_a_second_run_needs_no_search(tmp_path, cache_dir):
    src = tmp_path / "chain.mlir"
    src.write_text(CHAIN)
    db = str(tmp_path / "tuning.sqlite")
    args = ("tune", str(src), "--minutes", "2", "--no-policy", "--db", db, "--json")
    r = cli(*args, "-o", str(tmp_path / "a.so"))
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout)
    assert first["distinct_workloads"] == 2 and first["ops"] == 3 and first["searched"]
    by_ops = {tuple(w["ops"]): w for w in first["workloads"]}
    assert set(by_ops) == {("op0", "op1"), ("op2",)}
    assert all(w["state"] == "tuned" for w in first["workloads"]), first["workloads"]  # each reached its optimum
    assert all(w["alone"] for w in first["workloads"])  # each on its own program (engine.ir.extract)
    sched = first["schedule"]
    # the two ops of one workload were given one op schedule
    parts = dict(p.split(": ", 1) for p in sched.split("; ")) if sched else {}
    assert parts.get("op0") == parts.get("op1")
    assert first["speedup"] >= 1.0 and os.path.exists(tmp_path / "a.so.json")

    t = time.monotonic()
    r = cli(*args, "-o", str(tmp_path / "b.so"))
    took = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    second = json.loads(r.stdout)
    assert not second["searched"] and second["schedule"] == sched
    assert {w["start"] for w in second["workloads"]} == {"tuned"} and second["measurements"] <= 2
    assert took < 0.5 * first["seconds"] + 30, (took, first["seconds"])

    shown = json.loads(cli("tuning-db", "show", "--db", db, "--json").stdout)
    assert shown["tuned"] == 2 and shown["workloads"] == 2


@pytest.mark.skipif(not __import__("importlib").util.find_spec("torch_mlir"), reason="torch-mlir: the [import] extra")
def test_a_tuned_model_runs_in_pytorch_like_the_original(tmp_path, cache_dir):
    import torch

    sys.path.insert(0, str(MODELS.parent))
    import import_models

    import mlir_rl_tui.torch as mt

    lib = tmp_path / "block.so"
    r = cli("tune", f"{MODELS}:BasicBlock", "--input", "1x16x16x16", "--minutes", "0.25", "-o", str(lib),
            "--db", str(tmp_path / "t.sqlite"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["checked"] == "PyTorch" and out["best_ms"] <= out["baseline_ms"]
    # 15 s for 5 workloads: the ones it did not reach keep their start, and the same command again searches nothing
    again = json.loads(cli("tune", f"{MODELS}:BasicBlock", "--input", "1x16x16x16", "--minutes", "0.25", "-o",
                           str(tmp_path / "again.so"), "--db", str(tmp_path / "t.sqlite"), "--json").stdout)
    assert not again["searched"] and again["schedule"] == out["schedule"], (out["workloads"], again["workloads"])
    model = mt.load(str(lib))
    torch.manual_seed(0)
    orig = import_models.BasicBlock().eval()  # the weights the import drew (after torch.manual_seed(0))
    x = torch.randn(1, 16, 16, 16)
    with torch.no_grad():
        want = orig(x)
    got = model(x)
    assert isinstance(got, torch.Tensor) and got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(model(x=x), want, rtol=1e-3, atol=1e-4)  # the forward's own argument name
    with pytest.raises(ValueError, match="built for 1x16x16x16") as e:
        model(torch.randn(1, 16, 8, 8))
    assert "\n" not in str(e.value)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a team of threads needs two cores or more")
def test_a_parallel_library_runs_on_pytorchs_own_threads(tmp_path, cache_dir):
    """One OpenMP world in a PyTorch process: the library's parallel regions run on the threads PyTorch's
    libgomp started (no second runtime is loaded, no thread is added), with PyTorch's thread count, and
    PyTorch's threads keep every core (a pinned caller would leave them one)."""
    lib = tmp_path / "mm.so"
    r = cli("build", "matmul", "--schedule", "op0: TP(32,32,0) T(8,32,1) V; op1: NT", "-o", str(lib), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["runtime"] == "gomp", r.stderr
    probe = (f"import os, torch, mlir_rl_tui.torch as mt; torch.set_num_threads(2); a = torch.randn(512, 512); a @ a; "
             "tasks = len(os.listdir('/proc/self/task')); "
             f"m = mt.load({str(lib)!r}); x, y = (torch.randn(*s) for s in m.input_shapes); "
             "ok = torch.allclose(m(x, y), x @ y, atol=1e-3); m(x, y); "
             "maps = open('/proc/self/maps').read(); "
             "print(ok, tasks == len(os.listdir('/proc/self/task')), 'libiomp5' in maps, maps.count('libgomp') > 0, "
             "len(os.sched_getaffinity(0)))")
    env = {k: v for k, v in os.environ.items() if k not in ("KMP_AFFINITY", "OMP_NUM_THREADS")}
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert got.stdout.split() == ["True", "True", "False", "True", str(len(os.sched_getaffinity(0)))], got.stderr


def test_tune_errors_are_one_line(tmp_path):
    for args, what in [(("nope.mlir",), "no such file"),
                       ((str(ROOT / "samples" / "add.mlir"), "--input", "2x2"), "--input is for a PyTorch module"),
                       ((f"{MODELS}:BasicBlock", "--input", "1x3x16x16"), "running it on the inputs failed")]:
        r = cli("tune", *args, "-o", str(tmp_path / "x.so"), timeout=120)
        last = r.stderr.strip().splitlines()[-1]  # after the progress line's log lines (not a terminal)
        assert r.returncode == 2 and last.startswith("mlir-rl-tui: error:") and what in last, r.stderr
        assert "Traceback" not in r.stderr
    r = cli("tune", "add", "--minutes", "0", "-o", str(tmp_path / "x.so"))
    assert r.returncode == 2 and "0 is not a positive number of minutes" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1  # argparse's error too is one line


# -- the database ----------------------------------------------------------------------------------
def _rec(ms: float, schedule: str = "T(8) V", workload: str = "w1"):
    from mlir_rl_tui.engine.store.tuning_db import Record

    return Record("m", workload, schedule, ms, "relu 4096", {"name": "linalg.generic"}, "sha")


def test_the_database_keeps_the_fastest_and_never_serves_a_damaged_row(tmp_path, capsys):
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    path = str(tmp_path / "t.sqlite")
    db = TuningDB(path)
    db.add(_rec(2.0))
    db.add(_rec(3.0))  # slower: the faster time of that schedule stays
    db.add(_rec(1.5, "TP(64) V"))
    assert [(r.schedule, r.ms) for r in db.records("m", "w1")] == [("TP(64) V", 1.5), ("T(8) V", 2.0)]
    assert db.best("m", "w1").schedule == "TP(64) V" and db.best("other-machine", "w1") is None
    db.close()
    raw = sqlite3.connect(path)
    raw.execute("UPDATE records SET record = replace(record, '1.5', '0.5') WHERE schedule='TP(64) V'")
    raw.commit()
    raw.close()
    db = TuningDB(path)
    assert db.best("m", "w1").schedule == "T(8) V"  # the tampered record is not served...
    assert "corrupted" in capsys.readouterr().err and len(db.records("m", "w1")) == 1  # ...and it is gone
    db.close()
    with open(path, "wb") as f:
        f.write(b"not a database" * 100)
    db = TuningDB(path)
    assert db.usable and db.best("m", "w1") is None and "moved aside" in capsys.readouterr().err


def test_export_and_import_refuse_tampered_lines(tmp_path, monkeypatch):
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    a = TuningDB(str(tmp_path / "a.sqlite"))
    a.add(_rec(2.0))
    a.add(_rec(1.0, workload="w2"))
    a.mark_tuned("m", "w2", "T(8) V", 1.0, 12, "relu")
    n = a.export(str(tmp_path / "x.jsonl"))
    assert n == 3
    lines = (tmp_path / "x.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("2.0", "0.2")
    (tmp_path / "x.jsonl").write_text("\n".join(lines) + "\n")
    b = TuningDB(str(tmp_path / "b.sqlite"))
    assert b.import_file(str(tmp_path / "x.jsonl")) == (2, 1)
    assert b.tuned("m", "w2")["schedule"] == "T(8) V" and b.records("m", "w1") == []
    (tmp_path / "junk").write_text("hello\n")
    from mlir_rl_tui.engine.errors import EngineError

    with pytest.raises(EngineError, match="not a tuning database export"):
        b.import_file(str(tmp_path / "junk"))
    import mlir_rl_tui.engine.store.tuning_db as tdb

    # an over-long line is read in pieces and refused (memory bound); the lines around it are taken
    longest = max(len(ln) for ln in lines[1:])
    monkeypatch.setattr(tdb, "MAX_LINE_CHARS", longest + 1)
    (tmp_path / "y.jsonl").write_text("\n".join([lines[0], "x" * (3 * longest), *lines[1:]]) + "\n")
    assert TuningDB(str(tmp_path / "c.sqlite")).import_file(str(tmp_path / "y.jsonl")) == (2, 2)


def test_every_row_says_who_made_it_and_an_import_keeps_where_it_came_from(tmp_path, capsys):
    from mlir_rl_tui.commands import main
    from mlir_rl_tui.engine.store.tuning_db import TuningDB, here

    a = TuningDB(str(tmp_path / "a.sqlite"))
    a.add(_rec(2.0))
    a.mark_tuned("m", "w1", "T(8) V", 2.0, 12, "relu")
    assert a.best("m", "w1").origin == here() == a.tuned("m", "w1")["origin"] and "engine" in here()
    a.export(str(tmp_path / "team.jsonl"))
    b = TuningDB(str(tmp_path / "b.sqlite"))
    b.import_file(str(tmp_path / "team.jsonl"))
    assert b.best("m", "w1").origin == "imported from team.jsonl" == b.tuned("m", "w1")["origin"]
    b.add(_rec(1.5, workload="w2"))  # one of b's own
    b.export(str(tmp_path / "again.jsonl"))
    c = TuningDB(str(tmp_path / "c.sqlite"))
    c.import_file(str(tmp_path / "again.jsonl"))
    # passed on twice, a row still names the file it first came from; b's own row names b's export
    assert c.best("m", "w1").origin == "imported from team.jsonl"
    assert c.best("m", "w2").origin == "imported from again.jsonl"
    c.close()
    capsys.readouterr()
    assert main(["tuning-db", "show", "--all", "--db", str(tmp_path / "c.sqlite"), "--json"]) == 0
    shown = {r["workload"]: r for r in json.loads(capsys.readouterr().out)["workloads_shown"]}
    assert shown["w1"]["origin"] == "imported from team.jsonl" and shown["w1"]["tuned_origin"] == shown["w1"]["origin"]


def test_the_database_survives_kill_9_while_writing(tmp_path):
    path = str(tmp_path / "t.sqlite")
    writer = textwrap.dedent(f"""
        from mlir_rl_tui.engine.store.tuning_db import Record, TuningDB
        db = TuningDB({path!r})
        i = 0
        while True:
            db.add(Record("m", f"w{{i % 50}}", f"T({{i}}) V", 1.0 + i, "x", {{"n": i}}, "sha"))
            if i % 7 == 0:
                db.mark_tuned("m", f"w{{i % 50}}", f"T({{i}}) V", 1.0, i, "x")
            i += 1
            if i == 200:
                print("ready", flush=True)
        """)
    for _ in range(3):
        p = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        p.send_signal(signal.SIGKILL)
        p.wait()
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    db = TuningDB(path)
    recs = db.records("m")
    assert len(recs) >= 200 and db.corrupted == 0
    assert all(r.ms == 1.0 + int(r.schedule[2:-3]) for r in recs)  # every row as it was written
    assert db.tuned("m", "w0") is not None


class _FixedEngine:
    """An engine whose figures are given: `figures` (schedule text -> ms; others 1.0 ms), every one +-50%
    (nothing beats anything by the figures), and a paired comparison finds only `faster` faster."""

    def __init__(self, figures: dict[str, float], faster: str) -> None:
        from mlir_rl_tui.engine.config import DEFAULT_LIMITS

        self.limits, self.openmp, self.machine = DEFAULT_LIMITS, False, "fixed"
        self.figures, self.faster, self.compared = figures, faster, []

    def baseline(self, program, **kw):
        from mlir_rl_tui.engine.schedule.notation import Schedule

        return self.measure(program, Schedule({}))

    def measure(self, program, schedule, **kw):
        from mlir_rl_tui.engine.measure.measurement import Measurement
        from mlir_rl_tui.engine.schedule.notation import to_text

        text = to_text(schedule)
        t = 10.0 if not text else self.figures.get(text, 1.0)
        return Measurement("ok", text, t, 10.0, 10.0 / t, True, time_ci_ms=[t / 1.5, t * 1.5],
                           speedup_ci=[10.0 / t / 2.25, 10.0 / t * 2.25])

    def compare(self, program, candidate, incumbent, **kw):
        from mlir_rl_tui.engine.measure.measurement import Comparison
        from mlir_rl_tui.engine.schedule.notation import to_text

        self.compared.append((to_text(candidate), to_text(incumbent)))
        won = to_text(candidate) == self.faster
        return Comparison("ok", 1.1 if won else 1.0, [1.05, 1.15] if won else [0.97, 1.03], 1.0, 1.1, 10)


def test_a_climb_takes_what_a_paired_comparison_finds_faster_and_nothing_else():
    """Within the figures' noise, a candidate whose figure is the faster is compared with the current point
    in one paired burst (Engine.compare) and taken only when that finds it faster; one whose figure is not
    the faster is not compared. The tuner counts comparisons, close calls and moves."""
    import threading

    import numpy as np

    from mlir_rl_tui.engine import load
    from mlir_rl_tui.engine.schedule.notation import parse, to_text
    from mlir_rl_tui.engine.search.base import Evaluator
    from mlir_rl_tui.engine.search.hill import kinds, neighbours, recipes_of, schedule_from
    from mlir_rl_tui.engine.tune.tuner import Tuner, Workload

    prog = load(CHAIN)
    start = parse("op2: T(32) V")
    probe = Evaluator(_FixedEngine({}, ""), prog, 10**6, "tune")
    point = recipes_of(probe, start)["op2"]
    texts = [to_text(parse("op2: " + to_text(schedule_from(probe, {"op2": n["op2"]})).split("op2: ")[1].split(";")[0]))
             for n in neighbours(probe, {"op2": point}, {"op2": kinds(probe, "op2")})]
    close, target = texts[0], texts[-1]
    eng = _FixedEngine({close: 0.97, target: 0.95}, faster=target)
    ev = Evaluator(eng, prog, 10**6, "tune")
    ev.take(eng.measure(prog, start), start)
    w = Workload("k", "relu", ["op2"])
    tuner = type("T", (), {"engine": eng, "cancel": threading.Event(), "_say": lambda self, s: None})()
    converged = Tuner._hill(tuner, ev, "op2", start, lambda t: parse(f"op2: {t}"), 10**12, w, np.random.default_rng(0))
    assert converged and to_text(ev.result.schedule) == target
    assert w.kept == 1 and w.compared == len(eng.compared) and w.close == w.compared - 1
    assert eng.compared[-1] == (target, to_text(start))  # then no neighbour of it had a faster figure
    assert {c for c, _ in eng.compared} <= {close, target}  # the others' figures were not the faster


def test_a_composition_that_loses_is_settled_workload_by_workload(tmp_path):
    """The end's composition of op schedules tuned on their own programs, clearly slower on the model, is
    undone without a paired comparison; each workload it changed is then tried alone on the best, the most
    time first: the one a paired comparison finds faster is kept (its figure the best's over the paired
    ratio, as its own was no faster), the other, which made the composition slow, is not."""
    import threading

    from mlir_rl_tui.engine import load
    from mlir_rl_tui.engine.schedule.notation import parse, to_text
    from mlir_rl_tui.engine.search.base import Evaluator
    from mlir_rl_tui.engine.store.tuning_db import TuningDB
    from mlir_rl_tui.engine.tune.tuner import Tuner

    prog = load(CHAIN)
    start = parse("op0: T(32) V; op1: T(32) V; op2: T(32) V")
    composed = parse("op0: T(64) V; op1: T(64) V; op2: T(16) V")
    good = to_text(parse("op0: T(32) V; op1: T(32) V; op2: T(16) V"))
    eng = _FixedEngine({to_text(composed): 6.0}, faster=good)
    tuner = Tuner(eng, prog, TuningDB(str(tmp_path / "db.sqlite")), 60.0)
    tuner.ev = Evaluator(eng, prog, 10**6, "tune", cancel=threading.Event())
    tuner.ev.take(eng.measure(prog, start), start)
    pair, relu = sorted(tuner.workloads, key=lambda w: len(w.ops), reverse=True)
    assert pair.ops == ["op0", "op1"] and relu.ops == ["op2"]
    pair.ms, relu.ms = 1.0, 2.0
    tuner.composed, tuner.given = composed, {pair.key: "T(64) V", relu.key: "T(16) V"}
    tuner._settle()
    assert to_text(tuner.ev.result.schedule) == good and to_text(tuner.composed) == good
    assert eng.compared == [(good, to_text(start))]  # the 6x composition, clearly slower, was not compared
    assert abs(tuner.ev.result.best.time_ms - 1.0 / 1.1) < 1e-9  # the start's 1.0 ms over the paired 1.1
    assert tuner.given == {}


def test_a_producer_tiled_fusion_would_fuse_is_tuned_before_its_consumer(tmp_path):
    """The workloads go the most time first, except that a producer's workload (the op tiled fusion would fuse
    into another) goes before its consumer's: the consumer's own program then holds the producer's tuned
    schedule, which a candidate fusing the producer has to beat. A workload that is its own producer's (a
    chain of identical ops) is placed once."""
    from mlir_rl_tui.engine import load
    from mlir_rl_tui.engine.store.tuning_db import TuningDB
    from mlir_rl_tui.engine.tune.tuner import Tuner

    prog = load(CHAIN)
    tuner = Tuner(_FixedEngine({}, ""), prog, TuningDB(str(tmp_path / "db.sqlite")), 60.0)
    pair, relu = sorted(tuner.workloads, key=lambda w: len(w.ops), reverse=True)
    assert prog.op("op1").fusion_producer == "op2" and prog.op("op0").fusion_producer == "op1"
    assert [w.ops for w in tuner._producers_first([pair, relu])] == [["op2"], ["op0", "op1"]]
    assert [w.ops for w in tuner._producers_first([relu, pair])] == [["op2"], ["op0", "op1"]]
    assert [w.ops for w in tuner._producers_first([pair])] == [["op0", "op1"]]  # relu not to be tuned


def test_a_consumers_own_program_holds_its_producers_tiling_where_its_fusion_has_nothing_to_fuse(tmp_path):
    """A consumer is tuned on its own program (its op and its producer, engine.ir.extract) with the producer's op
    schedule in the model. There the producer has no producer of its own, so its tiled fusion (TF) is not legal:
    its tiling comes as a parallel one (TP; T without OpenMP), not as the untransformed producer a candidate
    fusing it would beat however slow it is."""
    from mlir_rl_tui.engine import load
    from mlir_rl_tui.engine.ir.extract import extract
    from mlir_rl_tui.engine.schedule.notation import parse, to_text
    from mlir_rl_tui.engine.store.tuning_db import TuningDB
    from mlir_rl_tui.engine.tune.tuner import Tuner

    prog = load(CHAIN)
    alone = extract(prog, [["op0", "op1"]])[0]
    producer = alone.op("op0").fusion_producer
    assert producer and alone.op(producer).fusion_producer is None
    eng = _FixedEngine({}, "")
    tuner = Tuner(eng, prog, TuningDB(str(tmp_path / "db.sqlite")), 60.0)
    assert prog.op("op1").fusion_producer and tuner._legal_in(prog, parse("op1: TF(64) T(8) V"))  # in the model
    assert not tuner._legal_in(alone, parse(f"{producer}: TF(64) T(8) V"))
    assert to_text(tuner._producer_base(alone, producer, "TF(64) T(8) V")) == f"{producer}: T(64) T(8) V"
    eng.openmp = True
    assert to_text(tuner._producer_base(alone, producer, "TF(64) T(8) V")) == f"{producer}: TP(64) T(8) V"
    assert to_text(tuner._producer_base(alone, producer, "T(32) V")) == f"{producer}: T(32) V"
