"""What a cached record is keyed by: the program (`cache_key`: its text, the versions of the rewrites it was
compiled with, the PyTorch reference beside it) and the machine (`machine_key`: its fingerprint and parallel
runtime)."""

from __future__ import annotations

import hashlib
import os

from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.run.compile import parallel_runtime
from mlir_rl_tui.engine.store.cache import machine_fingerprint


def machine_key(runtime: tuple[str, str] | None = None) -> str:
    """The machine part of a cache key: the fingerprint and the parallel runtime the kernels run on."""
    rt = runtime if runtime is not None else parallel_runtime()
    return machine_fingerprint() + "-" + (rt[0] if rt else "serial")


_TAGS: dict[str, list[str]] = {}  # program sha256 -> the rewrite versions its cache key carries


def cache_key(program: Program) -> str:
    """The program's part of a measurement's cache key: its sha256, the versions of engine.rewrite.math_approx and
    engine.rewrite.booleans when it holds what they rewrite, and the PyTorch reference beside it when it has one
    (a result checked against one reference is not served against another)."""
    from mlir_rl_tui.engine.rewrite import booleans, math_approx
    from mlir_rl_tui.engine.run.compile import ARGS_READ_ONLY_VERSION, writes_arguments

    key = program.sha256
    tags = _TAGS.get(key)
    if tags is None:  # each a scan of the text (a model with its weights is 90 MB): once per program
        tags = math_approx.versions(program.text) + ([booleans.VERSION] if booleans.rewrites(program.text) else []) \
            + ([ARGS_READ_ONLY_VERSION] if writes_arguments(program.text) else [])
        _TAGS[key] = tags
    for tag in tags:  # compiled differently since these rewrites
        key = hashlib.sha256(f"{key}|{tag}".encode()).hexdigest()
    ref = torch_reference(program)
    if ref is None:
        return key
    try:
        with open(ref, "rb") as f:
            return hashlib.sha256(key.encode() + f.read()).hexdigest()
    except OSError:
        return key


def torch_reference(program: Program) -> str | None:
    """PyTorch's output saved beside a program imported with `mlir-rl-tui import` (FILE.torch.npz)."""
    if program.path and os.path.exists(program.path + ".torch.npz"):
        return os.path.abspath(program.path + ".torch.npz")
    return None
