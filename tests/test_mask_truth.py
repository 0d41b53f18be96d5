"""The mask tells the truth (issue 11): each rule the mask fuzz found masks an action that really fails,
and each script fix makes a schedule that failed compile (and compute the right result).

The reproducers are the fuzz's shrunk failures (benchmarks/mask_fuzz.py --shrink).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import SAMPLES, TORCH

from mlir_rl_tui.engine import load_file, parse
from mlir_rl_tui.engine.schedule.state import check_schedule, transformation_reasons, vectorize_choice
from mlir_rl_tui.engine.schedule.transforms import script


def _load(name: str):
    return load_file(str(TORCH / name if (TORCH / name).exists() else SAMPLES / name))


# -- rules: the mask gives a reason, and without the mask the action fails -----------------------------
RULES = [
    # (program, op, kind, words of the reason, schedule that breaks the rule, what MLIR says)
    ("attention.mlir", "op7", "V", "read 2 times", "op7: V", "Attempted to vectorize"),
    ("mobilenet_block.mlir", "op19", "V", "decompose", "op19: T(1,1,1,2,1,0) V", "decompose failed"),
]


@pytest.mark.parametrize("name,op,kind,reason,bad,error", RULES, ids=[f"{r[0]}-{r[1]}-{r[2]}" for r in RULES])
def test_masked_action_really_fails(engine, name, op, kind, reason, bad, error):
    prog = _load(name)
    choice = transformation_reasons(check_schedule(prog, parse(""))[op], prog)[kind]
    assert not choice.allowed and reason in choice.reason
    res = engine.compile_only(prog, parse(bad), check=False)
    assert res.status == "transform-error" and error in res.error


def test_tf_of_a_producer_written_at_a_constant_index_would_copy_all_of_it_into_every_tile():
    """op3 sums into a 1x16x1 tensor through (d0, d1, 0): MLIR cannot tile it from op2's 1x2x2 tile and
    clones the whole op (1x16x16 in) into each of the 64 tiles; the mask says so instead."""
    from mlir_rl_tui.engine.run.compile import Stages, transform_ir

    prog = _load("attention.mlir")
    choice = transformation_reasons(check_schedule(prog, parse(""))["op2"], prog)["TF"]
    assert not choice.allowed and "constant or combined index" in choice.reason and "all of op3" in choice.reason
    ir_text = transform_ir(prog.text, script(prog, parse("op2: TF(1,2,2)"), check=False), Stages())
    fused = [ln for ln in ir_text.splitlines() if 'rl.op = "op3@op2"' in ln]
    assert fused and "ins(%" in fused[0] and "tensor<1x16x16xf32>" in fused[0].split("outs(")[0]


def test_argmax_is_not_a_vector_reduction_but_sums_and_matmuls_are():
    att = _load("attention.mlir")
    assert "output 0 is read 2 times" in att.op("op7").unvectorizable_reduction
    assert [o.id for o in att.ops if o.unvectorizable_reduction] == ["op7"]
    for name in ("layernorm_gelu.mlir", "matmul.mlir", "matmul_generic.mlir", "conv2d.mlir"):
        assert not any(o.unvectorizable_reduction for o in _load(name).ops), name


def test_fused_producer_follows_the_consumers_current_extents():
    """op18 (conv) fused into op14's tile of width 1 is 1 wide: its fill, fused into op18's tile, too
    (it was taken for 16 wide, and a TP(.., 2) of it then made a partial tile the vectorizer rejects)."""
    prog = _load("resnet_block.mlir")
    states = check_schedule(prog, parse("op14: TF(1,8,0,1) V; op18: TF(0,8,0,0,0,0,0)"))
    assert states["op19"].extents == [1, 8, 16, 1]
    assert check_schedule(prog, parse(""))["op19"].extents == [1, 16, 16, 16]


# -- script fixes: these schedules failed to transform or compile, now they compile --------------------
FIXED = [
    # TF on a consumer, then TF on its (fused) producer: the producer's producer is fused through the tile
    ("matmul_bias_relu.mlir", "op1: TF(32,16) V; op2: TF(8,4,0)"),
    # three nested fusions
    ("layernorm_gelu.mlir", "op5: TF(2,0) V; op6: TF(2,0); op10: TF(2,0)"),
    # a consumer that reads its producer twice (x * x), also inside another fused tile
    ("layernorm_gelu.mlir", "op13: TF(0,1); op14: TF(1,1)"),
    ("layernorm_gelu.mlir", "op12: TF(4,0); op13: TF(0,1); op14: TF(2,1)"),
    # one producer (the fill) fused into two consumers
    ("resnet_block.mlir", "op9: TF(1,4,0,0,0,0,0); op18: TF(1,4,0,0,0,0,0)"),
    # an interchanged batch matmul: specialize wants the batch loop outermost
    ("attention.mlir", "op0: I(1,2,3,0) V"),
    # a vectorized math.erf (GELU) lowered to LLVM
    ("layernorm_gelu.mlir", "op0: V"),
]


@pytest.mark.parametrize("name,text", FIXED, ids=[f"{n}:{t}" for n, t in FIXED])
def test_fixed_schedule_compiles(engine, name, text):
    prog = _load(name)
    res = engine.compile_only(prog, parse(text))
    assert res.status == "ok", res.error


def test_nested_fusion_computes_the_right_result(engine):
    """A chain fused three deep, tiled and vectorized inside: run and checked against the baseline."""
    prog = _load("matmul_bias_relu.mlir")
    m = engine.validate(prog, parse("op0: TF(64,64) T(1,64) V; op1: TF(32,16) V; op2: TF(8,4,0) T(4,4,2) V; op3: V"))
    assert m.status == "ok" and m.validated, m.error


def test_fused_copies_are_tagged_and_fused_through_each_tile():
    prog = _load("layernorm_gelu.mlir")
    text = script(prog, parse("op5: TF(8,0) V; op6: TF(4,0); op10: TF(2,0)"))
    assert '"op6@op5"' in text and '"op10@op6"' in text and '"op11@op10"' in text
    # op11 is fused into op5's tile, then op6's, then op10's new one
    assert text.count('"op11@op10" -> !transform.any_param') == 3
    assert 'match attributes {rl.op = "op10@op6"}' in text  # op10's own actions apply to its innermost copy
    # op10's TF(4,0) covers its 4x1 tile: no new tile, op11 only follows op10 into op5's and op6's tiles
    text = script(prog, parse("op5: TF(8,0) V; op6: TF(4,0); op10: TF(4,0)"))
    assert text.count("tile_using_forall") == 2 and text.count('"op11@op10" -> !transform.any_param') == 2


def test_a_fusion_whose_sizes_cover_the_tile_computes_the_right_result(engine):
    m = engine.validate(_load("layernorm_gelu.mlir"), parse("op5: TF(2,0) V; op6: TF(2,0) V; op10: TF(2,0) V"))
    assert m.status == "ok" and m.validated, m.error


def test_interchanged_batch_matmul_goes_back_to_its_loop_order_before_specialize():
    prog = _load("attention.mlir")
    text = script(prog, parse("op0: I(1,2,3,0) V"))
    perms = [ln.split("= [")[1].split("]")[0] for ln in text.splitlines() if "iterator_interchange" in ln]
    assert perms == ["1, 2, 3, 0", "3, 0, 1, 2"]
    assert text.index("3, 0, 1, 2") < text.index("specialize")
    # (0, 2, 1, 3) keeps the batch loop outermost: no undo
    assert script(prog, parse("op0: I(0,2,1,3) V")).count("iterator_interchange") == 1


def test_vectorize_choice_of_a_depthwise_nchw_conv_is_masked_whatever_the_tiles():
    prog = _load("mobilenet_block.mlir")
    st = check_schedule(prog, parse("op19: T(1,1,1,2,1,1)"))["op19"]
    c = vectorize_choice(st)
    assert not c.allowed and "depthwise_conv_2d_nchw_chw" in c.reason


# -- results: a legal schedule computes what the program computes ----------------------------------------
#: A 3x3 convolution in the form torch-mlir exports (NCHW input, FCHW filter, padded input), the shape of a
#: ResNet basic block's second convolution: 1x32x28x28 out, 32 channels in.
CONV_NCHW = """
func.func @forward(%x: tensor<1x32x30x30xf32>, %w: tensor<32x32x3x3xf32>) -> tensor<1x32x28x28xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x32x28x28xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x32x28x28xf32>) -> tensor<1x32x28x28xf32>
  %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x32x30x30xf32>, tensor<32x32x3x3xf32>) outs(%1 : tensor<1x32x28x28xf32>) -> tensor<1x32x28x28xf32>
  return %2 : tensor<1x32x28x28xf32>
}
"""

#: TP sizes that cover their loop (n: 1 of 1; f: 4 of the 4 left by T) made scf.forall dimensions of one
#: iteration. Canonicalization folds them to constant offsets, and MLIR 22's slice canonicalizer then re-types
#: the decomposed 1-D convolution's rank-reduced 1x4x1 output tile as 4x1x1: 13048 of 25088 elements wrong.
#: The last two are the shrunk forms (each size alone).
WRONG_BEFORE = [
    "op0: T(1,4,2,0,4,1,0) TP(1,4,1,1,0,0,0) V",
    "op0: T(1,4,2,0,4,1,0) TP(1,0,1,1,0,0,0) V",
    "op0: T(1,4,2,0,4,1,0) TP(0,4,1,1,0,0,0) V",
]


@pytest.fixture(scope="module")
def conv_nchw(tmp_path_factory):
    path = tmp_path_factory.mktemp("conv") / "conv_nchw.mlir"
    path.write_text(CONV_NCHW)
    return load_file(str(path))


@pytest.mark.parametrize("text", WRONG_BEFORE)
def test_covering_parallel_tiles_compute_the_right_result(engine, conv_nchw, text, monkeypatch):
    check_schedule(conv_nchw, parse(text))  # the mask allows every step
    # the result is the point, not the time: its 112 parallel regions may wait on a core the other test
    # process is using, so the run gets 10 s instead of the 1 s floor
    monkeypatch.setattr(engine, "config", dataclasses.replace(engine.config, timeout_floor_s=10.0))
    m = engine.validate(conv_nchw, parse(text))
    assert m.status == "ok" and m.validated, m.error


def test_covering_tile_sizes_are_emitted_as_untiled():
    """No tiling makes a loop of one iteration: a covering size is 0 in the script, for T, TP and TF."""
    from mlir_rl_tui.engine.schedule.notation import to_text
    from mlir_rl_tui.engine.schedule.state import effective

    conv = load_file(str(SAMPLES / "conv2d.mlir"))  # loops [1p 56p 56p 64p 3r 3r 64r]
    s = parse("op0: T(1,2,0,16,1,0,0) TP(1,2,8,16,0,0,0) T(0,1,1,16,0,0,8) V")
    assert to_text(effective(conv, s)) == "op0: T(0,2,0,16,1,0,0) TP(0,0,8,0,0,0,0) T(0,1,1,0,0,0,8) V"
    text = script(conv, s)
    assert "tile_using_forall %tiled3 tile_sizes [0, 0, 8, 0, 0, 0, 0]" in text
    chain = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))  # op0: 256x256
    assert "tile_using_forall %op0_2 tile_sizes [0, 4]" in script(chain, parse("op0: TF(256,4) V"))
    assert "tile_using_forall" not in script(chain, parse("op0: TF(256,256)"))  # tiles nothing: no fusion


#: Two layers of an MLP as torch-mlir writes them: one tensor.empty is the destination of both ReLUs (and of the
#: fill both matmuls start from).
MLP_SHARED_EMPTY = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%x: tensor<32x256xf32>, %w1: tensor<256x512xf32>, %w2: tensor<512x512xf32>) -> tensor<32x512xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x512xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<32x256xf32>, tensor<256x512xf32>) outs(%f : tensor<32x512xf32>) -> tensor<32x512xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1 : tensor<32x512xf32>) outs(%e : tensor<32x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %c0 : f32
    linalg.yield %y : f32
  } -> tensor<32x512xf32>
  %m2 = linalg.matmul ins(%r1, %w2 : tensor<32x512xf32>, tensor<512x512xf32>) outs(%f : tensor<32x512xf32>) -> tensor<32x512xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m2 : tensor<32x512xf32>) outs(%e : tensor<32x512xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = arith.maximumf %a, %c0 : f32
    linalg.yield %y : f32
  } -> tensor<32x512xf32>
  return %r2 : tensor<32x512xf32>
}
"""


