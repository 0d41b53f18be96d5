"""Transform scripts: readable text per action, and mlir-opt replays an exported schedule to the same IR."""

from __future__ import annotations

import subprocess
import sys

from conftest import mlir_opt_path

from mlir_rl_tui.engine import parse
from mlir_rl_tui.engine.ir.export import replayable, strip_transforms
from mlir_rl_tui.engine.schedule.transforms import script


def test_script_has_one_builder_per_action(matmul):
    text = script(matmul, parse("op0: TF(64,64,0) I(0,2,1) T(8,1,32) V"))
    assert 'match attributes {rl.op = "op0"}' in text
    assert "tile_using_forall %op0_2 tile_sizes [64, 64, 0]" in text
    assert "fuse_into_containing_op" in text and 'rl.op = "op1"' in text
    assert "generalize" in text and "iterator_interchange = [0, 2, 1]" in text
    assert "tile_using_for" in text and "tile_sizes [8, 1, 32]" in text
    assert text.rstrip().endswith("}") and "transform.structured.vectorize" in text


def test_vectorize_emits_peak_code(matmul):
    """V: contraction form, the accumulator hoisted out of the reduction tile loop (only that one), and
    contractions lowered to outer products (FMAs) (reference/codegen-spike)."""
    text = script(matmul, parse("op0: T(8,32,1) V"))
    assert "vectorize %tiled3 {create_named_contraction}" in text
    hoisted = [ln.split()[1] for ln in text.splitlines() if "hoist_loop_invariant_subsets" in ln]
    assert hoisted == ["%loops4#2"]  # the k loop, not i or j
    assert 'lower_contraction lowering_strategy = "outerproduct"' in text
    assert text.index("hoist_loop_invariant_subsets") > text.index("vectorize")
    # a reduction loop of one iteration is folded by canonicalization: it has no handle to hoist from
    assert "hoist" not in script(matmul, parse("op0: T(8,32,256) V"), check=False)


def test_a_tiling_that_tiles_nothing_emits_nothing(matmul, engine, monkeypatch):
    """`T(8,32,1)` again on an 8x32x1 tile makes only loops of one iteration. MLIR keeps them until the final
    canonicalization, so inside the k loop they stop the accumulator's hoisting (the k loop carries the
    8x32 tile as a tensor, read and written every iteration, not a vector in registers; 2.65x slower on a
    16x768x768 matmul): the level emits nothing, and the schedule is the same code as the one without it,
    measured and cached as that one."""
    from mlir_rl_tui.engine.schedule import transforms
    from mlir_rl_tui.engine.schedule.notation import to_text
    from mlir_rl_tui.engine.schedule.state import effective

    once, twice = parse("op0: T(32,32,0) T(8,32,1) V"), parse("op0: T(32,32,0) T(8,32,1) T(8,32,1) T(0,0,0) V")
    code = [[ln for ln in script(matmul, s).splitlines() if "//" not in ln] for s in (once, twice)]
    assert code[0] == code[1]
    assert to_text(effective(matmul, twice)) == to_text(effective(matmul, once)) == "op0: T(32,32,0) T(8,0,1) V"
    assert to_text(effective(matmul, parse("op0: T(256,256,256) NT"))) == ""  # the baseline
    # a level that tiles one loop is kept, with its covering sizes as 0
    assert to_text(effective(matmul, parse("op0: T(8,32,1) T(4,32,1) V"))) == "op0: T(8,32,1) T(4,0,0) V"

    status, good = engine.transformed_ir(matmul, twice)
    monkeypatch.setattr(transforms, "tiles_nothing", lambda st, a: False)  # one-iteration loops, as MLIR makes
    monkeypatch.setattr(transforms, "applied", lambda st, a: a)
    status_old, old = engine.transformed_ir(matmul, twice)
    monkeypatch.undo()
    assert status == status_old == "ok"
    assert "-> (vector<8x32xf32>)" in good  # the k loop carries the accumulator in registers
    assert "-> (vector<8x32xf32>)" not in old and "-> (tensor<8x32xf32>)" in old

    m1 = engine.measure(matmul, once)
    m2 = engine.measure(matmul, twice)
    assert m1.ok and m2.cached and m2.time_ms == m1.time_ms
    assert m2.schedule == to_text(twice)  # the record names the schedule asked for


