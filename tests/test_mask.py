"""Action mask: each masked choice has a reason; the rules of the paper and of the failure study."""

from __future__ import annotations

import pytest
from conftest import mlir_opt_path

from mlir_rl_tui.engine import Action, ScheduleError, Session, load_file
from mlir_rl_tui.engine.config import TRANSFORMATIONS


def test_tp_never_tiles_a_reduction(matmul):
    m = Session(matmul).mask()
    k_row = m.tile["TP"][2]  # loop 2 of matmul is the reduction
    assert [c.allowed for c in k_row] == [True] + [False] * 7
    assert "reduction" in k_row[3].reason
    assert all(c.allowed for c in m.tile["T"][2])  # plain tiling may tile it
    with pytest.raises(ScheduleError, match="reduction"):
        Session(matmul).apply(Action("TP", (64, 64, 32)))


def test_tile_sizes_must_divide(matmul):
    from conftest import SAMPLES

    conv = Session(load_file(str(SAMPLES / "conv2d.mlir")))
    row = conv.mask().tile["T"][1]  # output height 56
    sizes = conv.limits.tile_sizes
    assert [s for s, c in zip(sizes, row) if c.allowed] == [0, 1, 2, 4, 8]
    assert "does not divide" in row[sizes.index(16)].reason
    s = Session(matmul).apply(Action("T", (32, 64, 64)))
    row = s.mask().tile["T"][0]  # extent is now the tile size 32
    assert row[sizes.index(32)].allowed and row[sizes.index(16)].allowed
    assert not row[sizes.index(64)].allowed and "> extent 32" in row[sizes.index(64)].reason


def test_vectorize_only_when_small_enough(matmul, add):
    """Contractions may vectorize up to 8192 elements (V lowers them to register-sized outer products),
    elementwise ops up to 1024 (benchmarks/schedule_space.py: compile time explodes beyond)."""
    s = Session(matmul)
    assert not s.mask().transformation["V"].allowed
    assert "8192" in s.mask().transformation["V"].reason
    s = s.apply(Action("T", (8, 32, 1)))
    assert s.mask().transformation["V"].allowed
    assert Session(matmul).apply(Action("T", (16, 64, 8))).mask().transformation["V"].allowed  # 8192
    assert not Session(matmul).apply(Action("T", (32, 64, 8))).mask().transformation["V"].allowed
    e = Session(add)
    assert not e.mask().transformation["V"].allowed and "1024" in e.mask().transformation["V"].reason
    assert e.apply(Action("T", (1, 1024))).mask().transformation["V"].allowed
    assert not Session(add).apply(Action("T", (2, 1024))).mask().transformation["V"].allowed


def test_conv_vectorizes_after_height_loops_are_one():
    from conftest import SAMPLES

    s = Session(load_file(str(SAMPLES / "conv2d.mlir")))
    assert "output height" in s.mask().transformation["V"].reason
    s = s.apply(Action("T", (1, 1, 8, 32, 1, 1, 1)))
    assert s.mask().transformation["V"].allowed


def test_tf_needs_a_producer_and_comes_first(matmul):
    from conftest import SAMPLES

    add = Session(load_file(str(SAMPLES / "add.mlir")))
    assert "no linalg producer" in add.mask().transformation["TF"].reason
    s = Session(matmul).apply(Action("T", (64, 64, 0)))
    assert "first tiling" in s.mask().transformation["TF"].reason


def test_tp_at_most_once_and_tau(matmul):
    s = Session(matmul).apply(Action("TP", (64, 64, 0)))
    assert "at most once" in s.mask().transformation["TP"].reason
    for _ in range(4):
        s = s.apply(Action("T", (0, 0, 0)))
    m = s.mask()
    assert m.allowed_kinds() == ["V", "NT"] or m.allowed_kinds() == ["NT"]
    assert "tau" in m.transformation["T"].reason


def test_interchange_in_progress_must_complete(matmul):
    s = Session(matmul).point(2)
    m = s.mask()
    assert m.allowed_kinds() == ["I"]
    assert "in progress" in m.transformation["T"].reason
    assert not m.interchange[2].allowed and m.interchange[0].allowed
    s = s.point(0).point(1)
    assert s.schedule.actions("op0") == [Action("I", (2, 0, 1))]
    assert s.states["op0"].order == [2, 0, 1]


def test_every_masked_choice_has_a_reason(matmul):
    m = Session(matmul).mask()
    choices = [m.transformation[k] for k in TRANSFORMATIONS] + list(m.interchange)
    choices += [c for rows in m.tile.values() for row in rows for c in row]
    masked = [c for c in choices if not c.allowed]
    # untiled, the matmul cannot be vectorized, nor parallelized or fused on its reduction loop, and
    # interchange has no 4th loop: masked choices of every kind, each with its reason
    assert not m.transformation["V"].allowed and "tile first" in m.transformation["V"].reason
    assert not m.tile["TP"][2][1].allowed and not m.tile["TF"][2][1].allowed
    assert not m.interchange[3].allowed
    assert masked and all(c.reason for c in masked)


def test_vectorize_masked_for_bodies_the_vectorizer_rejects():
    from conftest import TORCH

    prog = load_file(str(TORCH / "resnet_block.mlir"))
    op = next(o for o in prog.ops if o.unvectorizable_body)
    assert "cf.assert" in op.unvectorizable_body
    s = Session(prog)
    st = s.states[op.id]
    from mlir_rl_tui.engine.schedule.state import vectorize_choice

    c = vectorize_choice(st)
    assert not c.allowed and "cf.assert" in c.reason


