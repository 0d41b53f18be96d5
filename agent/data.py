"""Which programs to train or evaluate on: a folder, a dataset manifest (with a split) or files."""

from __future__ import annotations

import glob
import os

from mlir_rl_tui.engine import EngineError, Program, load_file, samples
from mlir_rl_tui.engine.dataset import read_manifest


def program_paths(spec: str | list[str], split: str | None = None) -> list[str]:
    """Paths of .mlir files from a folder (recursive), a data-set manifest (engine.dataset.read_manifest;
    with `split`, the programs of that split and those without one) or files.

    A folder holding a manifest.json is read through the manifest, so `split` applies to it.
    A name that is no file is a shipped sample's (mlir_rl_tui.engine.samples.program).
    """
    specs = [spec] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for s in map(samples.program, specs):  # a shipped sample's name, or `samples` for all of them, works anywhere
        if os.path.isdir(s) and os.path.exists(os.path.join(s, "manifest.json")):
            s = os.path.join(s, "manifest.json")
        if os.path.isdir(s):
            out += sorted(glob.glob(os.path.join(s, "**", "*.mlir"), recursive=True))
        elif s.endswith(".json"):
            out += [e["abspath"] for e in read_manifest(s)["programs"] if split is None or e.get("split") in (None, split)]
        elif os.path.exists(s):
            out.append(s)
        else:
            raise EngineError(f"{s}: no such file or folder (give a folder, a manifest.json or .mlir files)")
    if not out:
        raise EngineError(f"no .mlir programs found in {', '.join(specs)}")
    return out


def load_programs(spec: str | list[str], split: str | None = None) -> list[Program]:
    return [load_file(p) for p in program_paths(spec, split)]
