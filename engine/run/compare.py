"""The one comparison of a program's output with a reference (the untransformed program's or PyTorch's), by
the one tolerance rule of engine.config.MeasureConfig (`rtol`, `atol_scale`): the worker's check of every
measurement and `mlir_rl_tui.runtime.verify`'s check of a built library both call it."""

from __future__ import annotations

import numpy as np


def compare(out: np.ndarray, ref: np.ndarray, rtol: float, atol_scale: float) -> tuple[bool, str]:
    """(agree, why not): integers exactly; floats elementwise within rtol plus atol = atol_scale * max(1,
    max|ref| over its finite values), NaN where the reference has NaN. The message names "the baseline"; a
    caller comparing with another reference says so in its own words."""
    if out.shape != ref.shape:
        return False, f"result shape {out.shape} differs from the baseline's {ref.shape}"
    if out.dtype.kind in "biu":
        bad = int(np.count_nonzero(out != ref))
        return bad == 0, f"{bad} of {out.size} elements differ from the baseline"
    a, b = out.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(b)
    scale = float(np.abs(b[finite]).max()) if finite.any() else 1.0
    atol = atol_scale * max(1.0, scale)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return True, ""
    bad = int(close.size - np.count_nonzero(close))
    worst = float(np.nanmax(np.abs(a - b)))
    return False, f"{bad} of {out.size} elements differ from the baseline (max abs error {worst:.3g})"
