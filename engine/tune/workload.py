"""Workloads: what makes two ops the same tuning problem (engine.store.tuning_db keys its records by them).

An op's workload is everything its schedule depends on and nothing about where it sits: the op's name,
loop bounds and iterators, the access matrix of each operand (the layout), the element types, the body's
arithmetic, the convolution window loops, and the producer tiled fusion (TF) would fuse into it (the same
description, one level deep). Two ops of one program, or of two programs, with the same workload take the
same op schedule: a ResNet's repeated blocks are tuned once. The machine is not part of it: the tuning
database keys records by workload and machine kind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from mlir_rl_tui.engine.ir.program import LinalgOp, Program
from mlir_rl_tui.engine.schedule.notation import Action, Schedule, parse


def describe(op: LinalgOp, program: Program, fused: bool = True) -> dict:
    """The canonical description of `op` as a workload (JSON-able; key order does not matter)."""
    d = {
        "name": op.name,
        "loops": [[lp.bound, lp.iterator] for lp in op.loops],
        "access": op.access,
        "inputs": op.n_inputs,
        "dtypes": op.dtypes,
        "body": op.body,
        "window": list(op.decompose_dims) if op.decompose_dims else None,
        "pad_fill": op.pad_fill,
    }
    if fused and op.fusion_producer is not None:
        d["fused"] = {"operand": op.fusion_operand,
                      "producer": describe(program.op(op.fusion_producer), program, fused=False)}
    return d


def key(description: dict) -> str:
    """The workload's key: sha256 of its canonical JSON (first 24 hex digits)."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def label(op: LinalgOp) -> str:
    """A short human name: the op and its loop bounds, e.g. `conv_2d_nhwc_hwcf 1x28x28x64x3x3x64`."""
    return f"{op.name.removeprefix('linalg.')} {op.shape_text}"


def of_program(program: Program) -> dict[str, str]:
    """Each op's workload key, by op id."""
    return {op.id: key(describe(op, program)) for op in program.ops}


def groups(program: Program) -> dict[str, list[str]]:
    """Op ids by workload key, in program order (identical ops of a model share one key)."""
    out: dict[str, list[str]] = {}
    for op_id, k in of_program(program).items():
        out.setdefault(k, []).append(op_id)
    return out


def op_text(schedule: Schedule, op_id: str) -> str:
    """One op's actions as text, e.g. `TP(32,32,0) T(8,32,1) V` (what the tuning database stores)."""
    return " ".join(str(a) for a in schedule.actions(op_id))


def op_actions(text: str) -> list[Action]:
    """The actions of `op_text` (ScheduleError on text that is not one)."""
    return parse(f"op0: {text}").actions("op0") if text.strip() else []


def with_ops(schedule: Schedule, ops: Iterable[str], text: str) -> Schedule:
    """`schedule` with each op of `ops` given the actions `text` (others unchanged)."""
    acts = op_actions(text)
    per_op = {k: list(v) for k, v in schedule.ops.items()}
    for op_id in ops:
        per_op[op_id] = list(acts)
    return Schedule(per_op)