PADDED = """
func.func @f(%x: tensor<1x16x16x32xf32>) -> tensor<1x18x18x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x32xf32>) outs(%e : tensor<1x16x16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x16x16x32xf32>
  %p0 = tensor.empty() : tensor<1x18x18x32xf32>
  %p = linalg.fill ins(%zero : f32) outs(%p0 : tensor<1x18x18x32xf32>) -> tensor<1x18x18x32xf32>
  %i = tensor.insert_slice %r into %p[0, 1, 1, 0] [1, 16, 16, 32] [1, 1, 1, 1]
      : tensor<1x16x16x32xf32> into tensor<1x18x18x32xf32>
  return %i : tensor<1x18x18x32xf32>
}
"""


def test_a_fill_of_a_padded_buffer_is_left_alone(tmp_path, matmul, engine):
    """engine.rewrite.graph's pad rewrite (fill + insert_slice of the ReLU's result): tiling the fill stops the ReLU
    writing straight into the padded buffer (a strided memrefCopy instead: 2.45x against 9.26x on a validation
    block), so the mask allows NT only there, and says why; an accumulator's fill (matmul) is not a padded
    buffer."""
    from mlir_rl_tui.engine import load, parse

    prog = load(PADDED, name="padded")
    fill = next(o for o in prog.ops if o.name == "linalg.fill")
    relu = next(o for o in prog.ops if o.name == "linalg.generic")
    assert fill.pad_fill and not relu.pad_fill
    assert not any(o.pad_fill for o in matmul.ops)
    # padding the function's argument, or one fill shared by two pads: a copy either way (a vectorized
    # fill is faster there: 18.4x against 14.0x on a validation ResNet block), so the fill stays free
    arg = PADDED.replace("insert_slice %r into", "insert_slice %x into")
    shared = PADDED.replace("return %i :", "%j = tensor.insert_slice %x into %p[0, 0, 0, 0] [1, 16, 16, 32] [1, 1, 1, 1]"
                            " : tensor<1x16x16x32xf32> into tensor<1x18x18x32xf32>\n  %k = arith.addf %i, %j"
                            " : tensor<1x18x18x32xf32>\n  return %k :")
    for text in (arg, shared):
        assert not any(o.pad_fill for o in load(text, name="free").ops)
    s = Session(prog)
    while s.current.op.id != fill.id:
        s = s.apply(Action("NT"))
    m = s.mask()
    assert m.allowed_kinds() == ["NT"]
    assert all("padded buffer" in m.transformation[k].reason for k in TRANSFORMATIONS if k != "NT")
    with pytest.raises(ScheduleError, match="padded buffer"):
        s.apply(Action("T", (1, 2, 0, 0)))
    # the loader's view survives the worker round trip, and the schedule that leaves the fill runs and checks
    again = load_file(str(_write(tmp_path, PADDED)))
    assert next(o for o in again.ops if o.name == "linalg.fill").pad_fill
    r = engine.measure(again, parse(f"{relu.id}: T(1,1,1,32) V; {fill.id}: NT"))
    assert r.ok, r.status


def _write(tmp_path, text):
    p = tmp_path / "padded.mlir"
    p.write_text(text)
    return p


def test_a_tiled_padded_fill_really_costs_a_copy(engine):
    """The rule above is MLIR's behaviour, checked: the compile pipeline's bufferization (engine.run.compile)
    leaves no copy when the fill is left alone, and copies the ReLU's result in (memref.copy into a strided
    subview) once the fill is tiled; the same program with the rule switched off is how that schedule is made."""
    import copy
    import subprocess

    from mlir_rl_tui.engine import load, parse
    from mlir_rl_tui.engine.run.compile import BUFFERIZE

    prog = load(PADDED, name="padded")
    fill = next(o for o in prog.ops if o.name == "linalg.fill")
    relu = next(o for o in prog.ops if o.name == "linalg.generic")
    unmasked = copy.deepcopy(prog)
    for o in unmasked.ops:
        o.pad_fill = False
    mlir_opt = mlir_opt_path()
    copies = {}
    for fill_actions in ("NT", "T(1,2,0,0) NT"):
        status, ir_text = engine.transformed_ir(unmasked, parse(f"{relu.id}: T(1,1,1,32) V; {fill.id}: {fill_actions}"))
        assert status == "ok"
        out = subprocess.run([mlir_opt, f"--pass-pipeline=builtin.module({BUFFERIZE})"], input=ir_text,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        copies[fill_actions] = out.stdout.count("memref.copy")
    assert copies == {"NT": 0, "T(1,2,0,0) NT": 1}


CONV_1D = """
func.func @forward(%x: tensor<1x68x8xf32>, %w: tensor<5x8x16xf32>) -> tensor<1x64x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x64x16xf32>
  %o = linalg.fill ins(%z : f32) outs(%e : tensor<1x64x16xf32>) -> tensor<1x64x16xf32>
  %c = linalg.conv_1d_nwc_wcf {dilations = dense<1> : vector<1xi64>, strides = dense<1> : vector<1xi64>}
       ins(%x, %w : tensor<1x68x8xf32>, tensor<5x8x16xf32>) outs(%o : tensor<1x64x16xf32>) -> tensor<1x64x16xf32>
  return %c : tensor<1x64x16xf32>
}
"""


def test_a_1d_convolution_vectorizes_as_it_is_and_computes_the_right_answer(engine):
    from mlir_rl_tui.engine import load, parse

    prog = load(CONV_1D)
    sess = Session(prog).apply(Action("T", (1, 8, 16, 1, 1)))
    assert sess.mask().transformation["V"].allowed  # no height loops to tile to 1 first: it is 1-D
    m = engine.validate(prog, parse("op0: T(1,8,16,1,1) V"))
    assert m.status == "ok", m.error
    interchanged = Session(prog).apply(Action("I", (1, 0, 2, 3, 4)))
    assert "interchanged" in interchanged.mask().transformation["V"].reason  # a generic after interchange
