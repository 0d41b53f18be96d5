"""The lists of scripts/experiment-programs, written in the current folder (its ROOT), and the check of every
program folder against the program hashes of the project's measurement files (data/*.jsonl.gz).

    python scripts/experiment_lists.py CHECKOUT
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import sys

from mlir_rl_tui.engine import load_file
from mlir_rl_tui.engine.corpus.generator import read_manifest

#: The block folders of the training programs beyond the data set's, in the order the recipe reads them.
MORE = ["base/blocks_s1", "s13/blocks_s7", "small/blocks_s10", "aligned/blocks_s14", "s22/blocks_c21",
        "s22/blocks_c22"]


def shas(folder: str, split: str | None = None) -> dict[str, str]:
    """sha256 -> path of a manifest folder's programs (of one split when given)."""
    return {e["sha256"]: e["abspath"] for e in read_manifest(folder)["programs"]
            if split is None or e.get("split") == split}


def files_shas(folder: str) -> dict[str, str]:
    return {load_file(f).sha256: f for f in sorted(glob.glob(os.path.join(folder, "*.mlir")))}


def shape(path: str) -> str:
    """A block's family and sizes: its name without the index and the graph-pass suffix."""
    return re.sub(r"^\d{4}_|_graph$", "", os.path.basename(path)[:-5])


def has_nchw_conv(path: str) -> bool:
    """The program has an NCHW convolution (linalg.conv_2d_nchw_fchw, any kernel)."""
    return any(op.name == "linalg.conv_2d_nchw_fchw" for op in load_file(path).ops)


def main(checkout: str) -> int:
    evaluation = {**shas("dataset", "eval"), **files_shas(os.path.join(checkout, "samples")),
                  **files_shas(os.path.join(checkout, "tests/data/torch"))}
    early_train = {**shas("dataset"), **shas("common/dataset_extra"), **shas("common/blocks"),
                   **shas("base/blocks_s1")}
    val57 = [p for s, p in {**shas("val/blocks_s2"), **shas("val/gen")}.items()
             if s not in early_train and s not in evaluation]
    val88 = val57 + sorted(files_shas("val/small_s12").values()) + sorted(files_shas("val/aligned_s16").values())
    training = {**shas("dataset", "train"), **shas("common/dataset_extra"), **shas("common/blocks")}
    for folder in MORE[:4]:  # the training programs when the second validation set was drawn
        training.update(shas(folder))
    earlier = {load_file(p).sha256 for p in val88}
    val2 = [p for f in ("val2/blocks_s18", "val2/small_s20", "val2/aligned_s22") for s, p in shas(f).items()
            if s not in training and s not in earlier and s not in evaluation]
    val2 = list(dict.fromkeys(val2))
    # the conv blocks leave out the draws with a validation program's shape
    val_shapes = {shape(p) for p in val88 + val2}
    for folder in ("s22/blocks_c21", "s22/blocks_c22"):
        path = os.path.join(folder, "manifest.json")
        man = json.load(open(path))
        keep = [e for e in man["programs"] if shape(e["path"]) not in val_shapes]
        if len(keep) != len(man["programs"]):
            print(f"{folder}: {len(man['programs']) - len(keep)} with a validation program's shape left out")
            man["programs"] = keep
            json.dump(man, open(path, "w"), indent=1)
    lists = {"val_list.txt": val57, "val88.txt": val88, "val2_list.txt": val2,
             "val_conv_programs.txt": [p for p in val88 if has_nchw_conv(p)]}
    for name, paths in lists.items():
        open(name, "w").write("".join(os.path.relpath(p) + "\n" for p in paths))
        print(f"{name}: {len(paths)} programs")

    measured: set[str] = set()
    for f in glob.glob(os.path.join(checkout, "data", "*.jsonl.gz")):
        with gzip.open(f, "rt") as fh:
            next(fh)
            measured |= {json.loads(line)["program"] for line in fh}
    for folder in ["dataset", "common/dataset_extra", "common/blocks", *MORE[:4]]:
        s = shas(folder)
        print(f"{folder}: {len(s)} programs, {len(set(s) & measured)} of them in data/*.jsonl.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
