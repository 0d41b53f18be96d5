"""engine.rewrite.graph: the graph-level rewrites `import` applies (constant folding, NHWC, pads in place, fusion)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import ROOT, cli

from mlir_rl_tui.engine.rewrite.graph import _Func as Func
from mlir_rl_tui.engine.rewrite.graph import fold_constants, graph_passes, pads_to_inserts, rewrite_text, to_nhwc


def _blob(a: np.ndarray) -> str:
    return (b"\x04\x00\x00\x00" + a.astype(np.float32).tobytes()).hex().upper()


W = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5 - 2.0

TRANSPOSED_WEIGHT = f"""module {{
  func.func @forward(%arg0: tensor<4x2xf32>) -> tensor<4x3xf32> {{
    %cst = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant dense_resource<w> : tensor<3x2xf32>
    %0 = tensor.empty() : tensor<2x3xf32>
    %transposed = linalg.transpose ins(%cst_1 : tensor<3x2xf32>) outs(%0 : tensor<2x3xf32>) permutation = [1, 0]
    %1 = tensor.empty() : tensor<4x3xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x3xf32>) -> tensor<4x3xf32>
    %3 = linalg.matmul ins(%arg0, %transposed : tensor<4x2xf32>, tensor<2x3xf32>) outs(%2 : tensor<4x3xf32>) -> tensor<4x3xf32>
    return %3 : tensor<4x3xf32>
  }}
}}

