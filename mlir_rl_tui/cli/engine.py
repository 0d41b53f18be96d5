"""A command's engine and tuning database from its options (`--runs`, `--no-cache`, `--db`), and its program
loaded (FILE, `--entry`) and checked as measurable."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.output import CliError, note


def make_engine(args: argparse.Namespace):
    """The engine with the command's `--runs` and `--no-cache`, when it has them; with `--ray-address`, one that
    measures on that Ray cluster's nodes (engine.cluster.engine.ClusterEngine)."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.config import MeasureConfig

    cfg = MeasureConfig(runs=getattr(args, "runs", None) or MeasureConfig.runs)
    local = Engine(config=cfg, reuse=not getattr(args, "no_cache", False))
    address = getattr(args, "ray_address", None)
    if not address:
        return local
    try:
        import ray  # noqa: F401 - the optional extra

        from mlir_rl_tui.engine.cluster.engine import ClusterEngine
    except ImportError:
        local.close()
        raise CliError("--ray-address needs Ray: pip install 'mlir-rl-tui[ray]'") from None
    try:
        eng = ClusterEngine(local, address, on_note=note)
    except BaseException:
        local.close()
        raise
    note(f"measuring on {eng.width} nodes of the Ray cluster at {address} ({eng.cluster.cpu})")
    return eng


def open_tuning_db(path: str | None, readonly: bool = False):
    """The tuning database of `--db`. The default one (None) opens as the product's own: a damaged file is
    moved aside and a fresh one started. A file the user named is never moved aside (engine.store.cache.Store's
    `named`, `readonly`): a folder, a file of another kind, a read-only or locked one, or (`readonly`) a
    missing one is a one-line EngineError."""
    from mlir_rl_tui.engine.store.tuning_db import TuningDB

    if path is None:
        return TuningDB(None)
    return TuningDB(path, readonly=readonly, named=True)


def load_program(args: argparse.Namespace):
    """Load args.file with args.entry, guarded (engine.ir.loader): every failure is one line."""
    from mlir_rl_tui.engine.ir.loader import load_file
    from mlir_rl_tui.progress import ProgressLine

    with ProgressLine() as line:
        return load_file(args.file, getattr(args, "entry", None),
                         on_wait=lambda s: line.update(f"loading {args.file}: parsing"))


def check_measurable(prog, name: str, max_seconds: float | None = None) -> None:
    """Before measuring: refuse a program whose untransformed run is too long to measure (one-line
    error), and say on stderr how long measuring will take when that is more than a few seconds (and
    what `--max-seconds` does to it, for a command that has it)."""
    from mlir_rl_tui.engine.ir.program import measurement_note

    text = measurement_note(prog, name)
    if text:
        note(text + (f"; --max-seconds {max_seconds:g} stops it sooner" if max_seconds
                     else "; --max-seconds S sets a limit" if max_seconds is not None else ""))
