"""The one reader and writer of checkpoint files: tensors plus JSON, loaded without running code.

A checkpoint is a `torch.save` zip holding exactly
    {"format": "mlir-rl-tui checkpoint" (engine.store.jsonl.CHECKPOINT), "version": VERSION, "kind": "policy" | "ppo-state" | ..., "info": "<JSON text>",
     "tensors": {name: Tensor}}
and is read with `torch.load(weights_only=True)`, whose unpickler only rebuilds tensors, numbers, strings
and containers: a file that names any other Python object (an `os.system` in a `__reduce__`) is refused
before anything runs. Limits, configuration, metadata, optimizer hyper-parameters and RNG state live in the
JSON text; everything else is a tensor. The policy (agent/policy.py), the PPO resume state (agent/ppo.py),
behaviour cloning's output and the cost model (agent/costmodel.py) all go through `save` and `load` here, each with its own
`kind`.

Files written by an older mlir-rl-tui (pickled dicts of limits and metadata) are not read silently:
`mlir-rl-tui convert-checkpoint OLD NEW` converts one, knowingly (see `convert`).
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import zipfile
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from mlir_rl_tui.agent import checkpoint_file
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.store import atomic, jsonl

VERSION = 2
MAX_BYTES = 1 << 30
"""largest checkpoint file read (the shipped policy, three members, is 36 MB; a PPO resume state ~75 MB)"""
MAX_INFO_CHARS = 16 << 20
"""largest JSON text (limits, configuration, metadata)"""
MAX_TENSORS = 100_000
CONVERT_HINT = "mlir-rl-tui convert-checkpoint"


class CheckpointError(EngineError):
    """A checkpoint file that cannot or must not be read; str() is one line naming the cause and the fix."""


def save(path: str, kind: str, tensors: dict[str, torch.Tensor], info: dict) -> None:
    """Write atomically (a killed training never leaves half a last.pt); `info` must be JSON data."""
    text = json.dumps(info, default=_json_default)
    obj = {"format": jsonl.CHECKPOINT, "version": VERSION, "kind": kind, "info": text,
           "tensors": {k: v.detach().cpu().contiguous() for k, v in tensors.items()}}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic.replacing(path) as tmp:  # a device or a pipe is written to, never replaced
        torch.save(obj, tmp)


def load(path: str, kind: str) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, info) of a checkpoint of this `kind`; CheckpointError (one line) for anything else."""
    obj = _read(path)
    if isinstance(obj, dict) and "format" not in obj and ("model" in obj or "optimizer" in obj):
        raise CheckpointError(f"{path}: a checkpoint in the older format of mlir-rl-tui (pickled metadata); "
                              f"convert it once with `{CONVERT_HINT} {path} NEW.pt`, then use NEW.pt")
    if not isinstance(obj, dict) or obj.get("format") != jsonl.CHECKPOINT:
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (a torch file without its format marker)")
    version = obj.get("version")
    if not isinstance(version, int) or version < 1:
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (bad version {version!r})")
    if version > VERSION:
        raise CheckpointError(f"{path}: checkpoint format {version} is newer than this mlir-rl-tui reads "
                              f"({VERSION}); upgrade mlir-rl-tui")
    if obj.get("kind") != kind:
        raise CheckpointError(f"{path}: a {obj.get('kind')!r} checkpoint, not a {kind!r} one")
    tensors, text = obj.get("tensors"), obj.get("info")
    if not isinstance(text, str) or len(text) > MAX_INFO_CHARS:
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (its JSON part is missing or too large)")
    if (not isinstance(tensors, dict) or len(tensors) > MAX_TENSORS
            or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in tensors.items())):
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (its tensors are not a name -> tensor map)")
    try:
        info = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (bad JSON: {str(e)[:80]})") from None
    if not isinstance(info, dict):
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint (its JSON part is not an object)")
    return tensors, info


