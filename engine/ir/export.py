"""Exports: the transformed module, and a self-contained file `mlir-opt --transform-interpreter` replays.

Both parse the user's MLIR text, so they run in the loader process (engine.ir.loader), like loading: the
`*_here` functions are what that process calls.
"""

from __future__ import annotations

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.ir.program import Program, tag_ops
from mlir_rl_tui.engine.schedule.notation import Schedule
from mlir_rl_tui.engine.schedule.transforms import script


def replayable(program: Program, schedule: Schedule, limits: Limits = DEFAULT_LIMITS) -> str:
    """The tagged payload and the schedule's named sequence in one module.

    `mlir-opt --transform-interpreter FILE` applies the schedule to the payload in the same file;
    the payload part of its output is the transformed IR.
    """
    from mlir_rl_tui.engine.ir.loader import guarded

    return guarded("replayable", program.text, name=program.path or "<program>", func=program.func_name,
                   script=script(program, schedule, limits))["text"]


def strip_transforms(text: str) -> str:
    """Remove transform ops and the marker attribute: what is left is the payload, printed canonically."""
    from mlir_rl_tui.engine.ir.loader import guarded

    return guarded("strip", text)["text"]


def replayable_here(program_text: str, func: str | None, script_text: str) -> str:
    """`replayable` in this process (the loader's)."""
    from mlir import ir

    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        payload = ir.Module.parse(program_text)
        tag_ops(payload, func)
        tmod = ir.Module.parse(script_text)
        payload.operation.attributes["transform.with_named_sequence"] = ir.UnitAttr.get()
        for op in list(tmod.body.operations):
            payload.body.append(op.operation.clone())
        return str(payload)


def strip_transforms_here(text: str) -> str:
    """`strip_transforms` in this process (the loader's)."""
    from mlir import ir

    from mlir_rl_tui.engine.errors import LoadError
    from mlir_rl_tui.engine.ir.program import first_diagnostic
    from mlir_rl_tui.engine.ir.text_check import check_text

    problem = check_text(text, "<input>")
    if problem:
        raise LoadError(problem)
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        try:
            m = ir.Module.parse(text)
        except ir.MLIRError as e:
            raise LoadError(f"<input>: not valid MLIR: {first_diagnostic(e)}") from None
        for op in list(m.body.operations):
            if op.operation.name.startswith("transform."):
                op.operation.erase()
        if "transform.with_named_sequence" in m.operation.attributes:
            del m.operation.attributes["transform.with_named_sequence"]
        return str(m)