def test_baseline_script_is_empty_sequence(matmul):
    text = script(matmul, parse(""))
    assert "structured" not in text and "transform.yield" in text


def test_mlir_opt_replays_the_exported_schedule(matmul, engine, tmp_path):
    """--emit-transform output, run through mlir-opt --transform-interpreter, gives the engine's IR."""

    sched = parse("op0: TF(64,64,0) T(8,32,1) V")
    path = tmp_path / "replay.mlir"
    path.write_text(replayable(matmul, sched))
    mlir_opt = mlir_opt_path()
    out = subprocess.run([mlir_opt, "--transform-interpreter", str(path)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    status, ir_text = engine.transformed_ir(matmul, sched)
    assert status == "ok"
    assert strip_transforms(out.stdout) == strip_transforms(ir_text)
    assert "vector.transfer_read" in ir_text and "scf.forall" in ir_text


def test_mlir_opt_replay_of_a_parallel_conv_gives_the_same_result(engine, tmp_path):
    """The exported script of a TP + register tile + V schedule on conv2d: mlir-opt replays it to the
    engine's IR, and that IR, compiled and run, gives the untransformed program's output."""
    import numpy as np
    from conftest import SAMPLES

    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.run.compile import Stages, compile_module, random_inputs

    conv = load_file(str(SAMPLES / "conv2d.mlir"))
    sched = parse("op0: TP(1,28,0,0,0,0,0) T(1,1,8,32,1,0,1) V; op1: T(1,2,8,64) V")
    path = tmp_path / "replay.mlir"
    path.write_text(replayable(conv, sched))
    mlir_opt = mlir_opt_path()
    out = subprocess.run([mlir_opt, "--transform-interpreter", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    status, ir_text = engine.transformed_ir(conv, sched)
    assert status == "ok" and strip_transforms(out.stdout) == strip_transforms(ir_text)
    assert "vector.fma" in ir_text  # contractions lowered to FMAs in the script itself
    replayed = strip_transforms(out.stdout)
    outs = []
    for text in (conv.text, replayed):
        k, _ = compile_module(text, None, "scf.forall" in text, conv.func_name, conv.args, conv.results[0], Stages())
        k.bind(random_inputs(conv.args, 0))
        k.call()
        outs.append(k.result())
    assert np.allclose(outs[0], outs[1], rtol=1e-4, atol=1e-3)


def test_cli_emit_transform_and_output(tmp_path, cache_dir):
    from conftest import SAMPLES

    out, tr = tmp_path / "out.mlir", tmp_path / "t.mlir"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "apply", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: T(8,32,1) V", "--json", "-o", str(out), "--emit-transform", str(tr)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "vector." in out.read_text() and "transform.named_sequence" in tr.read_text()


SPLIT_K = """#a = affine_map<(m, n, k1, k2) -> (m, k1, k2)>
#b = affine_map<(m, n, k1, k2) -> (k1, k2, n)>
#c = affine_map<(m, n, k1, k2) -> (m, n)>
func.func @forward(%x: tensor<32x4x16xf32>, %w: tensor<4x16x64xf32>) -> tensor<32x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<32x4x16xf32>, tensor<4x16x64xf32>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}
"""


def test_a_contraction_over_two_reduction_loops_vectorizes(engine, tmp_path):
    """A reshape folded into a matmul (what elementwise fusion makes of attention) has no named op:
    V vectorizes it as it is instead of failing the script in `structured.specialize`."""
    from mlir_rl_tui.engine import load_file

    path = tmp_path / "split_k.mlir"
    path.write_text(SPLIT_K)
    prog = load_file(str(path))
    s = parse("op0: T(8,32,1,0) V")
    assert "specialize" not in script(prog, s)
    m = engine.measure(prog, s, use_cache=False)
    assert m.ok and m.validated, (m.status, m.error)
