"""Imitation targets (agent.expert): the rules, their side-by-side check, on real MLIR and real timings."""

from __future__ import annotations

from mlir_rl_tui.engine import load_file, to_text


def test_confirmed_times_the_candidates_again_side_by_side_and_ranks_them_by_fastest_run(engine, matmul):
    """expert.confirmed: fresh measurements (the engine counts each as
    made), `rounds` runs each (more while a schedule's runs are split), the best figure first."""
    from mlir_rl_tui.agent.expert import confirmed
    from mlir_rl_tui.engine import Schedule, parse

    tiled = parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V")
    engine.measure(matmul, tiled)  # in the cache now: confirmed does not take it from there
    made = engine.evaluated
    ranked = confirmed(engine, matmul, [Schedule({}), tiled], rounds=2)
    assert [to_text(s) for s, _, _ in ranked] == [to_text(tiled), ""]
    # two rounds, and up to 2 x 2 + 1 while one's runs are split (engine.measure.remeasure): the same count for each
    done = {len(runs) for _, _, runs in ranked}
    assert len(done) == 1 and 2 <= done.pop() <= 5
    assert engine.evaluated - made == sum(len(runs) for _, _, runs in ranked)  # none from the cache
    (_, fast, fast_runs), (_, base, base_runs) = ranked
    assert fast > 10 and 0.5 < base < 2 and min(fast_runs) <= fast <= max(fast_runs)


def test_rule_variant_fuses_fills_and_gives_2d_elementwise_ops_row_tiles(engine):
    """expert.rule_variant: TP -> TF only where the producer is the output's fill,
    T/TP on a 2-D elementwise op -> row tiles of the same kind, TP on a small op -> T, every other op as it
    was, each rule only when asked for; the variant is a
    legal schedule that compiles, runs and validates on real MLIR; a schedule no rule touches is returned
    as it is."""
    from conftest import SAMPLES, TORCH

    from mlir_rl_tui.agent.expert import rule_variant
    from mlir_rl_tui.engine import Session, parse

    prog = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))  # op0 relu, op1 add, op2 matmul, op3 its fill
    sched = parse("op0: T(16,32) T(8,32) V; op1: TP(32,32) T(8,32) V; op2: TP(32,32,0) T(8,32,1) V; "
                  "op3: T(4,0) V")
    variant, rules = rule_variant(prog, sched)
    assert rules == ["op0: rows", "op1: rows", "op2: TF"]
    assert to_text(variant) == ("op0: T(1,64) T(1,8) V; op1: TP(1,64) T(1,8) V; op2: TF(32,32,0) T(8,32,1) V; "
                                "op3: T(4,0) V")
    Session(prog, variant)  # legal (raises otherwise)
    m = engine.measure(prog, variant)
    assert m.ok and m.validated

    seq = load_file(str(SAMPLES / "sequence5.mlir"))  # a matmul tiled serially (T): no rule
    kept = parse("op0: NT; op1: T(32,32,0) T(8,32,1) V; op2: T(4,0) V; op3: NT; op4: NT; op5: NT; op6: NT")
    assert rule_variant(seq, kept, ("TF", "rows", "serial")) == (kept, [])
    block = load_file(str(TORCH / "mobilenet_block.mlir"))  # op0: a 4-D elementwise op, its producer another
    four_d = parse("op0: TP(1,1,1,16) T(1,1,1,8) V")
    assert rule_variant(block, four_d, ("TF", "rows")) == (four_d, [])
    serial, rules = rule_variant(block, four_d, ("serial",))  # 1x8x16x16: 2,048 iterations < SERIAL_BELOW
    assert rules == ["op0: serial"] and to_text(serial).startswith("op0: T(1,1,1,16) T(1,1,1,8) V; op1: NT")

    conv = load_file(str(SAMPLES / "conv2d.mlir"))  # the fused fill keeps its T, sizes covering the tile -> 0
    variant, rules = rule_variant(conv, parse("op0: TP(1,8,8,32,0,0,0) T(1,1,8,16,1,1,1) V; op1: T(1,4,8,64) V"))
    assert rules == ["op0: TF"] and to_text(variant).endswith("op1: T(0,4,0,0) V")


_ELEMENTWISE_4D = """func.func @forward(%arg0: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{
  %one = arith.constant 1.000000e+00 : f32
  %e = tensor.empty() : tensor<{shape}xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
      affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins(%arg0 : tensor<{shape}xf32>) outs(%e : tensor<{shape}xf32>) {{
  ^bb0(%x: f32, %o: f32):
{body}
  }} -> tensor<{shape}xf32>
  return %r : tensor<{shape}xf32>
}}
"""
_SIGMOID = """    %a = arith.negf %x : f32
    %b = math.exp %a : f32
    %c = arith.addf %b, %one : f32
    %y = arith.divf %one, %c : f32
    linalg.yield %y : f32"""
_RELU = """    %z = arith.constant 0.000000e+00 : f32
    %y = arith.maximumf %x, %z : f32
    linalg.yield %y : f32"""


