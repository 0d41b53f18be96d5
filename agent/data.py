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


MAX_MANIFEST_BYTES = 64 << 20
"""largest manifest.json read (one of 10,000 programs is ~2 MB)"""


def read_json(path: str, what: str, limit: int | None = None):
    """A JSON file as data, at most `limit` bytes (default MAX_MANIFEST_BYTES); EngineError (one line) for
    anything else."""
    limit = limit or MAX_MANIFEST_BYTES
    try:
        size = os.path.getsize(path)
        if size > limit:
            raise EngineError(f"{path}: {size / 2**20:.1f} MB is larger than a {what} may be ({limit / 2**20:.1f} MB)")
        with open(path, "rb") as f:
            return json.loads(f.read(limit + 1))
    except OSError as e:
        raise EngineError(f"{path}: cannot read the {what} ({e.strerror})") from None
    except UnicodeDecodeError:
        raise EngineError(f"{path}: not a {what} (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise EngineError(f"{path}: not a {what} ({e.msg} at line {e.lineno})") from None
    except RecursionError:
        raise EngineError(f"{path}: not a {what} (nested too deeply)") from None


def _manifest(path: str, split: str | None) -> list[str]:
    """Program paths of a data-set manifest: {"programs": [...]}, {"train": [...], "eval": [...]} or a list;
    an entry is a path or {"path"|"file": ..., "split": ...}."""
    man = read_json(path, "data set manifest")
    root = os.path.dirname(os.path.abspath(path))
    entries = man.get("programs", man) if isinstance(man, dict) else man
    if isinstance(entries, dict) and split in entries:  # {"train": [...], "eval": [...]}
        entries = entries[split]
    elif isinstance(man, dict) and split and isinstance(man.get(split), list):
        entries = man[split]
    if not isinstance(entries, list):
        raise EngineError(f"{path}: not a data set manifest (no list of programs"
                          + (f" for split {split!r})" if split else ")"))
    out = []
    for i, e in enumerate(entries):
        if isinstance(e, dict):
            if split and e.get("split") not in (None, split):
                continue
            e = e.get("path") or e.get("file")
        if not isinstance(e, str) or not e or len(e) > 4096 or "\0" in e:
            raise EngineError(f"{path}: program {i} of the manifest is not a path or a {{\"path\": ...}} object")
        out.append(e)
    return [p if os.path.isabs(p) else os.path.join(root, p) for p in out]


def load_programs(spec: str | list[str], split: str | None = None) -> list[Program]:
    return [load_file(p) for p in program_paths(spec, split)]
