"""torch-mlir exports compiled by the engine's pipeline give PyTorch's outputs (checked in a subprocess)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT, TORCH_FILES

CHECK = r"""
import sys, numpy as np
from mlir_rl_tui.engine import load_file
from mlir_rl_tui.engine.run.compile import Stages, compile_module, aligned_empty
path = sys.argv[1]
prog = load_file(path)
x = np.load(path[:-5] + "_input.npy")
ref = np.load(path[:-5] + "_output.npy")
arg = aligned_empty(x.shape, x.dtype.name); arg[...] = x
c, _ = compile_module(prog.text, None, False, prog.func_name, prog.args, prog.results[0], Stages())
c.bind([arg]); c.call(); out = c.result()
err = float(np.abs(out - ref).max())
print(err)
sys.exit(0 if np.allclose(out, ref, rtol=1e-4, atol=1e-5) else 1)
"""


@pytest.mark.parametrize("path", TORCH_FILES, ids=lambda p: p.stem)
def test_export_matches_pytorch(path):
    r = subprocess.run([sys.executable, "-c", CHECK, str(path)], capture_output=True, text=True, timeout=120,
                       cwd=str(ROOT))
    assert r.returncode == 0, f"max abs error {r.stdout.strip()} {r.stderr[-500:]}"