@pytest.mark.parametrize("text", ["op0: TF(4,32) V; op1: TF(4,0,0) NT", "op0: TF(4,32) V; op1: TF(4,0,0) T(2,0,2) V"])
def test_a_producer_fused_into_a_tile_does_not_write_into_the_tiles_shared_output(engine, tmp_path, text):
    """op2 (the first ReLU) follows op1 into op0's 4x32 tiles; with the destination it shares with op0 (one
    tensor.empty), fusion made it write its 4x512 rows into the forall's shared output, over the other tiles'
    results: 11592 of 16384 elements wrong. Each use of an empty now has its own (engine.ir.program.untie_empties)."""
    from mlir_rl_tui.engine.run.compile import Stages, transform_ir

    path = tmp_path / "mlp.mlir"
    path.write_text(MLP_SHARED_EMPTY)
    prog = load_file(str(path))
    check_schedule(prog, parse(text))
    m = engine.validate(prog, parse(text))
    assert m.status == "ok" and m.validated, m.error
    assert transform_ir(MLP_SHARED_EMPTY, None, Stages(), "forward").count("tensor.empty()") == 3  # one for each of its 3 uses


#: Two matmuls of the arguments that start from one fill (torch-mlir shares it), summed.
TWO_MATMULS_ONE_FILL = """
func.func @forward(%x: tensor<32x64xf32>, %w1: tensor<64x512xf32>, %w2: tensor<64x512xf32>) -> tensor<32x512xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x512xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<32x64xf32>, tensor<64x512xf32>) outs(%f : tensor<32x512xf32>) -> tensor<32x512xf32>
  %m2 = linalg.matmul ins(%x, %w2 : tensor<32x64xf32>, tensor<64x512xf32>) outs(%f : tensor<32x512xf32>) -> tensor<32x512xf32>
  %r = linalg.add ins(%m1, %m2 : tensor<32x512xf32>, tensor<32x512xf32>) outs(%e : tensor<32x512xf32>) -> tensor<32x512xf32>
  return %r : tensor<32x512xf32>
}
"""