def _read(path: str, allow: list | None = None) -> Any:
    """torch.load with the weights-only unpickler, after checks that keep its errors readable (the file's
    zip directory: agent.checkpoint_file; its size)."""
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read the checkpoint ({e.strerror})") from None
    why = checkpoint_file.problem(path)
    if why:
        raise CheckpointError(f"{path}: {why}")
    if size > MAX_BYTES:
        raise CheckpointError(f"{path}: {size / 2**20:.1f} MB is larger than a checkpoint may be "
                              f"({MAX_BYTES / 2**20:.1f} MB); not a mlir-rl-tui checkpoint")
    try:
        if allow:
            with torch.serialization.safe_globals(allow):
                return torch.load(path, map_location="cpu", weights_only=True)
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        names = sorted(set(re.findall(r"GLOBAL ([\w.]+)", str(e)))) or ["an object it cannot rebuild as data"]
        if not allow and all(n.startswith("numpy.") for n in names):  # older files with numpy values in them
            raise CheckpointError(f"{path}: a checkpoint in an older format (it holds numpy objects); if you "
                                  f"trust it, convert it once with `{CONVERT_HINT} {path} NEW.pt`") from None
        raise CheckpointError(f"{path}: refused: loading it would call {', '.join(names)}, and mlir-rl-tui only "
                              "reads checkpoints of tensors and JSON (nothing ran; do not use this file)"
                              ) from None
    except (RuntimeError, KeyError, ValueError, EOFError, OSError, zipfile.BadZipFile) as e:
        first = _first_sentence(str(e)) or type(e).__name__
        raise CheckpointError(f"{path}: not a mlir-rl-tui checkpoint ({first})") from None


def _first_sentence(text: str, limit: int = 120) -> str:
    """The first sentence of an error's first line, at most `limit` characters (cut at a word, with "...")."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    first = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0].rstrip(".")
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0] + "..."


def _json_default(o: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists; anything else is a programming error."""
    if isinstance(o, np.generic | np.ndarray):
        return o.tolist()
    if isinstance(o, tuple | set):
        return list(o)
    raise TypeError(f"checkpoint metadata must be JSON data, not {type(o).__name__}")


# ----------------------------------------------------------------------------------------------
# JSON -> typed configuration, with bounds (a checkpoint decides the size of the model it builds)
def dataclass_from_json(cls: type, data: Any, path: str, what: str, bounds: dict[str, int] | None = None) -> Any:
    """Build a (frozen) dataclass from JSON: known fields only, each of its default's type, ints within
    `bounds` (default 0..2**24); missing fields take their defaults (files written before a field existed)."""
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: bad {what} in the checkpoint (not a JSON object)")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise CheckpointError(f"{path}: bad {what} in the checkpoint (unknown field {unknown[0]!r})")
    kw = {}
    for name, v in data.items():
        default = getattr(cls, name, None)
        hi = (bounds or {}).get(name, 1 << 24)
        kw[name] = _typed(v, default, hi, path, f"{what}.{name}")
    try:
        return cls(**kw)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: bad {what} in the checkpoint ({e})") from None


def _typed(v: Any, default: Any, hi: int, path: str, where: str) -> Any:
    def bad(why: str) -> CheckpointError:
        return CheckpointError(f"{path}: bad {where} in the checkpoint ({why})")

    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise bad(f"expected true/false, got {v!r:.40}")
        return v
    if isinstance(default, int):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= hi:
            raise bad(f"expected an integer in 0..{hi}, got {v!r:.40}")
        return v
    if isinstance(default, float):
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            raise bad(f"expected a number, got {v!r:.40}")
        return float(v)
    if isinstance(default, str):
        if not isinstance(v, str) or len(v) > 64:
            raise bad(f"expected a short string, got {v!r:.40}")
        return v
    if isinstance(default, tuple):
        if not isinstance(v, list | tuple) or len(v) > 256:
            raise bad("expected a list of at most 256 integers")
        return tuple(_typed(x, 0, hi, path, where) for x in v)
    raise bad(f"unsupported field type {type(default).__name__}")


