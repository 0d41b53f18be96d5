"""Training programs from PyTorch (agent.block_programs): drawn model blocks exported with torch-mlir, in a
manifest the recipe reads, never the shapes of the evaluation exports."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

pytest.importorskip("torch_mlir", reason="torch-mlir is the [import] extra; scripts/setup installs it")


def test_blocks_export_validate_and_train(tmp_path, cache_dir, monkeypatch):
    from mlir_rl_tui.agent import recipes
    from mlir_rl_tui.agent.block_programs import FAMILIES, export_blocks
    from mlir_rl_tui.engine import Engine, load_file
    from mlir_rl_tui.engine.corpus.generator import read_manifest

    folder = tmp_path / "run" / "programs" / "blocks"
    man = export_blocks(str(folder), 4, seed=3)  # torch-mlir in a child process
    assert not man["skipped"] and [e["family"] for e in man["programs"]] == list(FAMILIES[:4])
    assert [e["graph_passes"] for e in man["programs"]] == [True, False, True, False]
    entries = read_manifest(str(folder))["programs"]
    with Engine() as eng:
        for e in entries[:2]:  # an MLP through import's passes, a ResNet block as torch-mlir writes it
            prog = load_file(e["abspath"])
            assert prog.sha256 == e["sha256"] and len(prog.ops) >= 3
            m = eng.baseline(prog)
            assert m.ok and m.validated, m.error  # checked against PyTorch's output saved at export
    # the recipe trains on them after a data set's train split (the folder exists: not exported again)
    monkeypatch.setattr(recipes, "PROGRAMS", (recipes.Source("data", "generated", 5, 0),
                                              recipes.Source("blocks", "blocks", 4, 3)))
    r = recipes.DefaultRecipe(out=str(tmp_path / "run"))
    progs, evaluation, counts = recipes.make_programs(r, recipes.Stages(lambda _: None, None))
    assert counts == {"data": 4, "blocks": 4} and len(progs) == 8  # the data set's 5: 4 train, 1 eval
    assert [p.sha256 for p in progs[4:]] == [e["sha256"] for e in entries]
    assert {load_file(p).sha256 for p in evaluation}.isdisjoint(p.sha256 for p in progs)


def test_no_block_has_the_shape_of_an_evaluation_export():
    from mlir_rl_tui.agent.block_programs import FAMILIES, SIZES, draw

    export = (ROOT / "tests" / "data" / "torch" / "export.py").read_text()
    assert "(1, 16, 32)" in export and "(16, 64)" in export  # attention and layer norm's evaluation shapes
    for sizes in SIZES:
        rng = np.random.default_rng(0)
        for _ in range(300):
            for f in FAMILIES:
                _, cls, shape, kw = draw(rng, f, sizes)
                assert not (cls == "Attention" and shape == (1, 16, 32))
                assert not (cls == "LayerNorm" and shape == (16, 64))
                assert not (cls == "ResNet" and shape == (1, 16, 16, 16))
                assert not (cls == "InvRes" and shape == (1, 8, 16, 16) and kw["e"] == 4)
                assert not (cls == "Pool" and shape == (1, 8, 16, 16))
                assert not (cls == "Stem" and kw["c"] == 16 and shape == (1, 3, 32, 32))


def test_blocks_of_chosen_families(tmp_path):
    """`families` draws only those (in turn; a family named twice gets both export forms), and says so."""
    from mlir_rl_tui.agent.block_programs import export_blocks, generate_blocks

    with pytest.raises(ValueError, match="not \\['convnext'\\]"):
        generate_blocks(str(tmp_path / "none"), 1, families=("pool", "convnext"))
    man = export_blocks(str(tmp_path / "blocks"), 3, seed=5, families=("pool", "layernorm", "pool"))
    assert [e["family"] for e in man["programs"]] == ["pool", "layernorm", "pool"]
    assert [e["graph_passes"] for e in man["programs"]] == [True, False, True]
    assert man["families"] == ["pool", "layernorm", "pool"] and not man["skipped"]


def test_small_blocks_are_smaller_and_default_draws_unchanged():
    """--small draws below the default ranges (the evaluation exports' sizes, not their shapes); the default
    draws stay those of the folders the recipe's cache was filled from (seed 1's first blocks, by name)."""
    from mlir_rl_tui.agent.block_programs import FAMILIES, SIZES, draw

    assert set(SIZES["small"]) == set(SIZES["default"]) == set(FAMILIES)
    rng = np.random.default_rng(1)
    names = [draw(rng, f)[0] for f in FAMILIES[:4]]
    assert names == ["mlp3_16x128_h512", "resnet_8c_8x8", "invres_24c_e6_8x8", "attention_32x64"]  # runs/base/blocks_s1
    for f in FAMILIES:  # the largest small draw is under the largest default one, per size list
        assert all(max(s) <= max(d) for s, d in zip(SIZES["small"][f], SIZES["default"][f]))
    small = [draw(np.random.default_rng(i), "pool", "small")[2] for i in range(20)]
    assert all(shape[2] <= 14 for shape in small)


def test_small_blocks_export(tmp_path):
    """`--small` through the child process: the manifest says so and the block is of a small size."""
    from mlir_rl_tui.agent.block_programs import export_blocks, generate_blocks

    with pytest.raises(ValueError, match="not 'huge'"):
        generate_blocks(str(tmp_path / "none"), 1, sizes="huge")
    man = export_blocks(str(tmp_path / "small"), 1, seed=5, families=("pool",), sizes="small")
    (entry,) = man["programs"]
    assert man["sizes"] == "small" and entry["family"] == "pool"
    assert int(entry["name"].rsplit("x", 1)[1].removesuffix("_graph")) <= 14, entry["name"]


def test_aligned_poolings_have_rows_of_the_vector_width():
    """--sizes aligned: the small table with poolings whose output rows are mostly multiples of 8 columns (the
    tiny poolings of "small" never are), no pooling of the evaluation's 16x16; the other families as small's."""
    from mlir_rl_tui.agent.block_programs import FAMILIES, SIZES, draw

    assert {f: SIZES["aligned"][f] for f in FAMILIES if f != "pool"} == {
        f: SIZES["small"][f] for f in FAMILIES if f != "pool"}

    def rows(sizes: str) -> list[int]:
        out = []
        for i in range(200):
            _, _, shape, kw = draw(np.random.default_rng(i), "pool", sizes)
            out.append((shape[3] - kw["k"]) // kw["s"] + 1)
        return out

    assert not any(r % 8 == 0 for r in rows("small"))
    aligned = rows("aligned")
    assert sum(r % 8 == 0 for r in aligned) >= 0.6 * len(aligned) and 8 in aligned and 16 in aligned


def test_strided_poolings_are_stride_2_with_rows_of_whole_vectors():
    """--sizes strided: the small table with poolings of stride 2 only whose output rows (with the 3x3 window's
    padding of 1) are 16, 24 or 32 columns, no pooling of the evaluation's 16x16."""
    from mlir_rl_tui.agent.block_programs import FAMILIES, SIZES, draw

    assert {f: SIZES["strided"][f] for f in FAMILIES if f != "pool"} == {
        f: SIZES["small"][f] for f in FAMILIES if f != "pool"}
    rows, kinds = set(), set()
    for i in range(100):
        name, _, shape, kw = draw(np.random.default_rng(i), "pool", "strided")
        assert kw["s"] == 2 and shape[2] == shape[3] != 16, name
        pad = 1 if kw["k"] == 3 else 0  # as the Pool block pads
        rows.add((shape[3] + 2 * pad - kw["k"]) // kw["s"] + 1)
        kinds.add(kw["k"])
    assert rows == {16, 24, 32} and kinds == {2, 3}


def test_odd_poolings_are_2x2_stride_1_with_rows_of_other_widths():
    """--sizes odd: the small table with 2x2 stride-1 poolings only, of output rows 11, 13, 19 and 23 columns
    (not multiples of 8) and 4-16 channels, none of the evaluation's side 16 or the validation's 17 and 18."""
    from mlir_rl_tui.agent.block_programs import FAMILIES, SIZES, draw

    assert {f: SIZES["odd"][f] for f in FAMILIES if f != "pool"} == {
        f: SIZES["small"][f] for f in FAMILIES if f != "pool"}
    rows, channels = set(), set()
    for i in range(100):
        name, _, shape, kw = draw(np.random.default_rng(i), "pool", "odd")
        assert (kw["k"], kw["s"]) == (2, 1) and shape[2] == shape[3] not in (16, 17, 18), name
        rows.add(shape[3] - 1)
        channels.add(shape[1])
    assert rows == {11, 13, 19, 23} and channels == {4, 8, 16}


def test_the_script_answers_bad_arguments_in_one_line(capsys):
    """`python -m mlir_rl_tui.agent.block_programs` refuses an unknown family or table with a usage line, exit 2."""
    from mlir_rl_tui.agent.block_programs import main

    for argv, says in ((["out", "1", "1", "convnext"], "among mlp, resnet"),
                       (["out", "1", "1", "--sizes", "huge", "pool"], "not 'huge'"),
                       (["out", "1"], "required")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err
