"""The imitation teacher (agent.teacher): recipes build legal schedules, and the search measures for real."""

from __future__ import annotations

import pytest
from conftest import SAMPLE_FILES

from mlir_rl_tui.engine import load_file, to_text
from mlir_rl_tui.engine.search.base import Evaluator


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.stem)
def test_every_recipe_builds_a_legal_schedule_on_every_sample(path, engine):
    from mlir_rl_tui.agent.teacher import NT, moves, schedule_from, starts

    prog = load_file(str(path))
    ev = Evaluator(engine, prog, 1, "recipe")
    ops = [o.id for o in prog.ops]
    recipes = starts(["T", "TP", "TF"], major=True)
    recipes += [m for r in recipes for m in moves(r, ["T", "TP", "TF"])]
    texts = set()
    for rec in recipes:
        sched = schedule_from(ev, {op: rec for op in ops})  # raises ScheduleError if an action were illegal
        assert set(sched.ops) == set(ops)  # every op is finished (V or NT)
        texts.add(to_text(sched))
    assert to_text(schedule_from(ev, {op: NT for op in ops})) == to_text(schedule_from(ev, {}))
    assert len(texts) > 3  # the recipes really differ on every sample


def test_recipe_search_on_matmul_beats_the_baseline_within_budget(engine, matmul):
    from mlir_rl_tui.agent.teacher import recipe_search

    sched, speedup, recipes, res = recipe_search(engine, matmul, budget=6)
    assert res.evaluated + res.cache_hits >= 1 and res.evaluated <= 6
    m = engine.measure(matmul, sched)
    assert m.ok and m.validated
    # matmul is compute bound: the first recipe (parallel outer tiles, register tile, V) is far faster
    assert speedup > 3.0 and m.speedup > 3.0
    assert recipes and all(r.vec or r.kind for r in recipes.values())
    assert "V" in to_text(sched)


def test_runners_up_within_the_ratio_are_imitated_with_advantage_weights(tmp_path, matmul):
    """expert.demonstrations reads the search's other measurements of the program from the cache: only ok
    ones within the ratio, fastest first, weighted exp(log(speedup/best)/T); cloning follows the weights."""
    import math
    from types import SimpleNamespace

    from mlir_rl_tui.agent.bc import behaviour_cloning, examples_from_schedule
    from mlir_rl_tui.agent.expert import demonstrations
    from mlir_rl_tui.agent.policy import ActorCritic
    from mlir_rl_tui.agent.suggest import Policy
    from mlir_rl_tui.engine import Session, parse
    from mlir_rl_tui.engine.cache import Cache

    best, near, slow, failed, other = (
        "op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V", "op0: T(32,32,0) T(8,32,1) V; op1: T(4,0) V",
        "op0: T(64,64,0) V; op1: V", "op0: TF(32,32,0) V; op1: NT", "op0: T(8,8,0) V; op1: V")
    cache = Cache(str(tmp_path / "c.sqlite"))
    rows = [(best, "ok", 80.0), (near, "ok", 76.0), (slow, "ok", 50.0), (failed, "wrong-result", 95.0)]
    for text, status, sp in rows:
        cache.put(matmul.sha256, text, "here", {"status": status, "speedup": sp})
    cache.put(matmul.sha256, other, "elsewhere", {"status": "ok", "speedup": 79.0})  # another machine's row
    eng = SimpleNamespace(cache=cache, machine="here")
    demos = demonstrations(eng, matmul, parse(best), 80.0, k=4, ratio=0.9, temperature=0.05)
    assert [(str(s), sp) for s, sp, _ in demos] == [(best, 80.0), (near, 76.0)]
    assert demos[0][2] == 1.0 and math.isclose(demos[1][2], math.exp(math.log(0.95) / 0.05))
    assert [str(s) for s, _, _ in demonstrations(eng, matmul, parse(best), 80.0, k=1)] == [best]

    def first_kind(w_best: float, w_near: float) -> str:
        model = ActorCritic()
        ex = examples_from_schedule(matmul, parse(best), weight=w_best) + \
            examples_from_schedule(matmul, parse(near), weight=w_near)
        behaviour_cloning(model, ex, epochs=40, seed=0)
        return Policy(model).decide(Session(matmul)).kind

    assert first_kind(1.0, 0.01) == "TP" and first_kind(0.01, 1.0) == "T"


