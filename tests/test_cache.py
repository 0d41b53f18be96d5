"""The cache checks itself: damaged files are moved aside, corrupted rows re-measured, a locked cache is
waited on briefly and then done without; never a wrong answer, never an internal error."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import SAMPLES

from mlir_rl_tui.engine.measure.measurement import Measurement
from mlir_rl_tui.engine.measure.roofline import peaks_from_record
from mlir_rl_tui.engine.store.cache import CACHE_FILE, LOCK_RETRIES, LOCK_WAIT_S, SCHEMA, Cache, canonical, checksum

SCHED = "op0: T(8,32,1) V"
KEY = ("p" * 64, SCHED, "machine-serial")


def measurement(**kw) -> Measurement:
    d = dict(status="ok", schedule=SCHED, time_ms=0.298, baseline_ms=13.85, speedup=46.4, validated=True,
             time_ci_ms=[0.274, 0.324], baseline_ci_ms=[13.23, 14.38], speedup_ci=[44.3, 49.1], runs=696,
             runtime="serial", times_ms=[0.3, 0.29], stages_ms={"transform": 0.5})
    d.update(kw)
    return Measurement(**d)


def warnings(err: str) -> list[str]:
    """The stderr lines that are not the progress line (mlir_rl_tui.progress: `apply: ...` after 1 s)."""
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("apply:")]


def set_row(path: str, result: str, digest: str | None = None) -> None:
    """Overwrite the stored result text (and its checksum, when given) behind the cache's back."""
    db = sqlite3.connect(path)
    if digest is None:
        db.execute("UPDATE measurements SET result=?", (result,))
    else:
        db.execute("UPDATE measurements SET result=?, checksum=?", (result, digest))
    db.commit()
    db.close()


def stored(path: str) -> str:
    db = sqlite3.connect(path)
    (text,) = db.execute("SELECT result FROM measurements").fetchone()
    db.close()
    return text


# -- rows -------------------------------------------------------------------------------------------
def test_a_result_round_trips_with_its_checksum_and_the_schema_version(tmp_path, capsys):
    path = str(tmp_path / CACHE_FILE)
    c = Cache(path)
    m = measurement()
    c.put(*KEY, m.to_record())
    got = c.get(*KEY, parse=Measurement.from_record)
    assert got == m and c.hits == 1
    assert c.get("q" * 64, SCHED, KEY[2], parse=Measurement.from_record) is None and c.misses == 1
    c.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (SCHEMA,)
    text, digest = db.execute("SELECT result, checksum FROM measurements").fetchone()
    assert digest == checksum(KEY, text) and json.loads(text) == m.to_record()
    assert capsys.readouterr().err == ""


def _flip_digit(text: str) -> str:
    i = text.index('"time_ms":0.298') + len('"time_ms":0.2')
    return text[:i] + "1" + text[i + 1:]  # 0.298 -> 0.218: valid JSON, a plausible, wrong time


CORRUPT_ROWS = {
    "flipped digit": lambda t: (_flip_digit(t), None),
    "bad checksum": lambda t: (t, "0" * 64),
    "JSON that does not parse": lambda t: (t[:-7], checksum(KEY, t[:-7])),
    "unknown status": lambda t: (t.replace('"ok"', '"fast"'), checksum(KEY, t.replace('"ok"', '"fast"'))),
    "missing fields": lambda t: (canonical({"status": "ok", "time_ms": 0.3}),
                                 checksum(KEY, canonical({"status": "ok", "time_ms": 0.3}))),
    "an ok without a time": lambda t: (t.replace('"time_ms":0.298', '"time_ms":null'),
                                       checksum(KEY, t.replace('"time_ms":0.298', '"time_ms":null'))),
}


@pytest.mark.parametrize("kind", list(CORRUPT_ROWS))
def test_a_corrupted_row_is_ignored_reported_once_and_replaced(tmp_path, capsys, kind):
    path = str(tmp_path / CACHE_FILE)
    c = Cache(path)
    c.put(*KEY, measurement().to_record())
    text, digest = CORRUPT_ROWS[kind](stored(path))
    set_row(path, text, digest)
    assert c.get(*KEY, parse=Measurement.from_record) is None  # never the corrupted answer
    (line,) = warnings(capsys.readouterr().err)
    assert line.startswith("mlir-rl-tui: warning: cache ") and "corrupted" in line and SCHED in line
    assert c.corrupted == 1 and len(c) == 0  # dropped: a second read does not report it again
    assert c.get(*KEY, parse=Measurement.from_record) is None and capsys.readouterr().err == ""
    fresh = measurement(time_ms=0.301)
    c.put(*KEY, fresh.to_record())  # the fresh measurement takes its place
    assert c.get(*KEY, parse=Measurement.from_record) == fresh


