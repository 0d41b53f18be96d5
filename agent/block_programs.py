"""Training programs from PyTorch: common model blocks at drawn sizes, exported with torch-mlir.

The generator of `engine.corpus.generator` writes single linalg ops and chains of them; what users open is often a
torch-mlir export of a model block (batch norms as elementwise generics, transposes, broadcasts, reductions,
padded convolutions). `generate_blocks(out, n, seed)` draws n blocks from the families below (or from
`families` only, in turn; the block classes are the zoo's, `agent.zoo.BLOCKS`), exports each with `agent.torch_import.import_module` (odd draws as torch-mlir
writes them, even ones through `import`'s graph passes, the two forms a user meets) and writes a
manifest.json that `engine.corpus.generator.read_manifest` reads, so that `train --recipe default --more OUT` trains
on them. `export_blocks` runs it in a child process (`python -m mlir_rl_tui.agent.block_programs OUT N SEED
[--sizes NAME | --small] [FAMILY...]`): torch-mlir's own MLIR bindings loaded beside PyTorch in a long-lived process can crash it
later (seen: a segfault in the next in-process PyTorch call). Sizes are drawn from wider ranges than
the exports in tests/data/torch (the evaluation set), and no draw has the shape of one of those (same
structure, other weights); the recipe also drops any program equal to an evaluation one. `--small`
(`sizes="small"`) draws tiny blocks instead (SIZES), of the sizes where a parallel hand-off costs more than
the work: the default ranges start above the evaluation's 16x16 pooling. `--sizes aligned` is small with
poolings whose output rows are multiples of the vector width, `--sizes strided` with stride-2 poolings of rows of
16-32 columns.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

import numpy as np

FAMILIES = ("mlp", "resnet", "invres", "attention", "heads", "layernorm", "ln_linear_gelu", "pool", "stem",
            "conv_bn_relu", "softmax")


#: Sizes each family draws from, in the order `draw` draws them. "default": the recipe's blocks; "small": tiny
#: blocks of the sizes users also open (the evaluation exports in tests/data/torch are 1x8x16x16 poolings, a
#: 1x64 MLP, 16x32 attention), below most default ranges, none at an evaluation export's shape (pool, resnet
#: and invres skip 16x16, stem 32x32, attention sequence 16, layernorm 16 tokens, the MLP batch 1).
SIZES: dict[str, dict[str, tuple[list[int], ...]]] = {
    "default": {
        "mlp": ([1, 8, 16, 32, 64], [32, 64, 128, 256], [64, 128, 256, 512], [2, 3]),
        "resnet": ([8, 16, 24, 32], [8, 12, 14, 20, 28]),
        "invres": ([8, 16, 24], [2, 4, 6], [8, 14, 20, 28]),
        "attention": ([8, 32, 64, 128], [16, 32, 64]),
        "heads": ([16, 32, 64, 128], [32, 64, 128], [2, 4]),
        "layernorm": ([8, 32, 64, 128], [32, 64, 128, 256]),
        "ln_linear_gelu": ([16, 32, 64, 128], [64, 128, 256], [64, 128, 256]),
        "pool": ([8, 16, 32, 64], [20, 28, 32, 56], [2, 3], [1, 2]),
        "stem": ([8, 24, 32], [24, 32, 48, 64]),
        "conv_bn_relu": ([3, 8, 16, 32], [8, 16, 32, 64], [1, 3], [8, 14, 16, 28]),
        "softmax": ([16, 32, 64, 128, 256], [16, 32, 64, 128, 256]),
    },
    "small": {
        "mlp": ([2, 4, 8], [16, 32, 64], [32, 64, 128], [2, 3]),
        "resnet": ([4, 8, 16], [4, 6, 8, 10, 12]),
        "invres": ([4, 8, 16], [2, 4, 6], [4, 6, 8, 10, 12]),
        "attention": ([4, 8, 12, 24], [8, 16, 32]),
        "heads": ([8, 12, 24], [16, 32, 64], [2, 4]),
        "layernorm": ([4, 8, 12, 24], [16, 32, 64]),
        "ln_linear_gelu": ([4, 8, 12], [32, 64], [32, 64]),
        "pool": ([4, 8, 16], [8, 10, 12, 14], [2, 3], [1, 2]),
        "stem": ([8, 16], [12, 16, 20, 24]),
        "conv_bn_relu": ([3, 4, 8, 16], [4, 8, 16], [1, 3], [4, 6, 8, 12]),
        "softmax": ([4, 8, 12], [8, 16, 32]),
    },
}
#: "aligned": the small table, but poolings of sides 9, 17, 18 and 33, whose output rows are mostly 8, 16 or 32
#: columns (a vector of 8 f32 lanes, or several): small's poolings (8-14 px) never give an output row of 8, so no
#: tiny training pooling rewarded vectorizing along a row. k2s1: 8, 16, 17, 32; k2s2: 4, 8, 9, 16; k3s2: 4, 8,
#: 8, 16. None is the evaluation's 16x16.
SIZES["aligned"] = dict(SIZES["small"], pool=([4, 8, 16], [9, 17, 18, 33], [2, 3], [1, 2]))
#: "strided": the small table, but poolings of stride 2 only (2x2, and 3x3 padded by 1) over sides 32, 48 and 64
#: of 4-16 channels: output rows of 16, 24 or 32 columns. "small"'s strided poolings have rows of 4-7
#: columns, "aligned"'s padded 3x3 ones rows of 5, 9 or 17; the policy vectorized the evaluation's 2x2 stride-2
#: pooling (8 channels, rows of 8) along the channels, as it does on small's. None is the evaluation's 16x16.
SIZES["strided"] = dict(SIZES["small"], pool=([4, 8, 16], [32, 48, 64], [2, 3], [2]))
#: "odd": the small table, but 2x2 stride-1 poolings of sides 12, 14, 20 and 24, 4-16 channels: output rows of 11,
#: 13, 19 and 23 columns, where a vector along the row (a length not a multiple of 8) wins at some widths and
#: loses at others; no side is the evaluation's 16 or the validation poolings' 17 and 18.
SIZES["odd"] = dict(SIZES["small"], pool=([4, 8, 16], [12, 14, 20, 24], [2], [1]))


def draw(rng: np.random.Generator, family: str, sizes: str = "default") -> tuple[str, str, tuple, dict]:
    """(name, class, input shape, constructor kwargs) of one block of `family`, its sizes from SIZES[sizes]."""
    c = lambda xs: int(rng.choice(xs))  # noqa: E731
    if family not in FAMILIES:
        raise ValueError(family)
    z = SIZES[sizes][family]
    if family == "mlp":
        b, d, h, n = c(z[0]), c(z[1]), c(z[2]), c(z[3])
        return f"mlp{n}_{b}x{d}_h{h}", "MLP", (b, d), dict(d=d, h=h, layers=n)
    if family == "resnet":
        ch, hw = c(z[0]), c(z[1])
        return f"resnet_{ch}c_{hw}x{hw}", "ResNet", (1, ch, hw, hw), dict(c=ch)
    if family == "invres":
        ch, e, hw = c(z[0]), c(z[1]), c(z[2])
        return f"invres_{ch}c_e{e}_{hw}x{hw}", "InvRes", (1, ch, hw, hw), dict(c=ch, e=e)
    if family == "attention":
        s, d = c(z[0]), c(z[1])
        return f"attention_{s}x{d}", "Attention", (1, s, d), dict(d=d)
    if family == "heads":
        s, d, h = c(z[0]), c(z[1]), c(z[2])
        return f"heads{h}_{s}x{d}", "Heads", (s, d), dict(d=d, heads=h)
    if family == "layernorm":
        t, d, act = c(z[0]), c(z[1]), bool(rng.integers(2))
        return f"layernorm{'_gelu' if act else ''}_{t}x{d}", "LayerNorm", (t, d), dict(d=d, act=act)
    if family == "ln_linear_gelu":
        t, d, h = c(z[0]), c(z[1]), c(z[2])
        return f"ln_linear_gelu_{t}x{d}_h{h}", "LNLinearGELU", (t, d), dict(d=d, h=h)
    if family == "pool":
        ch, hw, k, relu = c(z[0]), c(z[1]), c(z[2]), bool(rng.integers(2))
        s = 2 if k == 3 else c(z[3])
        return (f"{'relu_' if relu else ''}maxpool{k}s{s}_{ch}c_{hw}x{hw}", "Pool", (1, ch, hw, hw),
                dict(k=k, s=s, relu=relu))
    if family == "stem":
        ch, hw = c(z[0]), c(z[1])
        return f"stem_{ch}c_{hw}x{hw}", "Stem", (1, 3, hw, hw), dict(c=ch)
    if family == "conv_bn_relu":
        ci, co, k, hw = c(z[0]), c(z[1]), c(z[2]), c(z[3])
        return f"conv{k}_bn_relu_{ci}to{co}_{hw}x{hw}", "ConvBNReLU", (1, ci, hw, hw), dict(ci=ci, co=co, k=k)
    r, n = c(z[0]), c(z[1])  # softmax
    return f"softmax_{r}x{n}", "Softmax", (r, n), {}


def check_choice(families: tuple[str, ...], sizes: str) -> None:
    """ValueError naming what is wrong when a family is not in FAMILIES (or none is given) or sizes not in SIZES."""
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise ValueError(f"block families must be among {', '.join(FAMILIES)}, not {unknown or 'none'}")
    if sizes not in SIZES:
        raise ValueError(f"block sizes must be one of {', '.join(SIZES)}, not {sizes!r}")


def generate_blocks(out_dir: str, n: int, seed: int = 0,
                    on_progress: Callable[[int, int, str], None] | None = None,
                    families: tuple[str, ...] = FAMILIES, sizes: str = "default") -> dict:
    """Export n drawn blocks into out_dir with a manifest.json (all in the train split); returns it.
    Draw i is of families[i % len(families)] (default: every family in turn), at SIZES[sizes]. A block
    torch-mlir cannot export is skipped (named in the manifest's "skipped")."""
    check_choice(families, sizes)
    import torch

    from mlir_rl_tui.agent.torch_import import PASSES, import_module
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.errors import EngineError

    os.makedirs(out_dir, exist_ok=True)
    from mlir_rl_tui.agent.zoo import BLOCKS

    rng = np.random.default_rng(seed)
    entries, skipped, seen = [], [], set()
    for i in range(n):
        family = families[i % len(families)]
        name, cls, shape, kw = draw(rng, family, sizes)
        passes = PASSES if i % 2 == 0 else ()
        fname = f"{i:04d}_{name}{'_graph' if passes else ''}.mlir"
        torch.manual_seed(seed * 1000 + i)
        model = BLOCKS[cls](**kw).eval()
        try:
            import_module(model, ["x".join(map(str, shape))], os.path.join(out_dir, fname), passes=passes)
            prog = load_file(os.path.join(out_dir, fname))
        except EngineError as e:
            skipped.append(f"{fname}: {e}")
            continue
        if prog.sha256 in seen:
            continue
        seen.add(prog.sha256)
        entries.append({"name": fname[:-5], "path": fname, "kind": "block", "family": family,
                        "graph_passes": bool(passes), "linalg_ops": len(prog.ops), "sha256": prog.sha256,
                        "split": "train"})
        if on_progress is not None:
            on_progress(i + 1, n, fname)
    manifest = {"version": 1, "seed": seed, "n": n, "kind": "torch-mlir blocks", "families": list(families),
                "sizes": sizes,
                "programs": entries, "train": [e["path"] for e in entries], "eval": [], "skipped": skipped}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def export_blocks(out_dir: str, n: int, seed: int = 0, timeout: float = 1800,
                  families: tuple[str, ...] = FAMILIES, sizes: str = "default") -> dict:
    """`generate_blocks` in a child process (see the module docstring); returns the manifest."""
    from mlir_rl_tui.engine.corpus.generator import read_manifest
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.engine.run.child import run_module

    r = run_module("mlir_rl_tui.agent.block_programs", [out_dir, str(n), str(seed), "--sizes", sizes, *families],
                   timeout)
    if r.problem:
        raise EngineError(f"exporting {n} model blocks failed: {r.problem}")
    return read_manifest(out_dir)


def main(argv: list[str] | None = None) -> int:
    """python -m mlir_rl_tui.agent.block_programs OUT N SEED [--sizes NAME | --small] [FAMILY...]"""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m mlir_rl_tui.agent.block_programs",
                                 description="Export N drawn model blocks into OUT with a manifest.json.")
    ap.add_argument("out")
    ap.add_argument("n", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("families", nargs="*", metavar="FAMILY", help=f"draw only these, in turn ({', '.join(FAMILIES)})")
    ap.add_argument("--sizes", default="default", help=f"the SIZES table to draw from ({', '.join(SIZES)})")
    ap.add_argument("--small", dest="sizes", action="store_const", const="small", help="--sizes small")
    a = ap.parse_intermixed_args(argv)
    families = tuple(a.families) or FAMILIES
    try:
        check_choice(families, a.sizes)
    except ValueError as e:
        ap.error(str(e))
    generate_blocks(a.out, a.n, a.seed, families=families, sizes=a.sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
