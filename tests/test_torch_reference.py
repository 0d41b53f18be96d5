"""PyTorch as the reference: on the engine's own inputs, PyTorch computes what each sample computes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES

torch = pytest.importorskip("torch", reason="torch is the agent extra (scripts/setup installs it)")


@pytest.mark.parametrize("name", ["matmul", "conv2d", "maxpool", "add", "relu"])
def test_pytorch_computes_the_sample(name):
    from mlir_rl_tui.agent.torch_reference import reference_output
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.compile import Stages, compile_module, random_inputs

    prog = load_file(str(SAMPLES / f"{name}.mlir"))
    k, _ = compile_module(prog.text, None, False, prog.func_name, prog.args, prog.results[0], Stages())
    k.bind(random_inputs(prog.args, 0))
    k.call()
    ours = k.result()
    ref = reference_output(prog)
    assert ref is not None and ref.shape == ours.shape
    assert np.allclose(ours, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))


def test_no_reference_for_a_chain():
    from mlir_rl_tui.agent.torch_reference import reference
    from mlir_rl_tui.engine import load_file

    assert reference(load_file(str(SAMPLES / "sequence5.mlir"))) is None