def test_a_fusion_that_makes_no_tile_leaves_the_producers_actions_on_the_producer(engine, tmp_path):
    """op3 (the fill) is fused into op1's tiles first; op2's TF(32,0,0) covers op2 whole: no tile, nothing
    fused, and op3's own actions must apply to op3 as the state describes it (32x512), not to the copy in
    op1's 4x32 tiles (the fuzz's `op19: TF(1,4,1,2,0,0); op29: TF(1,0,0,0,0,0,0); op30: TP(1,8,4,2) V` on an
    inverted residual block: TP(1,8,..) on the copy's 1x4x.. tile, and V failed)."""
    path = tmp_path / "two.mlir"
    path.write_text(TWO_MATMULS_ONE_FILL)
    prog = load_file(str(path))
    text = "op1: TF(4,32,0) T(0,0,8) V; op2: TF(32,0,0) T(4,32,8) V; op3: TP(2,64) V"
    st = check_schedule(prog, parse(text))["op3"]
    assert st.fused_into == "op2" and st.extents == [2, 64]  # after its TP(2,64) of the whole 32x512
    lines = script(prog, parse(text)).splitlines()
    own = lines[next(i for i, ln in enumerate(lines) if ln.strip().startswith("// op3")) + 1]
    assert 'match attributes {rl.op = "op3"} in %root' in own, own
    m = engine.validate(prog, parse(text))
    assert m.status == "ok" and m.validated, m.error


