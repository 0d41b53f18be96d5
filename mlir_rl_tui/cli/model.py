"""`tune`'s MODEL: a .mlir file, or a PyTorch module (FILE.py:NAME) imported to OUT.mlir beside the library
(agent.torch_import). The import is staged beside OUT.mlir while the command works and takes its place only
with the library, so a tune that fails or is killed leaves the OUT.mlir that was there."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from mlir_rl_tui.cli.options import program_arg
from mlir_rl_tui.cli.output import CliError


def imported(spec: str) -> bool:
    """Whether MODEL is a PyTorch module (FILE.py:NAME), not a .mlir file."""
    return ".py:" in spec


def source_file(spec: str) -> str:
    """The file MODEL reads: FILE.py of FILE.py:NAME, else the .mlir file."""
    return spec.rsplit(":", 1)[0] if imported(spec) else spec


def program_file(spec: str, output: str) -> str:
    """The program the library is built from once the command is done: OUT.mlir for an imported model (beside
    the library OUT.so), else MODEL itself."""
    return os.path.splitext(output)[0] + ".mlir" if imported(spec) else spec


@contextlib.contextmanager
def model_program(spec: str, inputs: list[str], output: str) -> Iterator[tuple[str, dict]]:
    """The program to tune and what import said of it: MODEL itself ({}), or MODEL imported from PyTorch into
    its staged file. A staged import takes OUT.mlir's place (`publish`) when the block ends without an
    exception; either way nothing of it is left beside OUT.mlir."""
    if not imported(spec):
        if inputs:
            raise CliError("--input is for a PyTorch module (FILE.py:NAME); a .mlir file has its shapes")
        yield program_arg(spec), {}
        return
    try:
        from mlir_rl_tui.agent.torch_import import import_module, parse_passes
    except ImportError as e:
        raise CliError(f"importing from PyTorch needs torch and torch-mlir: pip install 'mlir-rl-tui[import]' "
                       f"({e})") from None
    final = program_file(spec, output)
    path = staged(final)
    info = import_module(spec, inputs, path, passes=parse_passes("all"))
    try:
        yield path, info
        publish(path, final)  # with the library: both or neither are the new ones
    finally:  # a staged import not published (a failure, Ctrl-C): nothing left of it
        for f in (path + ".torch.npz", path):
            with contextlib.suppress(OSError):
                os.remove(f)


def staged(out: str) -> str:
    """Where `tune` imports OUT.mlir (and its reference) while it works: beside it, taking OUT.mlir's place
    only with the library, so a tune that fails or is killed leaves the OUT.mlir that was there."""
    folder, name = os.path.split(out)
    return os.path.join(folder, f".{name}.{os.getpid()}.tuning.mlir")


def publish(staging: str, out: str) -> None:
    """The imported program and its reference take OUT.mlir's place, the reference first (it names its
    program's sha256: a reader never takes a new reference for the old program)."""
    os.replace(staging + ".torch.npz", out + ".torch.npz")
    os.replace(staging, out)