def test_a_corrupted_roofline_row_is_ignored_and_replaced(tmp_path, capsys):
    path = str(tmp_path / CACHE_FILE)
    peaks = {"cores": 2, "fma_gflops_1": 115.0, "fma_gflops_all": 231.0, "bandwidth_1": [[1 << 20, 100.0]],
             "bandwidth_all": [[1 << 20, 190.0]]}
    c = Cache(path)
    c.put_machine("m", peaks)
    assert c.get_machine("m", parse=peaks_from_record).fma_gflops_1 == 115.0
    db = sqlite3.connect(path)
    db.execute("UPDATE machines SET peaks=replace(peaks, '115.0', '915.0')")
    db.commit()
    db.close()
    assert c.get_machine("m", parse=peaks_from_record) is None
    (line,) = warnings(capsys.readouterr().err)
    assert "roofline" in line and "checksum" in line
    bad = dict(peaks, fma_gflops_1=-1.0)  # stored by someone with a valid checksum: still refused
    c.put_machine("m", bad)
    assert c.get_machine("m", parse=peaks_from_record) is None
    c.put_machine("m", peaks)
    assert c.get_machine("m", parse=peaks_from_record).fma_gflops_all == 231.0


# -- files ------------------------------------------------------------------------------------------
def _garbage(path: str) -> None:
    with open(path, "wb") as f:
        f.write(os.urandom(16384))


def _truncated(path: str) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def _read_only(path: str) -> None:
    os.chmod(path, 0o444)


def _foreign(path: str) -> None:
    os.unlink(path)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, data BLOB)")
    db.commit()
    db.close()


def _old_schema(path: str) -> None:
    """The tables of the first mlir-rl-tui cache (no version, no checksums)."""
    os.unlink(path)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE measurements (program TEXT, schedule TEXT, machine TEXT, result TEXT, created REAL, "
               "PRIMARY KEY (program, schedule, machine))")
    db.execute("CREATE TABLE machines (machine TEXT PRIMARY KEY, peaks TEXT, created REAL)")
    db.execute("INSERT INTO measurements VALUES (?, ?, ?, ?, 0)", (*KEY, json.dumps(measurement().to_record())))
    db.commit()
    db.close()


def _newer_schema(path: str) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.commit()
    db.close()


BROKEN_FILES = {"garbage bytes": _garbage, "truncated": _truncated, "read-only": _read_only,
                "foreign schema": _foreign, "old schema": _old_schema}


def test_a_cache_of_another_versions_schema_is_left_as_it_is(tmp_path, capsys):
    """Two installed versions sharing ~/.cache: the other version's file is not moved aside (it would orphan
    that version's rows on every run of each); this version keeps its rows in a file of its schema's name."""
    path = str(tmp_path / CACHE_FILE)
    _filled(path)
    _newer_schema(path)
    before = open(path, "rb").read()
    c = Cache(path)
    (line,) = warnings(capsys.readouterr().err)
    assert "another mlir-rl-tui version" in line and "left as it is" in line
    assert c.usable and c.path.endswith(f".schema-{SCHEMA}.sqlite") and len(c) == 0
    c.put(*KEY, measurement().to_record())
    c.close()
    assert open(path, "rb").read() == before and not [f for f in os.listdir(tmp_path) if ".broken-" in f]
    again = Cache(path)
    assert again.get(*KEY, parse=Measurement.from_record) == measurement()


def _filled(path: str) -> None:
    c = Cache(path)
    for i in range(200):  # several pages, so a cut file is missing some
        c.put(f"{i:064d}", SCHED, KEY[2], measurement(runs=i).to_record())
    c.close()


@pytest.mark.parametrize("kind", list(BROKEN_FILES))
def test_an_unusable_file_is_moved_aside_and_a_fresh_cache_created(tmp_path, capsys, kind):
    path = str(tmp_path / CACHE_FILE)
    _filled(path)
    BROKEN_FILES[kind](path)
    before = open(path, "rb").read()
    c = Cache(path)
    (line,) = warnings(capsys.readouterr().err)
    aside = [f for f in os.listdir(tmp_path) if f.startswith(CACHE_FILE + ".broken-")]
    assert len(aside) == 1 and aside[0] in line and "moved aside" in line and "fresh cache" in line
    assert open(tmp_path / aside[0], "rb").read() == before  # kept as it was, for a post-mortem
    assert c.usable and len(c) == 0
    c.put(*KEY, measurement().to_record())
    c.close()
    again = Cache(path)  # the fresh cache is a good one: no warning, the result is there
    assert again.get(*KEY, parse=Measurement.from_record) == measurement()
    assert capsys.readouterr().err == ""


