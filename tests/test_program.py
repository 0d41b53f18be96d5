"""Loading: samples and torch-mlir exports, traversal order, loops, producer/consumer links."""

from __future__ import annotations

import pytest
from conftest import SAMPLE_FILES, TORCH_FILES

from mlir_rl_tui.engine import LoadError, load, load_file


@pytest.mark.parametrize("path", SAMPLE_FILES + TORCH_FILES, ids=lambda p: p.parent.name + "/" + p.stem)
def test_every_sample_and_export_loads(path):
    prog = load_file(str(path))
    assert prog.ops, "at least one linalg op"
    assert [o.id for o in prog.ops] == [f"op{i}" for i in range(len(prog.ops))]
    for o in prog.ops:
        assert all(lp.bound > 0 for lp in o.loops)
        assert {lp.iterator for lp in o.loops} <= {"parallel", "reduction"}
        for p in o.producers:
            assert o.id in prog.op(p).consumers


def test_matmul_loops_and_traversal(matmul):
    mm, fill = matmul.ops
    assert mm.name == "linalg.matmul" and fill.name == "linalg.fill"  # last consumer first
    assert [(lp.bound, lp.iterator) for lp in mm.loops] == [(256, "parallel"), (256, "parallel"), (256, "reduction")]
    assert mm.fusion_producer == "op1" and fill.consumers == ["op0"]
    assert mm.access[0] == [[1, 0, 0], [0, 0, 1]]  # A[i, k]
    assert mm.access[1] == [[0, 0, 1], [0, 1, 0]]  # B[k, j]
    assert mm.arith["mul"] == 1 and mm.arith["add"] == 1
    assert mm.flops == 2 * 256**3


def test_chain_picks_last_producer():
    from conftest import SAMPLES

    prog = load_file(str(SAMPLES / "matmul_bias_relu.mlir"))
    names = [o.name for o in prog.ops]
    assert names[-1] == "linalg.fill" and "linalg.matmul" in names
    relu = prog.ops[0]
    assert relu.fusion_producer == "op1"


def test_convolution_knows_its_decomposition_loops():
    from conftest import SAMPLES

    conv = load_file(str(SAMPLES / "conv2d.mlir")).ops[0]
    assert conv.op_type == "conv_2d"
    assert conv.decompose_dims == (1, 4)  # output height, kernel height
    assert [lp.iterator for lp in conv.loops] == ["parallel"] * 4 + ["reduction"] * 3


BAD = {
    "garbage": ("this is not MLIR at all {", "not valid MLIR"),
    "dynamic": ("func.func @f(%a: tensor<?x4xf32>) -> tensor<?x4xf32> { return %a : tensor<?x4xf32> }", "dynamic shape"),
    "no_linalg": ("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }", "no linalg op"),
    "empty": ("", "empty file"),
    "huge": ("""func.func @f(%a: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %e = tensor.empty() : tensor<100000x100000xf32>
  %r = linalg.add ins(%a, %a : tensor<100000x100000xf32>, tensor<100000x100000xf32>) outs(%e : tensor<100000x100000xf32>) -> tensor<100000x100000xf32>
  return %r : tensor<100000x100000xf32>
}""", "GiB"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_load_error(case):
    text, words = BAD[case]
    with pytest.raises(LoadError) as e:
        load(text, name="x.mlir")
    msg = str(e.value)
    assert words in msg and "\n" not in msg and msg.startswith("x.mlir")


def test_truncated_file_names_the_line(tmp_path):
    from conftest import SAMPLES

    text = (SAMPLES / "matmul.mlir").read_text()
    p = tmp_path / "cut.mlir"
    p.write_text(text[: len(text) // 2])
    with pytest.raises(LoadError, match=r"line \d+"):
        load_file(str(p))
