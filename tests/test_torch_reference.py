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
    from mlir_rl_tui.engine.run.compile import Stages, compile_module, random_inputs

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


def test_a_reference_beside_another_program_is_refused(tmp_path, engine, monkeypatch):
    """import writes OUT.mlir and OUT.mlir.torch.npz each beside its name and renames them (reference first);
    killed between the two renames it leaves a new reference beside the old program, which the engine
    refuses (it holds the sha256 of its program's text) instead of checking the program against it."""
    from mlir_rl_tui.agent import torch_import
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.run.compile import Stages, compile_module, random_inputs

    out = tmp_path / "add.mlir"
    text = (SAMPLES / "add.mlir").read_text()
    prog = load_file(str(SAMPLES / "add.mlir"))
    k, _ = compile_module(prog.text, None, False, prog.func_name, prog.args, prog.results[0], Stages())
    k.bind(random_inputs(prog.args, 0))
    k.call()
    right = k.result()
    torch_import._write_pair(str(out), text, right, 0)  # a whole import: the pair matches
    assert engine.baseline(load_file(str(out))).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.mlir", "add.mlir.torch.npz"]

    other = text.replace("@forward", "@forward_v2")  # the next import, killed before its second rename
    real = torch_import.os.replace
    calls = []

    def killed(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(torch_import.os, "replace", killed)
    with pytest.raises(EngineError, match="cannot write"):
        torch_import._write_pair(str(out), other, right, 0)
    monkeypatch.setattr(torch_import.os, "replace", real)
    assert out.read_text() == text  # the old program, the new reference, nothing else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.mlir", "add.mlir.torch.npz"]
    m = engine.baseline(load_file(str(out)))
    assert m.status == "wrong-result" and "belongs to another program text" in m.error
