"""The app's two work-arounds on Textual's private internals, each with a switch to measure the app without it.

Both read private Textual internals (textual==8.2.8, pinned in pyproject.toml) to keep frames short;
`benchmarks/app_responsiveness.py --off NAME` runs the app with NAME off (the public-API way); the README's
"App responsiveness" says what each one measured. Two more (a footer recomposed only when its keys change,
panels rendered by Rich in thread workers) measured no difference and were removed. Names:

- `idle_gc`: full garbage collections only between frames (mlir_rl_tui/idle_gc.py); off: CPython's own.
- `prepared_ir`: MLIR parsed and highlighted in a thread worker (widgets/ir_view.py); off:
  `TextArea.load_text` with the MLIR language registered, on the event loop.

`MLIR_RL_TUI_OFF=idle_gc,prepared_ir` (comma-separated) turns work-arounds off for one run.
"""

from __future__ import annotations

import os

NAMES: tuple[str, ...] = ("idle_gc", "prepared_ir")
ENV = "MLIR_RL_TUI_OFF"


def off() -> frozenset[str]:
    """The work-arounds turned off for this process (unknown names are ignored)."""
    return frozenset(n.strip() for n in os.environ.get(ENV, "").split(",")) & set(NAMES)


def on(name: str) -> bool:
    assert name in NAMES, name
    return name not in off()
