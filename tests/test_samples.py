"""The shipped samples: `mlir-rl-tui samples` lists, prints and copies them, and every command (and the app)
takes a sample's name where it takes a FILE, from any folder, unless a file of that name is there."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess

import pytest
from conftest import SAMPLE_FILES, SAMPLES, cli

from mlir_rl_tui.commands import app_parser, build_parser
from mlir_rl_tui.engine.corpus import samples


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_the_samples_are_the_repository_samples():
    assert samples.names() == sorted(p.stem for p in SAMPLE_FILES)
    assert os.path.samefile(samples.samples_dir(), SAMPLES)  # an editable install runs from the checkout
    assert samples.describe("matmul").startswith("Matrix multiplication")


def test_samples_lists_them(tmp_path):
    r = cli("samples", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for p in SAMPLE_FILES:
        assert any(line.split()[0] == p.stem for line in r.stdout.splitlines() if line.strip()), p.stem
    assert "mlir-rl-tui samples matmul -o ." in r.stdout
    data = json.loads(cli("samples", "--json", cwd=tmp_path).stdout)
    assert [s["name"] for s in data["samples"]] == samples.names()
    assert all(os.path.isfile(s["path"]) and s["description"] for s in data["samples"])


def test_samples_copies_and_prints(tmp_path):
    r = cli("samples", "matmul", "conv2d", "-o", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for n in ("matmul", "conv2d"):
        assert (tmp_path / "out" / f"{n}.mlir").read_text() == (SAMPLES / f"{n}.mlir").read_text()
    assert "exists (--force overwrites it)" in one_line_error(cli("samples", "matmul", "-o", "out", cwd=tmp_path))
    assert cli("samples", "matmul", "-o", "out", "--force", cwd=tmp_path).returncode == 0
    assert cli("samples", "relu", "-o", "mine.mlir", cwd=tmp_path).returncode == 0
    assert (tmp_path / "mine.mlir").read_text() == (SAMPLES / "relu.mlir").read_text()
    assert cli("samples", "add", cwd=tmp_path).stdout == (SAMPLES / "add.mlir").read_text()
    r = cli("samples", "--all", "-o", "all", "--json", cwd=tmp_path)
    assert sorted(c["name"] for c in json.loads(r.stdout)["copied"]) == samples.names()


@pytest.mark.parametrize("args,words", [
    (["samples", "nope"], "no sample 'nope'; samples: add, conv2d"),
    (["samples", "add", "relu"], "give -o DIR"),
    (["samples", "--all"], "give -o DIR"),
    (["inspect", "nope"], "nope: no such file, nor a shipped sample (add, conv2d"),
    (["nope"], "nope: no such file, nor a shipped sample"),
])
def test_bad_names_are_one_line(tmp_path, args, words):
    assert words in one_line_error(cli(*args, cwd=tmp_path))


def test_one_rule_for_a_program_argument(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    matmul = str(SAMPLES / "matmul.mlir")
    for parser, argv in ((app_parser(), ["matmul"]), (build_parser("apply"), ["apply", "matmul.mlir"]),
                         (build_parser("inspect"), ["inspect", "matmul"]),
                         (build_parser("search"), ["search", "matmul"])):
        assert os.path.samefile(parser.parse_args(argv).file, matmul), argv
    (tmp_path / "matmul").write_text("// mine")  # a file here wins over the sample
    assert app_parser().parse_args(["matmul"]).file == "matmul"
    assert samples.program("matmul") == "matmul"
    assert samples.program("sub/matmul") == "sub/matmul"  # a path is never a sample: the loader says it is missing
    assert os.path.samefile(samples.program("samples"), SAMPLES)


def test_inspect_and_apply_a_sample_by_name(tmp_path, cache_dir):
    r = cli("inspect", "matmul", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert os.path.samefile(data["program"], SAMPLES / "matmul.mlir")
    assert data["sha256"] == hashlib.sha256((SAMPLES / "matmul.mlir").read_bytes()).hexdigest()
    (tmp_path / "matmul.mlir").write_text((SAMPLES / "add.mlir").read_text())  # the file here, not the sample
    assert [o["name"] for o in json.loads(cli("inspect", "matmul.mlir", "--json", cwd=tmp_path).stdout)["ops"]] \
        == ["linalg.add"]
    r = cli("apply", "relu", "--schedule", "", "--json", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "ok"


def test_training_and_evaluation_take_sample_names(tmp_path, monkeypatch):
    from mlir_rl_tui.engine.corpus.programs import program_paths

    monkeypatch.chdir(tmp_path)  # no samples/ folder here: `samples` is the shipped ones
    assert [os.path.basename(p) for p in program_paths("samples")] == [p.name for p in SAMPLE_FILES]
    assert [os.path.basename(p) for p in program_paths(["matmul", "relu.mlir"])] == ["matmul.mlir", "relu.mlir"]


def test_the_env_takes_sample_names(tmp_path, monkeypatch):
    import gymnasium

    import mlir_rl_tui.engine  # noqa: F401 - registers mlir_rl/Schedule-v0

    monkeypatch.chdir(tmp_path)
    env = gymnasium.make("mlir_rl/Schedule-v0", program="matmul", measure="never")
    try:
        env.reset(seed=0)
        assert env.unwrapped.program.path.endswith("matmul.mlir")
        env.reset(seed=0, options={"program": "conv2d"})
        assert env.unwrapped.program.path.endswith("conv2d.mlir")
    finally:
        env.close()


def test_version():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"mlir-rl-tui {importlib.metadata.version('mlir-rl-tui')}"
    import mlir_rl_tui

    assert mlir_rl_tui.__version__ == importlib.metadata.version("mlir-rl-tui")