def test_choose_by_imitates_the_near_best_schedule_a_cloned_policy_finds_most_likely(tmp_path, matmul):
    """recipes.consistent_targets: per program one demonstration, the one the given policy predicts best
    (mean log-probability per decision), weight 1; it counts the programs that left the search's best."""
    from mlir_rl_tui.agent.bc import behaviour_cloning, examples_from_schedule, mean_log_likelihood
    from mlir_rl_tui.agent.policy import ActorCritic, save
    from mlir_rl_tui.agent.recipes import consistent_targets
    from mlir_rl_tui.engine import parse

    best, near = "op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V", "op0: T(32,32,0) T(8,32,1) V; op1: T(4,0) V"
    demos = [[(parse(best), 80.0, 1.0), (parse(near), 76.0, 0.36)]]
    for taught, expect_changed in ((near, 1), (best, 0)):
        model = ActorCritic()
        behaviour_cloning(model, examples_from_schedule(matmul, parse(taught)), epochs=30, seed=0)
        path = str(tmp_path / "p.pt")
        save(model, path, half=False)
        lls = {t: mean_log_likelihood(model, examples_from_schedule(matmul, parse(t))) for t in (best, near)}
        assert lls[taught] > lls[best if taught == near else near]
        chosen, changed = consistent_targets([matmul], demos, path)
        assert [(str(s), sp, w) for s, sp, w in chosen[0]] == [(taught, 80.0 if taught == best else 76.0, 1.0)]
        assert changed == expect_changed


def test_confirmed_times_the_candidates_again_side_by_side_and_ranks_them_by_fastest_run(engine, matmul):
    """expert.confirmed (train --recipe default --confirm K): fresh measurements (the engine counts each as
    made), `rounds` runs each (more while a schedule's runs are split), the best figure first."""
    from mlir_rl_tui.agent.expert import confirmed
    from mlir_rl_tui.engine import Schedule, parse

    tiled = parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V")
    engine.measure(matmul, tiled)  # in the cache now: confirmed does not take it from there
    made = engine.evaluated
    ranked = confirmed(engine, matmul, [Schedule({}), tiled], rounds=2)
    assert [to_text(s) for s, _, _ in ranked] == [to_text(tiled), ""]
    # two rounds, and up to 2 x 2 + 1 while one's runs are split (agent.remeasure): the same count for each
    done = {len(runs) for _, _, runs in ranked}
    assert len(done) == 1 and 2 <= done.pop() <= 5
    assert engine.evaluated - made == sum(len(runs) for _, _, runs in ranked)  # none from the cache
    (_, fast, fast_runs), (_, base, base_runs) = ranked
    assert fast > 10 and 0.5 < base < 2 and min(fast_runs) <= fast <= max(fast_runs)