# ----------------------------------------------------------------------------------------------
# Optimizer state as tensors + JSON (torch.optim state_dict: {"state": {id: {key: tensor|number}},
# "param_groups": [{hyper-parameters..., "params": [id, ...]}]})
def optimizer_to_tensors(sd: dict, prefix: str = "optimizer/") -> tuple[dict[str, torch.Tensor], dict]:
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, st in sd["state"].items():
        for key, v in st.items():
            if isinstance(v, torch.Tensor):
                tensors[f"{prefix}{pid}/{key}"] = v
            else:
                scalars.setdefault(str(pid), {})[key] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def optimizer_from_tensors(tensors: dict[str, torch.Tensor], info: Any, path: str,
                           prefix: str = "optimizer/") -> dict:
    """The state_dict back; CheckpointError if the JSON part is not the shape `optimizer_to_tensors` wrote."""
    def bad(why: str) -> CheckpointError:
        return CheckpointError(f"{path}: bad optimizer state in the checkpoint ({why})")

    if not isinstance(info, dict) or not isinstance(info.get("param_groups"), list):
        raise bad("no param_groups")
    groups = []
    for g in info["param_groups"]:
        if not isinstance(g, dict) or not isinstance(g.get("params"), list):
            raise bad("a param group without params")
        groups.append({k: tuple(v) if isinstance(v, list) and k != "params" else v for k, v in g.items()})
    state: dict[int, dict[str, Any]] = {}
    for name, t in tensors.items():
        if not name.startswith(prefix):
            continue
        pid, _, key = name[len(prefix):].partition("/")
        if not pid.isdigit() or not key:
            raise bad(f"tensor name {name!r}")
        state.setdefault(int(pid), {})[key] = t
    scalars = info.get("scalars", {})
    if not isinstance(scalars, dict):
        raise bad("scalars is not an object")
    for pid, st in scalars.items():
        if not pid.isdigit() or not isinstance(st, dict):
            raise bad(f"scalars of {pid!r}")
        state.setdefault(int(pid), {}).update(st)
    return {"state": state, "param_groups": groups}


# ----------------------------------------------------------------------------------------------
def convert(old: str, new: str) -> str:
    """Convert a checkpoint written by an older mlir-rl-tui (a pickled dict) to the current format; returns
    its kind ("policy" or "ppo-state").

    The old file is unpickled, but with torch's weights-only unpickler (tensors, numbers, strings,
    containers, numpy scalars and arrays): every checkpoint older versions wrote loads that way, and a file
    that names any other object is refused instead of run. Convert only files you trust all the same: the
    weights decide what the policy suggests.
    """
    if os.path.abspath(old) == os.path.abspath(new):
        raise CheckpointError(f"{new}: give the converted checkpoint another name than the old one")
    allow = [np.dtype, np.ndarray, np._core.multiarray.scalar, np._core.multiarray._reconstruct,
             *{type(np.dtype(c)) for c in "?bhilqBHILQefdgFDG"}]
    obj = _read(old, allow)
    if isinstance(obj, dict) and obj.get("format") == jsonl.CHECKPOINT:
        raise CheckpointError(f"{old}: already in the current checkpoint format; nothing to convert")
    if not isinstance(obj, dict) or not isinstance(obj.get("model"), dict):
        raise CheckpointError(f"{old}: not a checkpoint of an older mlir-rl-tui (no \"model\" weights)")
    model = _tensor_map(obj["model"], old)
    if "optimizer" in obj:  # PPO's last.pt (the model it resumes is built as before: --init or the default)
        opt_tensors, opt_info = optimizer_to_tensors(obj["optimizer"])
        rng = obj.get("torch_rng")
        tensors = {**{f"model/{k}": v for k, v in model.items()}, **opt_tensors}
        if isinstance(rng, torch.Tensor):
            tensors["torch_rng"] = rng
        info = {"optimizer": opt_info, "iteration": obj.get("iteration", 0),
                "global_step": obj.get("global_step", 0), "time_s": obj.get("time_s", 0.0),
                "rng": obj.get("rng"), "args": obj.get("args", {})}
        save(new, "ppo-state", tensors, _plain(info))
        return "ppo-state"
    info = {"limits": obj.get("limits", {}), "policy": obj.get("policy", {}), "meta": obj.get("meta", {})}
    save(new, "policy", model, _plain(info))
    return "policy"


def _tensor_map(d: dict, path: str) -> dict[str, torch.Tensor]:
    if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in d.items()):
        raise CheckpointError(f"{path}: its \"model\" entry is not a name -> tensor map")
    return dict(d)


def _plain(o: Any) -> Any:
    """JSON data from the unpickled metadata (tuples become lists, numpy values plain numbers)."""
    if isinstance(o, dict):
        return {str(k): _plain(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_plain(v) for v in o]
    if isinstance(o, np.generic | np.ndarray):
        return o.tolist()
    if isinstance(o, torch.Tensor):
        return o.tolist()
    return o
