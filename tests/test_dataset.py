"""Data set generator (paper Sec. VI-A): programs load, baselines run and validate, manifest and split."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest
from conftest import ROOT

from mlir_rl_tui.engine import load, load_file
from mlir_rl_tui.engine.corpus import generator as ds
from mlir_rl_tui.engine.corpus.samples import program
from mlir_rl_tui.engine.schedule.notation import ScheduleError, to_text
from mlir_rl_tui.engine.store import jsonl
from mlir_rl_tui.engine.store import measurement_file as mf


@pytest.mark.parametrize("op", ds.SINGLE_OPS)
def test_single_ops_load_with_one_forward_and_model_like_shapes(op):
    rng = np.random.default_rng(7)
    for _ in range(3):
        g = ds.single_op(rng, op)
        prog = load(g.text)
        assert prog.func_name == "forward" and len(prog.results) == 1
        assert ds.MIN_FLOPS <= g.flops <= ds.MAX_FLOPS
        kinds = {o.op_type for o in prog.ops if o.name != "linalg.fill"}
        assert kinds == {{"relu": "generic", "conv_2d": "conv_2d"}.get(op, op)}


def test_sequences_chain_five_ops_and_cover_every_kind():
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(40):
        g = ds.sequence(rng)
        assert len(g.ops) == ds.SEQUENCE_LENGTH and set(g.ops) <= set(ds.SEQUENCE_OPS)
        prog = load(g.text)
        assert len(prog.results) == 1 and len(prog.ops) >= 5
        seen |= set(g.ops)
        if "softmax" in g.ops:
            assert "linalg.softmax" not in g.text and "math.exp" in g.text
    assert seen == set(ds.SEQUENCE_OPS)


def test_same_seed_same_data_set(tmp_path):
    a = ds.generate(str(tmp_path / "a"), 4, seed=11)
    b = ds.generate(str(tmp_path / "b"), 4, seed=11)
    assert [e["sha256"] for e in a["programs"]] == [e["sha256"] for e in b["programs"]]
    assert len({e["sha256"] for e in a["programs"]}) == 4  # no duplicate program
    c = ds.generate(str(tmp_path / "c"), 4, seed=12)
    assert [e["sha256"] for e in a["programs"]] != [e["sha256"] for e in c["programs"]]


def test_generate_writes_programs_whose_baselines_validate_and_a_manifest(engine, tmp_path):
    out = tmp_path / "data"
    man = ds.generate(str(out), 6, seed=0, engine=engine)
    assert json.loads((out / "manifest.json").read_text()) == man
    assert len(man["programs"]) == 6 and sorted(man["train"] + man["eval"]) == sorted(
        e["path"] for e in man["programs"])
    assert man["eval"] and man["train"]
    assert {e["kind"] for e in man["programs"]} == {"single", "sequence"}
    for e in ds.read_manifest(str(out))["programs"]:
        prog = load_file(e["abspath"])
        assert prog.sha256 == e["sha256"]
        m = engine.baseline(prog)
        assert m.ok and m.validated and m.cached
        assert 0 < e["baseline_ms"] <= 100


def test_dataset_command(tmp_path, capsys, cache_dir):
    from mlir_rl_tui.commands import main

    assert main(["dataset", "generate", "--out", str(tmp_path / "d"), "--n", "3", "--seed", "1",
                 "--no-baseline"]) == 0
    out = capsys.readouterr().out
    assert "3 programs" in out and os.path.exists(tmp_path / "d" / "manifest.json")
    with pytest.raises(SystemExit) as e:  # refused while the arguments are read, in one line
        main(["dataset", "generate", "--out", str(tmp_path / "e"), "--n", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "not a positive whole number" in err and len(err.strip().splitlines()) == 1


def test_long_data_sets_redraw_duplicates_instead_of_failing(tmp_path):
    # seed 3 draws 19 repeats of a small 2-D add in a row at program 156 (it used to stop at 20 attempts)
    man = ds.generate(str(tmp_path / "d"), 160, seed=3, engine=None, eval_fraction=0.0)
    shas = [e["sha256"] for e in man["programs"]]
    assert len(shas) == 160 and len(set(shas)) == 160


def test_one_manifest_reader_for_generated_and_hand_written_manifests(tmp_path):
    from mlir_rl_tui.engine.corpus.programs import program_paths

    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"programs": ["a.mlir", {"path": "b.mlir", "split": "train"},
                                            {"path": "/abs/c.mlir", "split": "eval"}]}))
    entries = ds.read_manifest(str(tmp_path))["programs"]
    assert [e["abspath"] for e in entries] == [str(tmp_path / "a.mlir"), str(tmp_path / "b.mlir"), "/abs/c.mlir"]
    assert program_paths(str(man)) == [e["abspath"] for e in entries]
    assert program_paths(str(tmp_path), "train") == [str(tmp_path / "a.mlir"), str(tmp_path / "b.mlir")]
    assert program_paths(str(man), "eval") == [str(tmp_path / "a.mlir"), "/abs/c.mlir"]


def test_import_as_this_machine_refuses_another_kind_of_machine(engine, tmp_path, monkeypatch, capsys):
    """dataset import --as-this-machine times the shipped samples' untransformed code the file times (here
    relu's, measured once on real MLIR): a file whose machine ran it at half this one's time is refused in one
    line naming the ratio, nothing imported; the same row at this machine's own time is imported as this
    machine's. The check's own timings are that measurement again (injected): the verdict is the rule's, not
    whether two timings of a busy machine agree."""
    import gzip

    from mlir_rl_tui.commands import main
    from mlir_rl_tui.engine import Schedule
    from mlir_rl_tui.engine.corpus.samples import find
    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION, Cache
    from mlir_rl_tui.engine.store.keys import machine_key

    relu = load_file(find("relu"))
    m = engine.measure(relu, Schedule({}), use_cache=False)
    assert m.ok and m.time_ms < mf.SAME_KIND_MAX_MS

    def write(name: str, factor: float) -> str:
        rec = m.to_record()
        for k in ("time_ms", "baseline_ms"):
            rec[k] *= factor
        for k in ("time_ci_ms", "baseline_ci_ms"):
            rec[k] = [x * factor for x in rec[k]]
        f = str(tmp_path / name)
        with gzip.open(f, "wt") as out:
            out.write(json.dumps({"format": jsonl.MEASUREMENTS, "engine_version": ENGINE_VERSION,
                                  "rows": 1}) + "\n")
            out.write(json.dumps({"program": relu.sha256, "schedule": "", "machine": "other-machine",
                                  "result": rec}) + "\n")
        return f

    from mlir_rl_tui.engine.engine import Engine

    timed = []

    def measure_again(self, program, schedule, **kw):  # same_kind's fresh timing of the sample: `m` again
        assert program.sha256 == relu.sha256 and not schedule.ops and kw.get("use_cache") is False
        timed.append(program.sha256)
        return m

    monkeypatch.setattr(Engine, "measure", measure_again)
    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(tmp_path / "dst"))
    assert main(["dataset", "import", write("fast.jsonl.gz", 0.5), "--as-this-machine"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not imported" in err and "relu" in err and timed
    ratio = float(err.split("untransformed code ")[1].split("x")[0])
    assert ratio == 2.0  # this machine's time against half of it
    assert Cache().get(relu.sha256, "", machine_key()) is None
    assert main(["dataset", "import", write("same.jsonl.gz", 1.0), "--as-this-machine"]) == 0
    assert "the same kind" in capsys.readouterr().out
    assert Cache().get(relu.sha256, "", machine_key() + mf.IMPORTED) is not None


def test_measurements_travel_to_another_cache_and_back(engine, add, tmp_path, monkeypatch, capsys):
    """dataset export writes a program's cache rows; dataset import puts them into another cache (keeping
    that cache's own rows, refusing what is not a measurement) and, with --as-this-machine, files them under
    this machine; a damaged file is one line naming the cause."""
    import gzip

    from mlir_rl_tui.commands import main
    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.store.cache import Cache
    from mlir_rl_tui.engine.store.keys import machine_key

    m = engine.measure(add, parse("op0: T(1,64) V"))
    assert m.ok and engine.machine == machine_key()
    src = Cache(str(tmp_path / "src" / "measurements.sqlite"))
    src.put(add.sha256, "op0: T(1,64) V", "other-machine", m.to_record())
    src.put(add.sha256, "op0: V", "other-machine", {"status": "ok", "speedup": 3.0})  # not a stored measurement
    src.put("f" * 64, "op0: V", "other-machine", m.to_record())  # another program: not exported
    f = str(tmp_path / "m.jsonl.gz")
    assert mf.export_measurements(src, f, {add.sha256}) == 2

    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(tmp_path / "dst"))
    assert main(["dataset", "import", f]) == 0
    out = capsys.readouterr().out
    assert "1 measurements imported" in out and "1 refused" in out
    dst = Cache()
    got = dst.get(add.sha256, "op0: T(1,64) V", "other-machine", parse=Measurement.from_record)
    assert got is not None and got.speedup == m.speedup
    assert dst.get(add.sha256, "op0: V", "other-machine") is None
    # no shipped sample is timed in it: whether this machine is its kind cannot be checked, so it is refused
    # as this machine's (the rows stay under their own machine)
    assert main(["dataset", "import", f, "--as-this-machine"]) == 2
    assert "cannot be checked" in capsys.readouterr().err
    assert dst.get(add.sha256, "op0: T(1,64) V", machine_key() + mf.IMPORTED) is None
    assert main(["dataset", "import", f]) == 0
    assert "0 measurements imported" in capsys.readouterr().out

    with gzip.open(f, "wt") as out:  # another engine version's timings cannot stand for this machine's
        out.write(json.dumps({"format": jsonl.MEASUREMENTS, "engine_version": "0", "rows": 0}) + "\n")
    assert main(["dataset", "import", f, "--as-this-machine"]) == 2
    assert "engine version 0" in capsys.readouterr().err
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    assert main(["dataset", "import", str(tmp_path / "bad.gz")]) == 2
    err = capsys.readouterr().err
    assert "cannot read the measurement file" in err and err.count("\n") == 1
    only_bad = Cache(str(tmp_path / "src2" / "measurements.sqlite"))  # a file none of whose rows can be used
    only_bad.put(add.sha256, "op0: V", "other-machine", {"status": "ok", "speedup": 3.0})
    g = str(tmp_path / "bad-rows.jsonl.gz")
    assert mf.export_measurements(only_bad, g, {add.sha256}) == 1
    assert main(["dataset", "import", g]) == 2
    err = capsys.readouterr().err
    assert "none of its 1 rows is a measurement this engine stores" in err and err.count("\n") == 1


def test_the_measurement_files_in_data_are_whole_and_of_this_engine_version():
    """data/'s files are what `dataset import` reads: every row a measurement this engine stores, as many as
    the header says, and the samples' untransformed code among them (what `--as-this-machine` checks)."""
    files = sorted((ROOT / "data").glob("*.jsonl.gz"))
    assert len(files) >= 2
    samples = {load_file(program(n)).sha256 for n in ("add", "relu", "maxpool", "sequence5")}
    for path in files:
        with gzip.open(path, "rt") as f:
            header = json.loads(f.readline())
        rows = list(mf.read_measurements(str(path), version_must_match=True))
        assert None not in rows and len(rows) == header["rows"] > 1000, path.name
        assert samples <= {sha for sha, text, _, _ in rows if text == ""}, path.name


