"""Exports: the transformed module, and a self-contained file `mlir-opt --transform-interpreter` replays."""

from __future__ import annotations

from engine.config import DEFAULT_LIMITS, Limits
from engine.program import Program, tag_ops
from engine.schedule import Schedule
from engine.transforms import script


def replayable(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS) -> str:
    """The tagged payload and the schedule's named sequence in one module.

    `mlir-opt --transform-interpreter FILE` applies the schedule to the payload in the same file;
    the payload part of its output is the transformed IR.
    """
    from mlir import ir

    text = script(program, schedule, limits)
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        payload = ir.Module.parse(program.text)
        tag_ops(payload)
        tmod = ir.Module.parse(text)
        payload.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        for op in list(tmod.body.operations):
            payload.body.append(op.operation.clone())
        return str(payload)


def strip_transforms(text: str) -> str:
    """Remove transform ops and the marker attribute: what is left is the payload, printed canonically."""
    from mlir import ir

    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(text)
        for op in list(m.body.operations):
            if op.operation.name.startswith("transform."):
                op.operation.erase()
        if "transform.with_named_sequence" in m.operation.attributes:
            del m.operation.attributes["transform.with_named_sequence"]
        return str(m)