def test_an_empty_file_becomes_a_cache_without_a_warning(tmp_path, capsys):
    path = tmp_path / CACHE_FILE
    path.write_bytes(b"")
    c = Cache(str(path))
    assert c.usable and len(c) == 0 and capsys.readouterr().err == ""


_LOCKER = textwrap.dedent("""
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1])
    if sys.argv[2] == "exclusive":  # nobody else may even read
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("BEGIN EXCLUSIVE")
    else:  # a writer that does not commit: others read, but cannot write
        db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO meta VALUES ('holder', 'test')")
    print("locked", flush=True)
    sys.stdin.read()  # until the test closes the pipe
""")


class Locker:
    """Another process holding the cache locked until `release()`."""

    def __init__(self, path: str, mode: str = "exclusive") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _LOCKER, path, mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)

    def __enter__(self) -> Locker:
        return self

    def __exit__(self, *a) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_a_locked_cache_is_waited_on_briefly_then_done_without(tmp_path, capsys):
    path = str(tmp_path / CACHE_FILE)
    c = Cache(path)
    c.put(*KEY, measurement().to_record())
    c.close()
    with Locker(path) as locker:
        t0 = time.monotonic()
        c = Cache(path)
        waited = time.monotonic() - t0
        assert not c.usable
        assert LOCK_WAIT_S * 0.9 <= waited < LOCK_WAIT_S + 5  # the stated time-out, not sqlite's 5 s or 30 s
        (line,) = warnings(capsys.readouterr().err)
        assert "locked by another process" in line and "without a cache" in line
        assert c.get(*KEY, parse=Measurement.from_record) is None  # a miss, at once
        c.put(*KEY, measurement().to_record())
        assert len(c) == 0 and capsys.readouterr().err == ""
        locker.release()
    c = Cache(path)  # the next run uses it again
    assert c.usable and c.get(*KEY, parse=Measurement.from_record) == measurement()
    assert not [f for f in os.listdir(tmp_path) if ".broken-" in f]  # locked is not broken


def test_a_cache_locked_while_in_use_is_dropped_for_the_run(tmp_path, capsys):
    path = str(tmp_path / CACHE_FILE)
    c = Cache(path)
    with Locker(path, "write"):
        t0 = time.monotonic()
        c.put(*KEY, measurement().to_record())  # waits LOCK_WAIT_S a try, warns, goes on
        assert time.monotonic() - t0 < LOCK_WAIT_S * (LOCK_RETRIES + 1) + 5
        assert not c.usable and c.get(*KEY) is None
    (line,) = warnings(capsys.readouterr().err)
    assert "locked by another process" in line


def test_the_cache_variable_names_a_folder(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "cache"
    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(folder))
    c = Cache()
    assert c.path == str(folder / CACHE_FILE) and c.usable
    c.close()
    a_file = tmp_path / "measurements.sqlite"
    a_file.write_bytes(b"")
    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(a_file))  # a file where a folder belongs
    c = Cache()
    assert not c.usable
    (line,) = warnings(capsys.readouterr().err)
    assert "is a file" in line and "MLIR_RL_TUI_CACHE names a folder" in line


# -- the command, for each kind of damage -----------------------------------------------------------
APPLY = ["apply", str(SAMPLES / "matmul.mlir"), "--schedule", SCHED, "--json", "--runs", "3"]


@pytest.fixture
def cli(capsys, engine, monkeypatch):
    """`mlir-rl-tui ...` in this process: (exit code, JSON answer or None, stderr lines).

    The machine's roofline (20 s to measure) comes from the session's engine when a fresh cache has lost
    it: these tests check the cache, not the roofline."""
    from mlir_rl_tui.commands import main
    from mlir_rl_tui.engine.engine import Engine

    peaks = engine.peaks()
    calls = []

    def measure_peaks(self, need=None, have=None):
        calls.append(1)
        return peaks

    monkeypatch.setattr(Engine, "_measure_peaks", measure_peaks)

    def run(*args: str):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, (json.loads(out) if out.strip() else None), warnings(err)

    run.roofline_measured = calls
    return run


