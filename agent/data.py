"""Which programs to train or evaluate on: a folder, a dataset manifest (with a split) or files."""

from __future__ import annotations

import glob
import json
import os

from engine import EngineError, Program, load_file


def program_paths(spec: str | list[str], split: str | None = None) -> list[str]:
    """Paths of .mlir files from a folder (recursive), a manifest.json (optionally one split) or files.

    A folder holding a manifest.json is read through the manifest, so `split` applies to it.
    """
    specs = [spec] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for s in specs:
        if os.path.isdir(s) and os.path.exists(os.path.join(s, "manifest.json")):
            s = os.path.join(s, "manifest.json")
        if os.path.isdir(s):
            out += sorted(glob.glob(os.path.join(s, "**", "*.mlir"), recursive=True))
        elif s.endswith(".json"):
            out += _manifest(s, split)
        elif os.path.exists(s):
            out.append(s)
        else:
            raise EngineError(f"{s}: no such file or folder (give a folder, a manifest.json or .mlir files)")
    if not out:
        raise EngineError(f"no .mlir programs found in {', '.join(specs)}")
    return out


def _manifest(path: str, split: str | None) -> list[str]:
    with open(path) as f:
        man = json.load(f)
    root = os.path.dirname(os.path.abspath(path))
    entries = man.get("programs", man) if isinstance(man, dict) else man
    if isinstance(entries, dict) and split in entries:  # {"train": [...], "eval": [...]}
        entries = entries[split]
    elif isinstance(man, dict) and split and isinstance(man.get(split), list):
        entries = man[split]
    out = []
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, str):
            out.append(e)
            continue
        if split and e.get("split") not in (None, split):
            continue
        out.append(e.get("path") or e.get("file"))
    return [p if os.path.isabs(p) else os.path.join(root, p) for p in out if p]


def load_programs(spec: str | list[str], split: str | None = None) -> list[Program]:
    return [load_file(p) for p in program_paths(spec, split)]