def test_a_forged_imported_row_is_not_served_before_this_engine_validates_it(engine, add, tmp_path, monkeypatch):
    """A measurement file may claim anything: imported as this machine's, a row for a schedule is served
    only after this engine compiled, ran and checked that schedule here (once, then filed as validated). A
    forged tiny time for a schedule that does not even compile is measured here instead; a forged tiny time
    for a schedule that validates is served as the file's figure, marked cached, and the validation is kept."""
    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.engine import Engine
    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.store.cache import Cache

    cache = Cache(str(tmp_path / "measurements.sqlite"))
    eng = Engine(config=engine.config, cache=cache)
    try:
        base = eng.baseline(add)
        forged = Measurement(status="ok", schedule="", time_ms=base.time_ms / 1000, baseline_ms=base.time_ms,
                             speedup=1000.0).to_record()
        bad, good = "op0: T(7,32) V", "op0: T(4,32) V"  # 7 does not divide the add's rows: refused
        for text in (bad, good):
            cache.put(add.sha256, text, eng.machine + mf.IMPORTED, {**forged, "schedule": text})
        validated = []
        real = Engine.validate

        def counting(self, program, schedule, **kw):
            validated.append(to_text(schedule))
            return real(self, program, schedule, **kw)

        monkeypatch.setattr(Engine, "validate", counting)
        with pytest.raises(ScheduleError, match="does not divide"):  # not served: the schedule is checked first
            eng.measure(add, parse(bad))
        g = eng.measure(add, parse(good))
        assert g.ok and g.cached and g.speedup == 1000.0  # the file's figure, now that it was checked here
        assert cache.get(add.sha256, good, eng.machine + mf.VALIDATED) is not None
        again = eng.measure(add, parse(good))
        assert again.cached and validated.count(good) == 1  # validated once
    finally:
        eng.close()