@pytest.fixture(scope="module")
def good_cache(tmp_path_factory, engine) -> str:
    """A cache folder holding the baseline, the schedule's result and the roofline (one real apply)."""
    from mlir_rl_tui.commands import main

    folder = tmp_path_factory.mktemp("good-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLIR_RL_TUI_CACHE", str(folder))
        c = Cache()
        c.put_machine(engine.machine, engine.peaks().to_json())
        c.close()
        assert main(APPLY) == 0
    return str(folder)


def _flip_stored_digit(path: str) -> None:
    db = sqlite3.connect(path)
    (text,) = db.execute("SELECT result FROM measurements WHERE schedule=?", (SCHED,)).fetchone()
    i = text.index('"time_ms":') + len('"time_ms":')
    digit = text[i]
    db.execute("UPDATE measurements SET result=? WHERE schedule=?",
               (text[:i] + ("9" if digit != "9" else "1") + text[i + 1:], SCHED))
    db.commit()
    db.close()


def _unknown_status(path: str) -> None:
    db = sqlite3.connect(path)
    (prog, text) = db.execute("SELECT program, result FROM measurements WHERE schedule=?", (SCHED,)).fetchone()
    (machine,) = db.execute("SELECT machine FROM measurements WHERE schedule=?", (SCHED,)).fetchone()
    rec = dict(json.loads(text), status="fast")
    new = canonical(rec)
    db.execute("UPDATE measurements SET result=?, checksum=? WHERE schedule=?",
               (new, checksum((prog, SCHED, machine), new), SCHED))
    db.commit()
    db.close()


def _flip_roofline_digit(path: str) -> None:
    db = sqlite3.connect(path)
    (text,) = db.execute("SELECT peaks FROM machines").fetchone()
    i = text.index('"fma_gflops_1":') + len('"fma_gflops_1":')
    db.execute("UPDATE machines SET peaks=?", (text[:i] + ("9" if text[i] != "9" else "1") + text[i + 1:],))
    db.commit()
    db.close()


DAMAGE = {"corrupted file": _garbage, "truncated": _truncated, "read-only": _read_only,
          "foreign schema": _foreign, "flipped digit in a stored result": _flip_stored_digit,
          "unknown status": _unknown_status, "flipped digit in the roofline": _flip_roofline_digit,
          "locked by another process": None}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_apply_answers_warns_once_and_the_cache_works_again(cli, good_cache, tmp_path, monkeypatch, kind):
    folder = tmp_path / "cache"
    shutil.copytree(good_cache, folder)
    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(folder))
    path = str(folder / CACHE_FILE)
    if kind == "locked by another process":
        with Locker(path):
            code, answer, err = cli(*APPLY)
    else:
        DAMAGE[kind](path)
        code, answer, err = cli(*APPLY)
    if kind == "locked by another process":  # the answer stands, but what it could not store is said, non-zero
        assert code == 1 and len(err) == 2 and "not saved:" in err[1] and path in err[1], err
        err = err[:1]
    else:
        assert code == 0, err
    # a correct answer: measured again, never the damaged record (a damaged roofline is measured again,
    # the intact result beside it is served)
    assert answer["status"] == "ok" and answer["validated"]
    assert answer["cached"] == (kind == "flipped digit in the roofline")
    assert answer["speedup"] > 5 and answer["gflops"] > 0
    (line,) = err
    assert line.startswith("mlir-rl-tui: warning: ") and "internal error" not in line
    assert cli.roofline_measured == ([1] if kind in ("flipped digit in the roofline", "corrupted file", "truncated",
                                                     "read-only", "foreign schema", "locked by another process")
                                     else [])
    code, again, err = cli(*APPLY)  # and the cache works again afterwards: the answer is stored
    assert code == 0 and err == []
    assert again["cached"] and again["status"] == "ok" and len(cli.roofline_measured) <= 1


def test_a_command_whose_cache_stayed_locked_ends_non_zero_saying_what_was_not_saved(tmp_path):
    """`apply` with another process holding the measurement cache's write lock throughout: the figure is
    printed, but the command exits 1 with one line naming the rows not stored and the file."""
    from conftest import SAMPLES

    folder = tmp_path / "cache"
    folder.mkdir()
    path = str(folder / CACHE_FILE)
    Cache(path).close()
    env = {**os.environ, "MLIR_RL_TUI_CACHE": str(folder)}
    with Locker(path, "write"):
        r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "apply", str(SAMPLES / "add.mlir"),
                            "--schedule", "op0: T(4,32) V"], capture_output=True, text=True, timeout=300, env=env)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and "ms" in r.stdout, (r.stdout, r.stderr)
    assert last.startswith("mlir-rl-tui: error: not saved:") and path in last and "locked by another process" in last