# -- the fuzz itself, on a small seeded sample ---------------------------------------------------------
@pytest.mark.slow
def test_random_masked_episodes_compute_the_right_result(engine, conv_nchw):
    """A short seeded run of benchmarks/mask_fuzz.py: random masked episodes on the programs where 20% of
    them used to fail to compile and on the NCHW convolution, each run and checked against the program."""
    import sys

    from conftest import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from mask_fuzz import WRONG, fuzz, table

    progs = [_load(n) for n in ("matmul_bias_relu.mlir", "resnet_block.mlir", "attention.mlir",
                                "mobilenet_block.mlir")] + [conv_nchw]
    out = fuzz(progs, 10, seed=11, engine=engine)
    bad = [(o.program, o.schedule, o.status, o.error) for o in out if o.status in WRONG]
    assert len(out) == 10 and all(o.measured for o in out) and not bad, bad
    assert "| **all** | 10 |" in table(out)


#: Two matmuls in a row that start from one fill (torch-mlir shares it when the shapes agree).
MATMUL_CHAIN_ONE_FILL = """
func.func @forward(%a: tensor<32x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>) -> tensor<32x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %m2 = linalg.matmul ins(%m1, %c : tensor<32x64xf32>, tensor<64x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %m2 : tensor<32x64xf32>
}
"""