def test_rule_variant_fuses_fills_and_gives_2d_elementwise_ops_row_tiles(engine):
    """expert.rule_variant (train --prefer-rules): TP -> TF only where the producer is the output's fill,
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
    assert rule_variant(seq, kept, ("TF", "rows", "serial", "tiny")) == (kept, [])  # NT ops: "vector"'s
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


def test_rule_variant_vectorizes_large_elementwise_ops_and_serializes_tiny_fused_ones(engine, tmp_path):
    """expert.rule_variant's "vector" and "tiny" rules (train --rule-groups): an elementwise op of >=
    VECTOR_FROM iterations left without V gets rows and V (4-D: tiles of 1 outside), parallel (TP) from
    SERIAL_BELOW iterations, a smaller one is left alone; a fused (TF) op under TINY_BELOW iterations
    runs serially. Each variant compiles, runs and validates on real MLIR."""
    from conftest import SAMPLES, TORCH

    from mlir_rl_tui.agent.expert import rule_variant
    from mlir_rl_tui.engine import parse

    relu = load_file(str(SAMPLES / "relu.mlir"))  # 512x1024
    variant, rules = rule_variant(relu, parse("op0: NT"))
    assert rules == ["op0: vector"] and to_text(variant) == "op0: TP(1,64) T(1,8) V"
    assert rule_variant(relu, parse("op0: NT"), ("TF", "rows", "serial", "tiny"))[1] == []
    assert engine.measure(relu, variant).validated

    def program(name: str, shape: str, body: str):
        path = tmp_path / f"{name}.mlir"
        path.write_text(_ELEMENTWISE_4D.format(shape=shape, body=body))
        return load_file(str(path))

    big = program("relu", "1x32x32x32", _RELU)  # 32,768 iterations
    variant, rules = rule_variant(big, parse("op0: T(1,1,2,32) NT"))
    assert rules == ["op0: vector"] and to_text(variant) == "op0: TP(1,1,1,32) T(1,1,1,8) V"
    assert engine.measure(big, variant).validated
    sigmoid = program("sigmoid", "1x16x16x32", _SIGMOID)  # 8,192 iterations: rows and V, serial
    variant, rules = rule_variant(sigmoid, parse("op0: NT"))
    assert rules == ["op0: vector"] and to_text(variant) == "op0: T(1,1,1,32) T(1,1,1,8) V"
    assert engine.measure(sigmoid, variant).validated
    small = program("small_relu", "1x4x16x32", _RELU)  # 2,048 < VECTOR_FROM: left as it is
    assert rule_variant(small, parse("op0: NT")) == (parse("op0: NT"), [])

    pool = load_file(str(TORCH / "maxpool.mlir"))  # 1x8x8x8 out, 2x2 window: 2,048 iterations
    fused = parse("op0: TF(1,1,1,8,0,0) T(1,1,1,8,1,1) V; op1: V")
    variant, rules = rule_variant(pool, fused, ("tiny",))
    assert rules == ["op0: tiny"] and to_text(variant) == "op0: T(1,1,1,8,0,0) T(1,1,1,8,1,1) V; op1: V"
    assert rule_variant(pool, fused, ("serial",)) == (fused, [])
    assert engine.measure(pool, variant).validated


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
    """expert.rule_variant's "depthwise" and "pool" rules (train --rule-groups depthwise pool): an NCHW
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
    """expert.rule_variant's "conv" rule (train --rule-groups conv): an NCHW conv_2d gets an outer tile of
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


def test_rule_variant_gives_small_2d_elementwise_ops_one_register_block(engine):
    """expert.rule_variant's "block" rule (train --rule-groups block): a 2-D elementwise op at least 64 wide
    of fewer than TINY_BELOW iterations tiled with T or TP gets one serial register tile of 16 x 32 and V
    (the layer norm's 16x64 ops), in place of rows; a large one and a narrow one are left alone. The variant
    runs and validates."""
    from conftest import SAMPLES, TORCH

    from mlir_rl_tui.agent.expert import rule_variant
    from mlir_rl_tui.engine import parse

    ln = load_file(str(TORCH / "layernorm_gelu.mlir"))  # 16x64 elementwise ops (1,024 iterations), 16x1 ones
    rows = parse("op0: TP(1,64) T(1,8) V; op5: T(8,1) V")
    variant, rules = rule_variant(ln, rows, ("block",))
    assert rules == ["op0: block"] and to_text(variant).startswith("op0: T(16,32) V;")
    assert "op5: T(8,1) V" in to_text(variant)  # 16x1: not 2-D wide enough
    assert rule_variant(ln, variant, ("block",)) == (variant, [])  # already the pattern: nothing to time
    assert engine.measure(ln, variant).validated
    relu = load_file(str(SAMPLES / "relu.mlir"))  # 512x1024: rows stay
    kept = parse("op0: TP(1,64) T(1,8) V")
    assert rule_variant(relu, kept, ("block",)) == (kept, [])


def test_checked_by_rules_checks_the_groups_it_is_given(engine):
    """train --rule-groups: expert.rule_groups reads `TF+rows serial` (the shipped groups) and names an
    unknown rule; checked_by_rules with the shipped groups leaves an NT target and the baseline alone, with
    `vector` times the baseline's rows variant beside it (2 fresh measurements at 1 round) and takes it."""
    from conftest import SAMPLES

    from mlir_rl_tui.agent.expert import RULE_GROUPS, checked_by_rules, rule_groups
    from mlir_rl_tui.engine import Schedule, parse

    assert rule_groups(["TF+rows", "serial"]) == RULE_GROUPS
    with pytest.raises(ValueError, match="unknown rule 'sereal'"):
        rule_groups(["TF+rows", "sereal"])
    relu = load_file(str(SAMPLES / "relu.mlir"))
    nt, baseline = parse("op0: NT"), Schedule({})  # the recipe's target where the search kept the baseline
    assert checked_by_rules(engine, relu, nt, 1.0, 0.97, rounds=1) == (nt, 1.0, 0, "")
    assert checked_by_rules(engine, relu, baseline, 1.0, 0.97, rounds=1) == (baseline, 1.0, 0, "")
    engine.measure(relu, baseline)  # the untransformed program's own timing, whichever tests ran before
    made = engine.evaluated
    sched, sp, n, why = checked_by_rules(engine, relu, baseline, 1.0, 0.0, rounds=1,
                                         groups=rule_groups(["vector"]))
    assert to_text(sched) == "op0: TP(1,64) T(1,8) V" and n == 2 and engine.evaluated - made == 2
    assert "op0: vector" in why and why.endswith("taken") and sp > 0


def test_checked_by_rules_takes_a_rule_variant_by_its_fresh_timing_beside_the_target(engine, matmul):
    """expert.checked_by_rules (train --prefer-rules F): the TF variant of a TP matmul and the target are
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


def test_improved_by_search_climbs_from_the_policy_schedule_and_keeps_the_faster(engine, matmul):
    """expert.improved_by_search (train --start-from POLICY): hill climbing from the policy's schedule, then
    its best and the target timed side by side; a slow target is replaced, a target the climb cannot
    reach within the threshold is kept."""
    from mlir_rl_tui.agent.expert import improved_by_search
    from mlir_rl_tui.engine import Schedule, parse

    engine.measure(matmul, Schedule({}))
    slow = parse("op0: T(1,1,1) NT; op1: NT")  # scalar loops: far slower than a register tile
    start = parse("op0: TP(32,32,0) T(8,32,1) V; op1: T(4,0) V")
    sched, sp, n, why = improved_by_search(engine, matmul, slow, 1.0, start, 2, 0, 0.97, rounds=1)
    assert to_text(sched) != to_text(slow) and sp > 5 and why.endswith("taken") and n >= 2
    kept, sp2, _, why2 = improved_by_search(engine, matmul, start, 60.0, slow, 1, 0, 1000.0, rounds=1)
    assert to_text(kept) == to_text(start) and why2.endswith("kept")