_NCHW = """func.func @forward(%x: tensor<1x{c}x{h}x{h}xf32>, %w: tensor<{wshape}xf32>) -> tensor<1x{c}x{o}x{o}xf32> {{
  %zero = arith.constant {init} : f32
  %e = tensor.empty() : tensor<1x{c}x{o}x{o}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x{c}x{o}x{o}xf32>) -> tensor<1x{c}x{o}x{o}xf32>
  %r = linalg.{op} {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
      ins(%x, %w : tensor<1x{c}x{h}x{h}xf32>, tensor<{wshape}xf32>) outs(%f : tensor<1x{c}x{o}x{o}xf32>)
      -> tensor<1x{c}x{o}x{o}xf32>
  return %r : tensor<1x{c}x{o}x{o}xf32>
}}
"""


def test_rule_variant_gives_nchw_depthwise_convolutions_and_poolings_one_pattern(engine, tmp_path):
    """expert.rule_variant's "depthwise" and "pool" rules: an NCHW
    depthwise convolution gets one output pixel and up to 32 channels per tile (TP from SERIAL_BELOW
    iterations, T below), 8 channels per register tile, no V; an NCHW pooling whose output rows are
    at least POOL_MIN_ROW wide gets a register tile of one output row and V, with an outer TF of one channel from
    SERIAL_BELOW iterations; a pooling of narrower rows is left alone. Each variant runs and validates."""
    from conftest import TORCH

    from mlir_rl_tui.agent.expert import rule_variant
    from mlir_rl_tui.engine import parse

    def program(name: str, op: str, c: int, h: int, k: int, wshape: str, init: str = "0.000000e+00"):
        path = tmp_path / f"{name}.mlir"
        path.write_text(_NCHW.format(op=op, c=c, h=h, o=h - k + 1, wshape=wshape, init=init))
        return load_file(str(path))

    dw = program("dw", "depthwise_conv_2d_nchw_chw", 64, 10, 3, "64x3x3")  # 64x8x8x9: 36,864 iterations
    variant, rules = rule_variant(dw, parse("op0: T(1,4,4,16,1,1) NT; op1: NT"), ("depthwise", "pool"))
    assert rules == ["op0: depthwise"]
    assert to_text(variant) == "op0: TP(1,1,1,32,0,0) T(1,1,1,8,1,1) NT; op1: NT"
    assert engine.measure(dw, variant).validated
    block = load_file(str(TORCH / "mobilenet_block.mlir"))  # op19: 32 channels, 16x16: all channels per tile
    variant, rules = rule_variant(block, parse("op19: T(1,16,4,32,1,1) T(0,0,1,0,0,1) NT"), ("depthwise",))
    assert rules == ["op19: depthwise"] and "op19: TP(1,1,1,0,0,0) T(1,1,1,8,1,1) NT" in to_text(variant)
    assert rule_variant(block, variant, ("depthwise",)) == (variant, [])  # already the pattern: nothing to time

    big = program("pool", "pooling_nchw_max", 16, 34, 3, "3x3", "-3.40282347E+38")  # 16x32x32x9 iterations
    variant, rules = rule_variant(big, parse("op0: T(1,16,1,8,1,1) V; op1: V"), ("pool",))
    assert rules == ["op0: pool"] and to_text(variant) == "op0: TF(1,1,0,0,0,0) T(1,1,1,32,1,0) V; op1: V"
    assert engine.measure(big, variant).validated
    pool = load_file(str(TORCH / "maxpool.mlir"))  # 1x8x8x8 out, 2x2 window: 2,048 iterations, serial
    variant, rules = rule_variant(pool, parse("op0: T(1,8,1,8,1,2) T(0,0,1,0,1,0) V; op1: V"), ("pool",))
    assert rules == ["op0: pool"] and to_text(variant) == "op0: T(1,1,1,8,1,0) V; op1: V"
    assert engine.measure(pool, variant).validated
    odd = program("odd", "pooling_nchw_max", 8, 14, 3, "3x3", "-3.40282347E+38")  # rows of 12: whole
    variant, rules = rule_variant(odd, parse("op0: T(1,8,1,4,1,1) V; op1: V"), ("depthwise", "pool"))
    assert rules == ["op0: pool"] and to_text(variant) == "op0: T(1,1,1,0,1,0) V; op1: NT"
    assert engine.measure(odd, variant).validated
    narrow = program("narrow", "pooling_nchw_max", 8, 5, 3, "3x3", "-3.40282347E+38")  # rows of 3 < POOL_MIN_ROW
    kept = parse("op0: T(1,8,1,1,1,1) V; op1: V")
    assert rule_variant(narrow, kept, ("depthwise", "pool")) == (kept, [])


