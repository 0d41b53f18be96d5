"""Files the user names for a command to write: checked before any work (a folder, a missing folder, an input
of the same command), written only when the command succeeds and then in one step, and never a file the
user made that is not what the command writes (a trace, a tuning database read by show/export, a data set).
Each refusal is one line on stderr with exit status 2, and the file that was there keeps its bytes."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import conftest
import pytest
from conftest import SAMPLES

KEEP = b"the user's own file\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache folder of this module's own: nothing here times a kernel, so no roofline is measured."""
    return tmp_path_factory.mktemp("outputs-cache")


@pytest.fixture(scope="module")
def policies(tmp_path_factory) -> list[str]:
    """Two small policy checkpoints (ensemble members)."""
    import torch

    from mlir_rl_tui.agent.policy import ActorCritic, PolicyConfig, save

    d = tmp_path_factory.mktemp("policies")
    paths = []
    for i in range(2):
        torch.manual_seed(i)
        paths.append(str(d / f"m{i}.pt"))
        save(ActorCritic(config=PolicyConfig(hidden=16, layers=1)).eval(), paths[-1])
    return paths


def cli(cache, cwd, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return conftest.cli(*args, timeout=timeout, cwd=cwd, env={"MLIR_RL_TUI_CACHE": str(cache)})


def refused(r: subprocess.CompletedProcess, *words: str) -> str:
    """The one error line of a refusal (exit status 2), which names each of `words`."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlir-rl-tui: error: "), r.stderr
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def keep(path) -> bytes:
    """Put the user's file at `path`; returns its bytes."""
    path.write_bytes(KEEP)
    return KEEP


def no_temporary_files(folder) -> None:
    assert not [f for f in os.listdir(folder) if f.endswith(".tmp") or ".broken-" in f or f.endswith(".lock")]


# 1. convert-checkpoint writes NEW only once the conversion succeeded
def test_convert_checkpoint_that_fails_leaves_new_as_it_was(tmp_path, cache):
    import torch

    torch.save({"model": {"a": torch.zeros(2)}}, tmp_path / "old.pt")  # an older checkpoint of no known layout
    before = keep(tmp_path / "new.pt")
    r = cli(cache, tmp_path, "convert-checkpoint", "old.pt", "new.pt")
    refused(r, "old.pt: its weights do not match")
    assert (tmp_path / "new.pt").read_bytes() == before
    no_temporary_files(tmp_path)


# 2. apply writes -o and --emit-transform only when the measurement is ok
def test_apply_whose_measurement_fails_writes_no_output(tmp_path, cache):
    import numpy as np

    # a PyTorch reference beside the program that its result cannot match: the measurement is wrong-result
    (tmp_path / "w.mlir").write_bytes((SAMPLES / "relu.mlir").read_bytes())
    shape = [int(d) for d in (SAMPLES / "relu.mlir").read_text().split("tensor<")[1].split("xf32")[0].split("x")]
    np.savez(tmp_path / "w.mlir.torch.npz", output=np.full(shape, 1e9, np.float32), seed=np.array(0))
    out, script = keep(tmp_path / "out.mlir"), keep(tmp_path / "t.mlir")
    r = cli(cache, tmp_path, "apply", "w.mlir", "--schedule", "", "-o", "out.mlir", "--emit-transform",
            "t.mlir", "--runs", "1")
    assert r.returncode == 1 and r.stdout.startswith("wrong-result"), (r.returncode, r.stdout, r.stderr)
    assert "not written" in r.stderr
    assert (tmp_path / "out.mlir").read_bytes() == out and (tmp_path / "t.mlir").read_bytes() == script
    no_temporary_files(tmp_path)


# 3. an output that is the input program is refused before any work
@pytest.mark.parametrize("args", [["build", "p.mlir", "--schedule", "", "-o", "p.mlir"],
                                  ["apply", "p.mlir", "-o", "./p.mlir"],
                                  ["apply", "p.mlir", "--emit-transform", "../{dir}/p.mlir"],
                                  ["apply", "p.mlir", "-o", "x.mlir", "--emit-transform", "x.mlir"]],
                         ids=["build", "apply-o", "apply-emit-transform", "apply-both-outputs"])
def test_an_output_that_is_an_input_is_refused(args, tmp_path, cache):
    program = (SAMPLES / "add.mlir").read_bytes()
    (tmp_path / "p.mlir").write_bytes(program)
    r = cli(cache, tmp_path, *[a.format(dir=tmp_path.name) for a in args])
    refused(r, "p.mlir" if "x.mlir" not in args else "x.mlir")
    assert (tmp_path / "p.mlir").read_bytes() == program
    assert not (tmp_path / "x.mlir").exists()


# 4. ensemble OUT must not be one of its members
def test_ensemble_out_that_is_a_member_is_refused(tmp_path, cache, policies):
    with open(policies[0], "rb") as f:
        before = f.read()
    r = cli(cache, tmp_path, "ensemble", policies[0], *policies)
    refused(r, policies[0], "the same file")
    with open(policies[0], "rb") as f:
        assert f.read() == before


# 5. search --trace appends to a trace, or to a new file: nothing else
@pytest.mark.parametrize("content", [os.urandom(3000) + b"\n" + os.urandom(101), b"hello\nworld\n",
                                     b'{"a": 1}\n', os.urandom(200).replace(b"\n", b"")],
                         ids=["random-bytes", "text", "other-json", "no-newline"])
def test_search_trace_that_is_not_a_trace_is_refused(content, tmp_path, cache):
    (tmp_path / "t.jsonl").write_bytes(content)
    r = cli(cache, tmp_path, "search", str(SAMPLES / "add.mlir"), "--budget", "1", "--runs", "1", "--trace", "t.jsonl")
    refused(r, "t.jsonl", "not a trace")
    assert (tmp_path / "t.jsonl").read_bytes() == content


def test_search_trace_that_is_a_folder_is_refused_before_the_search(tmp_path, cache):
    (tmp_path / "d").mkdir()
    r = cli(cache, tmp_path, "search", str(SAMPLES / "add.mlir"), "--budget", "1", "--runs", "1", "--trace", "d")
    refused(r, "d: is a folder")


def test_a_trace_with_a_cut_last_line_may_be_appended_to(tmp_path):
    """An interrupted writer's trace passes the check (the next write drops its cut line, as before)."""
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.rl.trace import check_appendable

    rec = {"program": "p.mlir", "program_sha256": "ab" * 32, "op": "op0", "step": 0, "action": "NT",
           "observation": [0.0], "mask": [1], "source": "search", "measurement": None, "time": 0.0, "episode": 0}
    line = json.dumps(rec).encode() + b"\n"
    path = tmp_path / "t.jsonl"
    for ok in (b"", line, line * 3, line * 2 + line[:40], line[:40]):
        path.write_bytes(ok)
        check_appendable(str(path))
    check_appendable(str(tmp_path / "new.jsonl"))  # a file that is not there yet
    for bad in (b"garbage\n" + line, line + b"garbage\n", line + b"\x00\x01garbage"):
        path.write_bytes(bad)
        with pytest.raises(EngineError, match="not a trace"):
            check_appendable(str(path))


# 6. an output path that is a folder, or in a folder that does not exist: one line, before any work
@pytest.mark.parametrize("args,words", [
    (["dataset", "export", "d", "--programs", "p.mlir"], ["d: is a folder"]),
    (["dataset", "export", "nodir/x.gz", "--programs", "p.mlir"], ["nodir/x.gz", "no such folder"]),
    (["ensemble", "d", "{m0}", "{m1}"], ["d: is a folder"]),
    (["ensemble", "nodir/e.pt", "{m0}", "{m1}"], ["nodir/e.pt", "no such folder"]),
    (["convert-checkpoint", "old.pt", "d"], ["d: is a folder"]),
    (["build", "p.mlir", "--schedule", "", "-o", "nodir/k.so"], ["nodir/k.so", "no such folder"]),
    (["tuning-db", "export", "d"], ["d: is a folder"]),
], ids=["dataset-export-dir", "dataset-export-nodir", "ensemble-dir", "ensemble-nodir", "convert-dir", "build-nodir",
        "tuning-db-export-dir"])
def test_an_output_path_that_cannot_be_a_file_is_refused(args, words, tmp_path, cache, policies):
    import torch

    (tmp_path / "d").mkdir()
    (tmp_path / "p.mlir").write_bytes((SAMPLES / "add.mlir").read_bytes())
    torch.save({"model": {"a": torch.zeros(2)}}, tmp_path / "old.pt")
    r = cli(cache, tmp_path, *[a.format(m0=policies[0], m1=policies[1]) for a in args])
    refused(r, *words)
    assert os.listdir(tmp_path / "d") == [] and not (tmp_path / "nodir").exists()


# 7. a folder without programs is an error, not an empty result
def test_dataset_export_and_measure_of_no_programs_are_refused(tmp_path, cache):
    (tmp_path / "empty").mkdir()
    before = keep(tmp_path / "out.gz")
    refused(cli(cache, tmp_path, "dataset", "export", "out.gz", "--programs", "empty"), "no .mlir programs found in empty")
    assert (tmp_path / "out.gz").read_bytes() == before
    refused(cli(cache, tmp_path, "dataset", "measure", "empty"), "no .mlir programs found in empty")


# 8. tuning-db show and export only read the --db file
@pytest.mark.parametrize("action", ["show", "export"])
def test_tuning_db_read_of_a_missing_database_is_refused(action, tmp_path, cache):
    before = keep(tmp_path / "out.jsonl")
    args = ["tuning-db", action, *(["out.jsonl"] if action == "export" else []), "--db", "missing.sqlite"]
    refused(cli(cache, tmp_path, *args), "missing.sqlite: no such tuning database")
    assert not (tmp_path / "missing.sqlite").exists() and (tmp_path / "out.jsonl").read_bytes() == before


def test_tuning_db_show_of_a_file_that_is_not_one_leaves_it_as_it_was(tmp_path, cache):
    data = os.urandom(4096)
    (tmp_path / "db.sqlite").write_bytes(data)
    refused(cli(cache, tmp_path, "tuning-db", "show", "--db", "db.sqlite"), "db.sqlite: not a tuning database")
    assert (tmp_path / "db.sqlite").read_bytes() == data
    assert sorted(os.listdir(tmp_path)) == ["db.sqlite"]  # nothing moved aside, no recovery lock


def test_tuning_db_show_and_export_read_a_database(tmp_path, cache):
    from mlir_rl_tui.engine.store.tuning_db import Record, TuningDB

    db = TuningDB(str(tmp_path / "t.sqlite"))
    db.add(Record("m", "w", "T(4) V", 1.5, "a workload"))
    db.db.close()
    data = (tmp_path / "t.sqlite").read_bytes()
    r = cli(cache, tmp_path, "tuning-db", "show", "--db", "t.sqlite", "--all", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["records"] == 1, r.stderr
    keep(tmp_path / "x.jsonl")
    r = cli(cache, tmp_path, "tuning-db", "export", "x.jsonl", "--db", "t.sqlite", "--all")
    assert r.returncode == 0 and len((tmp_path / "x.jsonl").read_text().splitlines()) == 2, r.stderr
    assert (tmp_path / "t.sqlite").read_bytes() == data
    refused(cli(cache, tmp_path, "tuning-db", "export", "t.sqlite", "--db", "t.sqlite"), "the same file")
    assert (tmp_path / "t.sqlite").read_bytes() == data


# 9. dataset generate does not write over a data set unless --force
def test_dataset_generate_into_a_data_set_needs_force(tmp_path, cache):
    gen = ["dataset", "generate", "--out", "ds", "--n", "1", "--no-baseline"]
    assert cli(cache, tmp_path, *gen).returncode == 0
    before = {f: (tmp_path / "ds" / f).read_bytes() for f in os.listdir(tmp_path / "ds")}
    refused(cli(cache, tmp_path, *gen, "--seed", "3"), "ds/manifest.json", "--force")
    assert {f: (tmp_path / "ds" / f).read_bytes() for f in os.listdir(tmp_path / "ds")} == before
    r = cli(cache, tmp_path, *gen, "--seed", "3", "--force")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "ds" / "manifest.json").read_bytes() != before["manifest.json"]
    (tmp_path / "progs").mkdir()
    keep(tmp_path / "progs" / "0000_mine.mlir")
    refused(cli(cache, tmp_path, "dataset", "generate", "--out", "progs", "--n", "1", "--no-baseline"),
            "progs: holds .mlir programs", "--force")
    assert sorted(os.listdir(tmp_path / "progs")) == ["0000_mine.mlir"]
    keep(tmp_path / "f.txt")
    refused(cli(cache, tmp_path, "dataset", "generate", "--out", "f.txt", "--n", "1"), "--out f.txt: is a file, not a folder")
    refused(cli(cache, tmp_path, "costmodel", "eval", "--cache", "nodir", "--programs", "matmul"),
            "--cache nodir: no such folder")


# outputs of import, costmodel, train, evaluate --png: checked before any work
@pytest.mark.parametrize("case", ["import-over-its-module", "costmodel-over-a-program", "costmodel-into-a-folder",
                                  "train-out-is-a-file", "evaluate-png-not-png", "evaluate-png-no-folder"])
def test_the_other_outputs_are_checked_before_any_work(case, tmp_path, cache):
    (tmp_path / "m.py").write_text("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                                   "        return torch.relu(x)\n")
    (tmp_path / "p.mlir").write_bytes((SAMPLES / "relu.mlir").read_bytes())
    (tmp_path / "adir").mkdir()
    keep(tmp_path / "f.txt")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    args, words = {
        "import-over-its-module": (["import", "m.py:M", "--input", "4x4", "-o", "m.py"], ["the same file as m.py"]),
        "costmodel-over-a-program": (["costmodel", "train", "--programs", "p.mlir", "--out", "p.mlir"],
                                     ["the same file as p.mlir"]),
        "costmodel-into-a-folder": (["costmodel", "train", "--programs", "p.mlir", "--out", "adir"], ["is a folder"]),
        "train-out-is-a-file": (["train", "--programs", "p.mlir", "--out", "f.txt", "--iterations", "1"],
                                ["f.txt", "is a file, not a folder"]),
        "evaluate-png-not-png": (["evaluate", "--programs", "p.mlir", "--no-search", "--no-torch", "--png", "p.mlir"],
                                 ["ending in .png"]),
        "evaluate-png-no-folder": (["evaluate", "--programs", "p.mlir", "--no-search", "--no-torch", "--png",
                                    "nodir/x.png"], ["no such folder"]),
    }[case]
    refused(cli(cache, tmp_path, *args), *words)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    no_temporary_files(tmp_path)


def test_a_library_is_never_written_over_a_device_or_a_pipe(tmp_path, cache):
    os.mkfifo(tmp_path / "pipe")  # stands for /dev/null: renaming a library over it would replace it
    refused(cli(cache, tmp_path, "build", "add", "--schedule", "", "-o", "pipe"), "pipe: not a regular file")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)


def test_a_trace_and_a_checkpoint_are_written_into_a_pipe_not_over_it(tmp_path):
    """What --trace /dev/null and a checkpoint to a device do, on a pipe (a device is not replaced by a
    regular file, and one that cannot be synced is still written)."""
    import threading

    import torch

    from mlir_rl_tui.agent.checkpoint import save
    from mlir_rl_tui.engine import load_file, parse
    from mlir_rl_tui.engine.rl.trace import write_schedule

    prog = load_file(str(SAMPLES / "matmul.mlir"))
    for name, write in [("trace", lambda p: write_schedule(p, prog, parse("op0: T(8,32,1) V"), "search")),
                        ("checkpoint", lambda p: save(p, "policy", {"w": torch.zeros(2)}, {}))]:
        pipe = tmp_path / name
        os.mkfifo(pipe)
        got: list[bytes] = []
        reader = threading.Thread(target=lambda p=pipe, g=got: g.append(open(p, "rb").read()), daemon=True)
        reader.start()
        write(str(pipe))
        reader.join(30)
        assert got and got[0] and stat.S_ISFIFO(os.stat(pipe).st_mode), name


@pytest.mark.parametrize("args", [["tuning-db", "import", "x.jsonl", "--db", "{db}"],
                                  ["tune", "add", "--minutes", "1", "-o", "add.so", "--no-policy", "--db", "{db}"]],
                         ids=["tuning-db-import", "tune"])
@pytest.mark.parametrize("db", ["adir", "f.txt"], ids=["folder", "not-a-database"])
def test_a_tuning_database_the_user_named_is_never_moved_aside(args, db, tmp_path, cache):
    (tmp_path / "adir").mkdir()
    keep(tmp_path / "f.txt")
    (tmp_path / "x.jsonl").write_text("")
    refused(cli(cache, tmp_path, *[a.format(db=db) for a in args]), db)
    assert (tmp_path / "f.txt").read_bytes() == KEEP and not list(tmp_path.glob("f.txt.*"))
    no_temporary_files(tmp_path)


def test_a_library_built_through_a_link_replaces_the_links_target(tmp_path, cache):
    (tmp_path / "libs").mkdir()
    keep(tmp_path / "libs" / "add.so")
    os.symlink("libs/add.so", tmp_path / "add.so")
    r = cli(cache, tmp_path, "build", "add", "--schedule", "", "-o", "add.so")
    assert r.returncode == 0, r.stderr
    assert os.path.islink(tmp_path / "add.so") and (tmp_path / "libs" / "add.so").read_bytes()[:4] == b"\x7fELF"
    no_temporary_files(tmp_path)
    no_temporary_files(tmp_path / "libs")


def test_read_only_files_are_never_replaced(tmp_path, cache):
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    TuningDB(str(tmp_path / "t.sqlite")).close()  # a tuning database of the user's, made read-only
    keep(tmp_path / "out.mlir")
    for name in ("t.sqlite", "out.mlir"):
        os.chmod(tmp_path / name, 0o444)
    before = {n: (tmp_path / n).read_bytes() for n in ("t.sqlite", "out.mlir")}
    refused(cli(cache, tmp_path, "apply", "add", "-o", "out.mlir"), "out.mlir: read-only")
    refused(cli(cache, tmp_path, "tuning-db", "import", "x.jsonl", "--db", "t.sqlite"), "t.sqlite: read-only")
    assert {n: (tmp_path / n).read_bytes() for n in before} == before
    assert not list(tmp_path.glob("t.sqlite.broken-*"))
    no_temporary_files(tmp_path)


@pytest.mark.parametrize("args", [["ensemble", "pipe", "a.pt", "b.pt"], ["convert-checkpoint", "a.pt", "pipe"],
                                  ["tune", "m.py:M", "--input", "4", "-o", "m.mlir"]],
                         ids=["ensemble", "convert-checkpoint", "tune-over-its-imported-program"])
def test_outputs_read_back_are_files_and_not_what_the_command_makes_beside(args, tmp_path, cache):
    os.mkfifo(tmp_path / "pipe")
    for name in ("a.pt", "b.pt", "m.py"):
        keep(tmp_path / name)
    refused(cli(cache, tmp_path, *args), "pipe: not a regular file" if "pipe" in args else "m.mlir")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
