"""Transform scripts: readable text per action, and mlir-opt replays an exported schedule to the same IR."""

from __future__ import annotations

import os
import subprocess
import sys

from engine import parse
from engine.export import replayable, strip_transforms
from engine.transforms import script


def test_script_has_one_builder_per_action(matmul):
    text = script(matmul, parse("op0: TF(64,64,0) I(0,2,1) T(8,1,32) V"))
    assert 'match attributes {rl.op = "op0"}' in text
    assert "tile_using_forall %op0_1 tile_sizes [64, 64, 0]" in text
    assert "fuse_into_containing_op" in text and 'rl.op = "op1"' in text
    assert "generalize" in text and "iterator_interchange = [0, 2, 1]" in text
    assert "tile_using_for" in text and "tile_sizes [8, 1, 32]" in text
    assert text.rstrip().endswith("}") and "transform.structured.vectorize" in text


def test_baseline_script_is_empty_sequence(matmul):
    text = script(matmul, parse(""))
    assert "structured" not in text and "transform.yield" in text


def test_mlir_opt_replays_the_exported_schedule(matmul, engine, tmp_path):
    """--emit-transform output, run through mlir-opt --transform-interpreter, gives the engine's IR."""
    import mlir

    sched = parse("op0: TF(64,64,0) T(8,32,1) V")
    path = tmp_path / "replay.mlir"
    path.write_text(replayable(matmul, sched))
    mlir_opt = os.path.join(os.path.dirname(mlir.__path__[0] + "/"), "bin", "mlir-opt")
    out = subprocess.run([mlir_opt, "--transform-interpreter", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    status, ir_text = engine.transformed_ir(matmul, sched)
    assert status == "ok"
    assert strip_transforms(out.stdout) == strip_transforms(ir_text)
    assert "vector.transfer_read" in ir_text and "scf.forall" in ir_text


def test_cli_emit_transform_and_output(tmp_path, cache_dir):
    from conftest import SAMPLES

    out, tr = tmp_path / "out.mlir", tmp_path / "t.mlir"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "apply", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: T(8,32,1) V", "--json", "-o", str(out), "--emit-transform", str(tr)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "vector." in out.read_text() and "transform.named_sequence" in tr.read_text()