@pytest.mark.parametrize("text,prefix,op,bad", [
    # the consumer itself writes into the fill its producer writes into: 1024 of 2048 elements wrong
    (MATMUL_CHAIN_ONE_FILL, "", "op0", "op0: TF(8,32,0)"),
    # the ReLU was fused into the second matmul's tiles; the first matmul (its producer) writes into the
    # second's fill (the fuzz's MLP block: 8146 of 8192 elements wrong)
    (MLP_SHARED_EMPTY, "op1: TF(2,64,0)", "op2", "op1: TF(2,64,0); op2: TF(1,32)"),
])
def test_tf_of_a_producer_that_writes_into_the_loops_own_fill_is_masked_and_really_wrong(engine, tmp_path, text,
                                                                                          prefix, op, bad):
    path = tmp_path / "p.mlir"
    path.write_text(text)
    prog = load_file(str(path))
    choice = transformation_reasons(check_schedule(prog, parse(prefix))[op], prog)["TF"]
    assert not choice.allowed and "both write into" in choice.reason, choice
    m = engine.validate(prog, parse(bad), check=False)  # without the mask
    assert m.status == "wrong-result", (m.status, m.error)
    untied = text.replace("outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>\n  return",
                          "outs(%f2 : tensor<32x64xf32>) -> tensor<32x64xf32>\n  return").replace(
        "  %m2 = linalg.matmul ins(%m1", "  %f2 = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> "
        "tensor<32x64xf32>\n  %m2 = linalg.matmul ins(%m1")
    if untied != text:  # with a fill of its own, the same fusion is allowed and right
        path.write_text(untied)
        prog = load_file(str(path))
        assert transformation_reasons(check_schedule(prog, parse(prefix))[op], prog)["TF"].allowed
        assert engine.validate(prog, parse(bad)).status == "ok"
