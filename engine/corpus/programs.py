"""Which programs a command works on: the one rule for a list of program arguments (`dataset measure`,
`dataset export`, `evaluate --programs`, `train --programs`, `costmodel`).

An argument is a shipped sample's name (`matmul`, or `samples` for all of them: engine.corpus.samples.program), a
data set (a folder holding manifest.json, or the manifest itself: engine.corpus.generator.read_manifest; with a
split, the programs of that split and those without one), a folder (its .mlir files, recursively) or a file.
"""

from __future__ import annotations

import glob
import os

from mlir_rl_tui.engine.corpus import samples
from mlir_rl_tui.engine.corpus.generator import read_manifest
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program, load_file


def program_paths(spec: str | list[str], split: str | None = None) -> list[str]:
    """Paths of the .mlir files `spec` names (module docstring); `split` None takes every program of a data
    set. An EngineError (one line) for a name that is no file, folder or sample, and when nothing is found."""
    specs = [spec] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for s in map(samples.program, specs):
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
    """The programs of `program_paths(spec, split)`, loaded (engine.ir.program.load_file)."""
    return [load_file(p) for p in program_paths(spec, split)]
