"""Limits and defaults of the environment in one place (paper Table I and Sec. VII-A.5)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

#: Paper's six transformation kinds, in the order of the transformation head.
TRANSFORMATIONS: tuple[str, ...] = ("T", "TP", "TF", "I", "V", "NT")

#: Operation-type categories of the one-hot feature (paper Sec. IV-B).
OP_TYPES: tuple[str, ...] = ("matmul", "conv_2d", "pooling", "add", "generic", "unknown")

#: Arithmetic operations counted in the body (paper Sec. IV-B "Operations Count").
ARITH_KINDS: tuple[str, ...] = ("add", "sub", "mul", "div", "exp")


@dataclass(frozen=True)
class Limits:
    """Fixed sizes of the observation and action spaces.

    The defaults are the paper's (Sec. VII-A.5): N=12 loops, M=8 tile sizes (0 = not tiled),
    L=14 arrays, D=12 access rank, tau=5 transformations per op.
    """

    n_loops: int = 12  # N
    n_tile_sizes: int = 8  # M
    n_arrays: int = 14  # L
    max_rank: int = 12  # D
    tau: int = 5  # schedule length per op before only V or NT remain
    #: Tile-size candidates, index 0 means "not tiled". Length must equal n_tile_sizes.
    tile_sizes: tuple[int, ...] = (0, 1, 2, 4, 8, 16, 32, 64)
    #: Largest vector (product of the vectorized op's loop extents) V may produce (paper: 512). Measured
    #: with the peak-code V (benchmarks/schedule_space.py): an elementwise op compiles in 66 ms at 1024
    #: elements, 1 s at 2048 and 7 s at 16384 ...
    max_vector_elements: int = 1024
    #: ... while V lowers contractions, convolutions and poolings to register-sized outer products and
    #: 1-D loops: 8192 elements compile in 0.2 s (matmul 64x64x2), 21504 in 0.3 s (conv2d).
    max_contraction_vector_elements: int = 8192

    def __post_init__(self) -> None:
        if len(self.tile_sizes) != self.n_tile_sizes:
            raise ValueError("tile_sizes must have n_tile_sizes entries")


def _seconds_from_env(name: str, default: float) -> float:
    """A number of seconds from the environment variable `name`; `default` when unset or not a number >= 0."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value >= 0 else default


@dataclass(frozen=True)
class MeasureConfig:
    """How a schedule is measured (engine.measure.timing; paper Sec. VII-A.3, 2024 paper time-out rule)."""

    #: At least this many timing rounds (a round: runs adding up to a few ms; the figure is the median over
    #: the rounds of each round's fastest run). The paper took the median of 5 runs; the 2-core VM needs rounds (engine.measure.timing).
    runs: int = 10
    #: More rounds until the 95% confidence interval of the median is within this fraction of it ...
    target_rel: float = 0.01
    #: ... or until this much kernel time was spent timing the candidate (MLIR_RL_TUI_TIMING_BUDGET_S sets
    #: it; the test suite's 0 stops at the least rounds: its figures are not the point).
    budget_s: float = field(default_factory=lambda: _seconds_from_env("MLIR_RL_TUI_TIMING_BUDGET_S", 1.5))
    #: Time every kernel alone on the machine (compiles wait); False lets serial kernels be timed while
    #: another worker compiles (faster, noisier: benchmarks/measurement_noise.py).
    exclusive: bool = True
    seed: int = 0
    timeout_factor: float = 10.0  # a run slower than 10x the baseline is a time-out
    timeout_floor_s: float = 1.0
    compile_timeout_s: float = 60.0
    memory_limit_bytes: int = 8 << 30
    rtol: float = 1e-3
    atol_scale: float = 1e-4  # atol = atol_scale * max(1, max|baseline|)
    workers: int = 2
    #: Niceness of the worker processes. The app uses 10 so compiling on both cores never starves its
    #: event loop; search and training keep 0 (nothing interactive competes with them).
    worker_nice: int = 0
    #: Wait out the host's bad states: a parallel timing whose hand-off probe is far (engine.measure.contention.far)
    #: is timed again after up to 6.5 s, one with too few steady rounds (engine.measure.timing) after up to 1.3 s,
    #: then flagged and not cached. Off (MLIR_RL_TUI_WAIT_FAR=0, the test suite's setting: its figures are
    #: not the point, and waiting made it 8 minutes longer) such timings are taken as they come, unflagged.
    wait_far: bool = field(default_factory=lambda: os.environ.get("MLIR_RL_TUI_WAIT_FAR", "1") != "0")
    #: Time a kernel again while other processes use the cores it needs (engine.measure.contention), and flag it
    #: contended (not cached) if they still do. Off (MLIR_RL_TUI_CONTENTION=0, the test suite's setting: its
    #: test processes run side by side, and its figures are not the point) a timing is taken as it comes.
    contention: bool = field(default_factory=lambda: os.environ.get("MLIR_RL_TUI_CONTENTION", "1") != "0")
    #: Time the state probe around every timing and take the figure from its steady rounds (engine.measure.timing);
    #: with wait_far, a timing with too few steady rounds is timed again (engine.measure.contention.STATE_WAITS_S)
    #: before it is flagged unsteady and not cached.
    steady: bool = True

    def timing(self) -> dict:
        """The engine.measure.timing.TimingConfig fields this config sets (sent to the worker as JSON)."""
        return {"min_rounds": self.runs, "min_baseline_rounds": min(5, self.runs),
                "target_rel": self.target_rel, "budget_s": self.budget_s}


DEFAULT_LIMITS = Limits()
DEFAULT_MEASURE = MeasureConfig()