def test_rule_variant_gives_nchw_convolutions_one_row_pattern(engine, tmp_path):
    """expert.rule_variant's "conv" rule: an NCHW conv_2d gets an outer tile of
    up to 16 filters and one output row, fused with the fill of its output where it can be (TF), then a
    register tile of that row (whole up to 32 columns, else the largest divisor the mask allows) with the
    reductions as scalar loops, and V; a conv already in the pattern has nothing to time, and 1x1 convolutions
    and rows under 8 are left alone. Each variant runs and validates (the ResNet block's against PyTorch)."""
    from conftest import TORCH

    from mlir_rl_tui.agent.expert import rule_variant
    from mlir_rl_tui.engine import parse

    def program(name: str, c: int, h: int, k: int = 3):
        path = tmp_path / f"{name}.mlir"
        path.write_text(_NCHW.format(op="conv_2d_nchw_fchw", c=c, h=h, o=h - k + 1, wshape=f"{c}x{c}x{k}x{k}",
                                     init="0.000000e+00"))
        return load_file(str(path))

    small = program("conv14", 8, 16)  # 8 filters, rows of 14: whole rows
    variant, rules = rule_variant(small, parse("op0: T(1,8,1,2,8,1,1) T(0,0,1,0,0,1,0) V; op1: V"), ("conv",))
    assert rules == ["op0: conv"]
    assert to_text(variant) == "op0: TF(1,8,1,0,0,0,0) T(1,1,1,0,1,1,1) V; op1: V"
    assert engine.measure(small, variant).validated
    assert rule_variant(small, variant, ("conv",)) == (variant, [])  # already the pattern: nothing to time
    wide = program("conv48", 32, 50)  # 32 filters, rows of 48: 16 columns (the largest divisor up to 32)
    variant, rules = rule_variant(wide, parse("op0: NT; op1: NT"), ("conv",))
    assert rules == ["op0: conv"] and to_text(variant).startswith("op0: TF(1,16,1,16,0,0,0) T(1,1,1,16,1,1,1) V")
    assert engine.measure(wide, variant).validated
    kept = parse("op0: TF(1,8,4,4,0,0,0) T(0,0,1,0,0,1,0) V; op1: V")
    assert rule_variant(program("pointwise", 8, 14, 1), kept, ("conv",)) == (kept, [])  # 1x1: a matmul
    assert rule_variant(program("narrow", 8, 8), kept, ("conv",)) == (kept, [])  # rows of 6
    block = load_file(str(TORCH / "resnet_block.mlir"))  # op9, op18: 16 filters, 16x16
    variant, rules = rule_variant(block, parse("op9: T(1,16,1,16,16,1,1) V; op18: T(1,16,1,16,16,1,1) V"),
                                  ("conv",))
    assert rules == ["op18: conv", "op9: conv"] or rules == ["op9: conv", "op18: conv"]
    assert "op9: TF(1,16,1,0,0,0,0) T(1,1,1,0,1,1,1) V" in to_text(variant)
    assert engine.measure(block, variant).validated


def test_checked_by_rules_checks_only_the_groups_it_is_given(engine, matmul):
    """checked_by_rules with the recipe's groups leaves an NT target and the baseline alone (no rule applies:
    nothing timed); a group not given is not applied (the TF variant of a TP matmul, with only "serial")."""
    from conftest import SAMPLES

    from mlir_rl_tui.agent.expert import checked_by_rules
    from mlir_rl_tui.engine import Schedule, parse

    relu = load_file(str(SAMPLES / "relu.mlir"))
    nt, baseline = parse("op0: NT"), Schedule({})  # the recipe's target where the search kept the baseline
    made = engine.evaluated
    assert checked_by_rules(engine, relu, nt, 1.0, 0.97, rounds=1) == (nt, 1.0, 0, "")
    assert checked_by_rules(engine, relu, baseline, 1.0, 0.97, rounds=1) == (baseline, 1.0, 0, "")
    target = parse("op0: TP(16,32,0) T(8,32,1) V; op1: T(4,0) V")
    assert checked_by_rules(engine, matmul, target, 50.0, 0.0, rounds=1, groups=(("serial",),)) == (target, 50.0, 0, "")
    assert engine.evaluated == made


def test_checked_by_rules_takes_a_rule_variant_by_its_fresh_timing_beside_the_target(engine, matmul):
    """expert.checked_by_rules: the TF variant of a TP matmul and the target are
    timed again side by side (2 x rounds fresh measurements); taken at F = 0, kept at an F no variant
    reaches; a target no rule touches costs nothing."""
    from mlir_rl_tui.agent.expert import checked_by_rules
    from mlir_rl_tui.engine import Schedule, parse

    target = parse("op0: TP(16,32,0) T(8,32,1) V; op1: T(4,0) V")
    engine.measure(matmul, Schedule({}))  # the baseline in the cache first: alone, this test would count it
    made = engine.evaluated
    sched, sp, n, why = checked_by_rules(engine, matmul, target, 50.0, 0.0, rounds=1)
    assert n == 2 and engine.evaluated - made == 2
    assert to_text(sched).startswith("op0: TF(16,32,0) T(8,32,1) V") and sp > 10 and "op0: TF" in why
    assert why.endswith("taken")
    sched, sp, n, why = checked_by_rules(engine, matmul, target, 50.0, 1000.0, rounds=1)
    assert (sched, sp, n) == (target, 50.0, 2) and why.endswith("kept")
    fused = parse("op0: TF(16,32,0) T(8,32,1) V; op1: V")
    assert checked_by_rules(engine, matmul, fused, 50.0, 0.0, rounds=1) == (fused, 50.0, 0, "")
