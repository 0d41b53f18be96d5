"""Import a PyTorch module as a linalg-on-tensors program: `mlir-rl-tui import FILE.py:NAME --input SHAPE`.

`torch.export` and torch-mlir's FX importer (`torch_mlir.fx.export_and_import`, output type
LINALG_ON_TENSORS) write a module the engine loads, weights included (`dense_resource`). NAME is an
`nn.Module` class (built with no arguments) or a factory function returning a module, built after
`torch.manual_seed(0)` (weights it draws at random are the same in every import) and put in eval mode. This RUNS the given Python file: only import files you trust (README, security note).

Beside OUT.mlir the importer writes OUT.mlir.torch.npz: PyTorch's output on the engine's own seeded inputs
(`engine.run.compile.random_inputs`), so the untransformed program (and through it every schedule the engine
validates) is checked against PyTorch, not only against itself (engine.run.compare).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import warnings

import numpy as np

from mlir_rl_tui.agent.torch_passes import fold_batch_norms, subpixel_transposed_convs
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.rewrite.graph import PASSES as GRAPH_PASSES
from mlir_rl_tui.engine.rewrite.graph import graph_passes

_DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "i64": "int64", "i32": "int32"}


def parse_input(text: str) -> tuple[tuple[int, ...], str]:
    """`1x3x224x224` or `1x3x224x224:f32` -> (shape, dtype); every dimension at least 1."""
    m = re.fullmatch(r"\s*(-?\d+(?:x-?\d+)*)\s*(?::\s*(\w+))?\s*", text)
    if not m:
        raise EngineError(f"--input {text!r}: expected a shape like 1x3x224x224 or 1x3x224x224:f32")
    dtype = m.group(2) or "f32"
    if dtype not in _DTYPES:
        raise EngineError(f"--input {text!r}: element type {dtype} is not one of {', '.join(_DTYPES)}")
    shape = tuple(int(d) for d in m.group(1).split("x"))
    if min(shape) < 1:
        raise EngineError(f"--input {text!r}: dimension {min(shape)}; every dimension must be at least 1")
    return shape, dtype


def module_file(spec: str) -> tuple[str, str]:
    """FILE.py:NAME -> (FILE.py, NAME), once FILE.py is a file; an EngineError (one line) naming the cause
    otherwise (a missing file, a directory, no NAME). Neither runs nor reads the file."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise EngineError(f"{spec}: expected FILE.py:NAME (a module class or a factory in FILE.py)")
    if os.path.isdir(path):
        raise EngineError(f"{path}: a directory, not a Python file (FILE.py:NAME)")
    if not os.path.isfile(path):
        raise EngineError(f"{path}: no such file" if not os.path.lexists(path) else f"{path}: not a regular file")
    return path, name


def load_module(spec: str):
    """FILE.py:NAME -> an nn.Module in eval mode (runs FILE.py)."""
    import torch

    path, name = module_file(spec)
    modname = f"_mlir_rl_import_{abs(hash(os.path.abspath(path)))}"
    loader_spec = importlib.util.spec_from_file_location(modname, path)
    if loader_spec is None or loader_spec.loader is None:
        raise EngineError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(loader_spec)
    sys.modules[modname] = mod
    try:
        loader_spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - the user's code: report it in one line
        raise EngineError(f"{path}: running it failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") \
            from None
    obj = getattr(mod, name, None)
    if obj is None:
        raise EngineError(f"{path} has no {name!r}")
    try:
        model = obj()
    except Exception as e:  # noqa: BLE001
        raise EngineError(f"{spec}: building it failed: {type(e).__name__}: {e}") from None
    if not isinstance(model, torch.nn.Module):
        raise EngineError(f"{spec} is not an nn.Module (nor a function returning one)")
    return model.eval()


#: What `import` does to a model besides exporting it (all by default; `--passes none` for torch-mlir's own
#: output): `bn` and `convt` rewrite the module (agent.torch_passes: batch norms folded into the convolution
#: before them, transposed convolutions as sub-pixel convolutions); the others are engine.rewrite.graph's rewrites of
#: the exported MLIR.
TORCH_PASSES = ("bn", "convt")
PASSES = (*TORCH_PASSES, *GRAPH_PASSES)


def parse_passes(text: str) -> tuple[str, ...]:
    """`all`, `none` or a comma-separated subset of PASSES."""
    if text.strip() == "all":
        return PASSES
    if text.strip() == "none":
        return ()
    names = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in names if p not in PASSES]
    if bad:
        raise EngineError(f"--passes: unknown pass {bad[0]!r}; choose from {', '.join(PASSES)}, all or none")
    return names


