"""engine.ir.extract on real MLIR: an op and its producer taken out of a program keep their workload, read
what they read in the model (large constants as arguments, small ones copied in) and run alone."""

from __future__ import annotations

import textwrap

WEIGHTS = ", ".join(f"{(i % 7) / 8:.3f}" for i in range(3 * 3 * 16 * 32))
PROGRAM = textwrap.dedent("""\
    #id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
    func.func @forward(%x: tensor<1x8x8x16xf32>) -> tensor<1x6x6x32xf32> {
      %w = arith.constant dense<[WEIGHTS]> : tensor<4608xf32>
      %w4 = tensor.expand_shape %w [[0, 1, 2, 3]] output_shape [3, 3, 16, 32] : tensor<4608xf32> into tensor<3x3x16x32xf32>
      %z = arith.constant 0.0 : f32
      %e = tensor.empty() : tensor<1x6x6x32xf32>
      %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
      %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
          ins(%x, %w4 : tensor<1x8x8x16xf32>, tensor<3x3x16x32xf32>) outs(%f : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
      %e2 = tensor.empty() : tensor<1x6x6x32xf32>
      %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
          ins(%c : tensor<1x6x6x32xf32>) outs(%e2 : tensor<1x6x6x32xf32>) {
        ^bb0(%i: f32, %o: f32):
          %y = arith.maximumf %i, %z : f32
          linalg.yield %y : f32
      } -> tensor<1x6x6x32xf32>
      return %r : tensor<1x6x6x32xf32>
    }
    """).replace("WEIGHTS", WEIGHTS)


def test_an_op_taken_out_keeps_its_workload_and_runs_alone(cache_dir):
    from mlir_rl_tui.engine import Engine, load
    from mlir_rl_tui.engine.ir.extract import extract
    from mlir_rl_tui.engine.schedule.notation import parse
    from mlir_rl_tui.engine.tune import workload as wl

    prog = load(PROGRAM)
    names = {op.name: op.id for op in prog.ops}
    conv, fill, relu = names["linalg.conv_2d_nhwc_hwcf"], names["linalg.fill"], names["linalg.generic"]
    assert prog.op(conv).fusion_producer == fill
    keys = wl.of_program(prog)
    alone_conv, alone_relu, missing = extract(prog, [[conv, fill], [relu], ["op9"]])
    # the convolution with its fill: the same workload; it reads the input and the weights (4608 elements:
    # an argument) as arguments, and the fill's scalar is copied in
    assert [op.name for op in alone_conv.ops] == ["linalg.conv_2d_nhwc_hwcf", "linalg.fill"]
    assert keys[conv] in wl.of_program(alone_conv).values()
    assert [a.shape for a in alone_conv.args] == [(1, 8, 8, 16), (3, 3, 16, 32)]
    # the ReLU alone reads the convolution's result as its argument; the 0.0 in its body is copied in
    assert [a.shape for a in alone_relu.args] == [(1, 6, 6, 32)] and "arith.constant 0.0" in alone_relu.text
    assert isinstance(missing, str) and "no op op9" in missing
    m = Engine().measure(alone_conv, parse("op0: TP(1,3,2,32,0,0,0) T(1,1,2,32,1,1,8) V"))
    assert m.ok and m.validated, m.error
