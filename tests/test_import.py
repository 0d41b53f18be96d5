"""`mlir-rl-tui import`: PyTorch modules a user wrote become programs that load, validate against PyTorch's
own outputs and get faster with a search."""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pytest
from conftest import ROOT, cli

pytest.importorskip("torch_mlir", reason="torch-mlir is the [import] extra; scripts/setup installs it")
MODELS = ROOT / "tests" / "data" / "import_models.py"


@pytest.fixture(scope="module")
def mlp(tmp_path_factory, cache_dir) -> tuple[pathlib.Path, dict]:
    """`import` of a two-layer MLP (a convolution block is imported and checked in test_graph.py and
    test_tune.py): the program and the command's JSON answer."""
    out = tmp_path_factory.mktemp("import") / "mlp.mlir"
    r = cli("import", f"{MODELS}:TransformerMLP", "--input", "32x64", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


def _copy(mlp, tmp_path) -> pathlib.Path:
    """The imported program and its PyTorch reference, copied for a test to change."""
    for f in (mlp[0], mlp[0].with_name(mlp[0].name + ".torch.npz")):
        shutil.copy(f, tmp_path)
    return tmp_path / mlp[0].name


def test_import_validates_against_pytorch_and_search_improves_it(mlp, tmp_path):
    out, info = mlp
    assert info["ops"] > 5 and out.with_name(out.name + ".torch.npz").exists()
    out = _copy(mlp, tmp_path)
    base = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
    assert base["status"] == "ok" and base["validated"]  # the worker compared it with PyTorch's output
    found = json.loads(cli("search", str(out), "--method", "hill", "--budget", "8", "--json").stdout)
    assert found["status"] == "ok" and found["speedup"] > 1.1, found


def test_a_program_that_differs_from_pytorch_is_wrong_result(mlp, tmp_path):
    out = _copy(mlp, tmp_path)
    ref = np.load(str(out) + ".torch.npz")["output"]
    np.savez(str(out) + ".torch.npz", output=ref + 1.0, seed=np.array(0))
    m = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
    assert m["status"] == "wrong-result" and "PyTorch" in m["error"]
    # the reference is a file beside the program, not part of the cache's key: a verdict against it is not
    # stored, so the right reference is believed at once (and one made on other inputs is named as such)
    np.savez(str(out) + ".torch.npz", output=ref, seed=np.array(1))
    m = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
    assert m["status"] == "wrong-result" and "seeded 1" in m["error"], m
    np.savez(str(out) + ".torch.npz", output=ref, seed=np.array(0))
    m = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
    assert m["status"] == "ok" and m["validated"], m


def test_import_errors_are_one_line(tmp_path):
    for args, what in [((f"{MODELS}:Nope", "--input", "2x2"), "has no 'Nope'"),
                       ((f"{MODELS}:BasicBlock", "--input", "1x3x16x16"), "running it on the inputs failed"),
                       ((f"{MODELS}:BasicBlock", "--input", "1x16xx16"), "expected a shape"),
                       ((f"{tmp_path}/missing.py:M", "--input", "2"), "no such file")]:
        r = cli("import", *args, "-o", str(tmp_path / "x.mlir"), timeout=120)
        assert r.returncode == 2 and what in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