{{-#
  dialect_resources: {{
    builtin: {{
      w: "0x{_blob(W.T)}"
    }}
  }}
#-}}
"""


def test_a_constant_weight_transpose_is_computed_once():
    f = Func(TRANSPOSED_WEIGHT)
    assert fold_constants(f) == 1
    text = f.text()
    assert "linalg.transpose" not in text
    m = re.search(r"%transposed = arith\.constant dense_resource<([\w.]+)> : tensor<2x3xf32>", text)
    assert m, text
    blob = re.search(rf'{re.escape(m.group(1))}: "0x([0-9A-F]+)"', text).group(1)
    data = np.frombuffer(bytes.fromhex(blob)[4:], np.float32).reshape(2, 3)
    assert np.array_equal(data, W)  # the transpose of the stored (3x2) weight


CONV = """module {
  func.func @forward(%arg0: tensor<1x4x6x6xf32>) -> tensor<1x8x6x6xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<8x4x3x3xf32>
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<1x4x6x6xf32> to tensor<1x4x8x8xf32>
    %0 = tensor.empty() : tensor<1x8x6x6xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_1 : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%1 : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
    return %2 : tensor<1x8x6x6xf32>
  }
}
"""


def test_an_nchw_convolution_becomes_nhwc_with_the_padding_moved():
    f = Func(CONV)
    assert to_nhwc(f) == 1
    text = f.text()
    assert "linalg.conv_2d_nhwc_hwcf" in text and "conv_2d_nchw_fchw" not in text
    assert "low[0, 1, 1, 0] high[0, 1, 1, 0]" in text  # the pad on the NHWC side
    assert "permutation = [2, 3, 1, 0]" in text  # the filter to HWCF
    assert "tensor<1x6x6x8xf32>" in text and "permutation = [0, 3, 1, 2]" in text  # result back to NCHW


def test_a_pooling_alone_stays_nchw():
    pool = CONV.replace("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max")
    assert to_nhwc(Func(pool)) == 0


def test_a_pad_becomes_a_fill_and_an_insert():
    f = Func(CONV)
    assert pads_to_inserts(f) == 1
    text = f.text()
    assert "tensor.pad" not in text
    assert re.search(r"%padded = tensor\.insert_slice %arg0 into %\S+\[0, 0, 1, 1\] \[1, 4, 6, 6\] \[1, 1, 1, 1\]", text)


def test_unrecognized_text_is_left_alone():
    text = "module {\n  func.func @f() {\n    return\n  }\n}\n"
    assert rewrite_text(text).text == text


def test_the_whole_rewrite_parses_and_fuses_on_real_mlir():
    res = graph_passes(CONV)
    assert res["counts"]["nhwc"] == 1 and res["counts"]["pad"] == 1
    assert "linalg.conv_2d_nhwc_hwcf" in res["text"] and "linalg.transpose" not in res["text"]
    assert res["counts"]["ops_after"] <= res["counts"]["ops_before"]


SHARED = """#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func @forward(%x: tensor<16x4xf32>) -> (tensor<4x16xf32>, tensor<4xf64>, tensor<4x16xf32>) {
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<4x16xf32>
    %t = linalg.transpose ins(%x : tensor<16x4xf32>) outs(%e : tensor<4x16xf32>) permutation = [1, 0]
    %e64 = tensor.empty() : tensor<4x16xf64>
    %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t : tensor<4x16xf32>) outs(%e64 : tensor<4x16xf64>) {
      ^bb0(%i: f32, %o: f64):
        %c = arith.extf %i : f32 to f64
        linalg.yield %c : f64
    } -> tensor<4x16xf64>
    %e1 = tensor.empty() : tensor<4xf64>
    %f = linalg.fill ins(%z : f64) outs(%e1 : tensor<4xf64>) -> tensor<4xf64>
    %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
        ins(%w : tensor<4x16xf64>) outs(%f : tensor<4xf64>) {
      ^bb0(%i: f64, %o: f64):
        %a = arith.addf %i, %o : f64
        linalg.yield %a : f64
    } -> tensor<4xf64>
    %q = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
        ins(%w, %s : tensor<4x16xf64>, tensor<4xf64>) outs(%f : tensor<4xf64>) {
      ^bb0(%i: f64, %m: f64, %o: f64):
        %d = arith.subf %i, %m : f64
        %p = arith.mulf %d, %d : f64
        %a = arith.addf %p, %o : f64
        linalg.yield %a : f64
    } -> tensor<4xf64>
    %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%t : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
      ^bb0(%i: f32, %o: f32):
        %a = arith.addf %i, %i : f32
        linalg.yield %a : f32
    } -> tensor<4x16xf32>
    return %r, %q, %t : tensor<4x16xf32>, tensor<4xf64>, tensor<4x16xf32>
  }
}
"""


def test_a_producer_that_only_moves_or_casts_is_copied_into_each_consumer():
    res = graph_passes(SHARED, ("fuse",))
    text = res["text"]
    # the transpose: into the extf's two reading reductions and the doubling; the extf: into both reductions
    assert res["counts"]["copied"] >= 3
    assert "-> tensor<4x16xf64>" not in text  # no float64 copy of the input is written
    assert text.count("linalg.generic") == 4  # the two reductions, the doubling, the transpose returned as it is
    assert re.search(r"ins\(%arg0 : tensor<16x4xf32>\) outs\(%\w+ : tensor<4xf64>\)", text)  # reads %x itself


def test_a_broken_rewrite_input_is_one_error_line():
    from mlir_rl_tui.engine.errors import EngineError

    with pytest.raises(EngineError) as e:
        graph_passes("module { func.func @f( }")
    assert "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------ import, end to end


BLOCKS = ROOT / "tests" / "data" / "torch" / "blocks.py"


@pytest.mark.parametrize("name,shape", [("ResNetBlock", "1x32x28x28"), ("Attention", "64x64")])
def test_import_passes_keep_pytorchs_result_and_remove_work(name, shape, tmp_path, cache_dir):
    pytest.importorskip("torch_mlir")
    ops = {}
    for passes in ("none", "all"):
        out = tmp_path / f"{name}_{passes}.mlir"
        r = cli("import", f"{BLOCKS}:{name}", "--input", shape, "-o", str(out), "--passes", passes, "--json")
        assert r.returncode == 0, r.stderr
        ops[passes] = json.loads(r.stdout)["ops"]
        if passes == "all":  # fused, and the batch matmuls beside reshapes stayed named (engine.rewrite.graph.fence_named)
            assert "fuse_skipped" not in json.loads(r.stdout)["passes"]
        base = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
        assert base["status"] == "ok" and base["validated"], base  # compared with PyTorch's output
        text = out.read_text()
        if passes == "all":
            assert not re.search(r"linalg\.transpose ins\(%cst", text)  # no weight transposed per call
            if name == "ResNetBlock":
                assert "conv_2d_nhwc_hwcf" in text and "cf.assert" not in text and "tensor.pad" not in text
            if name == "Attention":
                assert text.count("linalg.batch_matmul") == 2
    assert ops["all"] < ops["none"]


def test_unknown_pass_is_one_line(tmp_path):
    r = cli("import", f"{BLOCKS}:MLP", "--input", "32x256", "--passes", "nhwc,bogus", "-o", str(tmp_path / "x.mlir"),
            timeout=120)
    assert r.returncode == 2 and "unknown pass 'bogus'" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_1d_convolutions_become_nwc_and_keep_pytorchs_result(tmp_path, cache_dir):
    pytest.importorskip("torch_mlir")
    out = tmp_path / "c1d.mlir"
    r = cli("import", f"{ROOT / 'tests' / 'data' / 'import_models.py'}:Conv1dBlock", "--input", "1x8x64", "-o",
            str(out), "--json")
    assert r.returncode == 0, r.stderr
    passes = json.loads(r.stdout)["passes"]
    assert passes["nhwc"] == 3
    text = out.read_text()
    # the group norm's statistics read the NWC convolution's result where it is: no transposed copy of it and
    # no float64 copy of it (engine.rewrite.graph.copy_cheap_producers), only the per-channel float64 sums
    assert passes["copied"] >= 2
    f64 = [int(np.prod([int(d) for d in m.split("x")])) for m in re.findall(r"-> tensor<([\dx]+)xf64>", text)]
    assert f64 and max(f64) <= 16, f64
    # (torch-mlir lowers MaxPool1d as a 2-D pooling over a unit height)
    assert text.count("linalg.conv_1d_nwc_wcf") == 2 and "linalg.pooling_nhwc_max" in text
    assert "_ncw" not in text and "_nchw" not in text
    base = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
    assert base["status"] == "ok" and base["validated"], base  # compared with PyTorch's output


MODELS = ROOT / "tests" / "data" / "import_models.py"


def test_transposed_and_grouped_convolutions_keep_pytorchs_result(tmp_path, cache_dir):
    """A transposed convolution imports as the sub-pixel convolution it equals (agent.torch_passes: no
    zero-inserted input, no weights flipped per call), and a grouped one as one NHWC convolution per group
    (engine.rewrite.graph.grouped_to_nhwc: no grouped op the vectorizer cannot take); both keep PyTorch's result,
    untransformed and with the policy's vectorized schedule."""
    pytest.importorskip("torch_mlir")
    for name, shape in (("UpBlock", "1x8x16x16"), ("GroupedBlock", "1x16x12x12")):
        out = tmp_path / f"{name}.mlir"
        r = cli("import", f"{MODELS}:{name}", "--input", shape, "-o", str(out), "--json")
        assert r.returncode == 0, r.stderr
        passes = json.loads(r.stdout)["passes"]
        text = out.read_text()
        assert "ngchw" not in text and "tensor.extract %" not in text, name
        if name == "UpBlock":
            assert passes["convt"] == 1 and text.count("linalg.conv_2d_nhwc_hwcf") == 3
        else:
            assert text.count("linalg.conv_2d_nhwc_hwcf") == 2 + 4  # the 1x1 pair and one per group
        base = json.loads(cli("apply", str(out), "--schedule", "", "--json").stdout)
        assert base["status"] == "ok" and base["validated"], base  # compared with PyTorch's output
        # the policy's one pass (the same schedule however the machine times it: a search may keep the
        # baseline on a loaded machine), reported even where slower (--no-fallback)
        found = json.loads(cli("optimize", str(out), "--no-fallback", "--json").stdout)
        assert found["status"] == "ok" and found["validated"] and " V" in found["schedule"], found
