"""`mlir-rl-tui build`: the scheduled program as a shared library, called from Python through the runtime."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import SAMPLES


def test_built_kernel_gives_numpys_result(tmp_path, cache_dir):
    out = tmp_path / "matmul.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: TP(32,32,0) T(8,32,1) V; op1: NT", "-o", str(out), "--json"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    desc = json.loads(r.stdout)
    assert desc["symbol"] == "_mlir_ciface_forward" and desc["args"] == [[[256, 256], "f32"], [[256, 256], "f32"]]
    from mlir_rl_tui import runtime

    k = runtime.load(str(out))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((256, 256), np.float32), rng.standard_normal((256, 256), np.float32)
    for _ in range(3):  # results are independent buffers, freed when dropped
        c = k(a, b)
        assert c.shape == (256, 256) and np.allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    with pytest.raises(runtime.KernelError, match="argument 1 has shape"):
        k(a, b[:128])
    torch = pytest.importorskip("torch")
    t = k(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(t, torch.Tensor) and torch.allclose(t, torch.from_numpy(a) @ torch.from_numpy(b), atol=1e-3)


def test_build_errors_are_one_line(tmp_path, cache_dir):
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: T(7,32,1) V", "-o", str(tmp_path / "x.so")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "does not divide" in r.stderr
    from mlir_rl_tui import runtime

    with pytest.raises(runtime.KernelError, match="cannot read the kernel's description"):
        runtime.load(str(tmp_path / "missing.so"))