def import_module(spec, inputs: list[str], out: str, seed: int = 0, passes: tuple[str, ...] = PASSES) -> dict:
    """Export `spec` (FILE.py:NAME, or an nn.Module in eval mode) on inputs of the given shapes to `out`
    (.mlir) and the PyTorch reference beside it; `passes` (PASSES) rewrite the model and the program on the way.
    The file of `spec` and the shapes are checked before torch is imported."""
    if isinstance(spec, str):
        module_file(spec)
    shapes = [parse_input(t) for t in inputs]
    if not shapes:
        raise EngineError("give the shape of each input with --input SHAPE[:DTYPE]")
    import torch

    try:
        from torch_mlir import fx
        from torch_mlir.compiler_utils import OutputType
    except ImportError:
        raise EngineError("importing from PyTorch needs torch-mlir: pip install 'mlir-rl-tui[import]' "
                          "(or: pip install torch-mlir==20261001)") from None
    from mlir_rl_tui.engine.ir.program import TensorSpec
    from mlir_rl_tui.engine.run.compile import random_inputs

    if isinstance(spec, str):
        torch.manual_seed(seed)  # weights a module draws at random are those of torch.manual_seed(seed)
    model = load_module(spec) if isinstance(spec, str) else spec
    spec = spec if isinstance(spec, str) else type(spec).__name__
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's own deprecation notices
    arrays = random_inputs([TensorSpec(s, d) for s, d in shapes], seed)
    xs = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
    with torch.no_grad():
        try:
            ref = model(*xs)
        except Exception as e:  # noqa: BLE001
            raise EngineError(f"{spec}: running it on the inputs failed: {type(e).__name__}: "
                              f"{str(e).splitlines()[0] if str(e) else ''}") from None
        exported, folded_bn = fold_batch_norms(model) if "bn" in passes else (model, 0)
        exported, subpixel = subpixel_transposed_convs(exported) if "convt" in passes else (exported, 0)
        try:
            module = fx.export_and_import(exported, *xs, output_type=OutputType.LINALG_ON_TENSORS, func_name="forward")
        except Exception as e:  # noqa: BLE001 - torch.export / torch-mlir name the op they cannot handle
            raise EngineError(f"{spec}: torch-mlir cannot import it: {_first_line(e)}") from None
    if not isinstance(ref, torch.Tensor):
        raise EngineError(f"{spec}: the module returns {type(ref).__name__}; exactly one tensor is supported")
    text = str(module)
    done = {**({"bn": folded_bn} if "bn" in passes else {}), **({"convt": subpixel} if "convt" in passes else {})}
    graph = tuple(p for p in passes if p in GRAPH_PASSES)
    if graph:
        try:
            res = graph_passes(text, graph, name=spec)
            text = res["text"]
            done.update(res["counts"])
        except EngineError as e:  # the export as it is: still a valid program
            done["graph_error"] = str(e)
    _write_pair(out, text, ref.numpy(), seed)
    return {"output": out, "inputs": [list(s) for s, _ in shapes], "result": list(ref.shape),
            "forward": forward_names(model, len(shapes)),
            "reference": out + ".torch.npz", "chars": len(text), "passes": done}


def _write_pair(out: str, text: str, output: np.ndarray, seed: int) -> None:
    """OUT.mlir and its reference OUT.mlir.torch.npz, each written beside its name, synced and renamed over it
    (engine.store.atomic; the reference first): a failed or killed import leaves no cut file. The reference holds
    the sha256 of the program text it belongs to, so a reader that finds a new reference beside an old
    program (a kill between the two renames) refuses the pair instead of checking against the wrong output."""
    from mlir_rl_tui.engine.ir.program import sha256_text
    from mlir_rl_tui.engine.store import atomic

    try:
        with atomic.replacing(out) as prog_tmp, atomic.replacing(out + ".torch.npz") as ref_tmp:
            with open(ref_tmp, "wb") as f:
                np.savez(f, output=output, seed=np.array(seed), program_sha256=np.array(sha256_text(text)))
            with open(prog_tmp, "w", encoding="utf-8") as f:
                f.write(text)
    except OSError as e:
        raise EngineError(f"cannot write {out}: {e.strerror or e}") from None


def forward_names(model, n: int) -> list[str]:
    """The names of the module's first `n` forward parameters (input0, input1... when they cannot be read)."""
    import inspect

    try:
        params = [p.name for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:n] if len(params) >= n else [f"input{i}" for i in range(n)]


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    for ln in lines:  # torch-mlir's diagnostics name the op: prefer the line that does
        if "failed to legalize" in ln or "unsupported" in ln.lower() or "error:" in ln:
            return ln[:300]
    return (lines[0] if lines else type(e).__name__)[:300]
