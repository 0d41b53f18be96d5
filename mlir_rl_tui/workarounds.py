"""The app's work-arounds for Textual's costs, each with a switch to measure the app without it.

Each one reads private Textual internals (textual==8.2.8, pinned in pyproject.toml) to keep a frame short;
`benchmarks/app_responsiveness.py --off NAME` runs the app with NAME off (the public-API way) and the
README's "What the app's work-arounds buy" table says what each one measured. Names:

- `idle_gc`: full garbage collections only between frames (mlir_rl_tui/idle_gc.py); off: CPython's own.
- `stable_footer`: a Footer recomposed only when its keys change (widgets/footer.py); off: Textual's Footer.
- `rendered_static`: panels built and rendered by Rich in a thread worker (widgets/cached.py); off: built
  and rendered on the event loop by `Static.update`.
- `prepared_ir`: MLIR parsed and highlighted in a thread worker (widgets/ir_view.py); off:
  `TextArea.load_text` with the MLIR language registered, on the event loop.

`MLIR_RL_TUI_OFF=idle_gc,prepared_ir` (comma-separated) turns work-arounds off for one run.
"""

from __future__ import annotations

import os

NAMES: tuple[str, ...] = ("idle_gc", "stable_footer", "rendered_static", "prepared_ir")
ENV = "MLIR_RL_TUI_OFF"


def off() -> frozenset[str]:
    """The work-arounds turned off for this process (unknown names are ignored)."""
    return frozenset(n.strip() for n in os.environ.get(ENV, "").split(",")) & set(NAMES)


def on(name: str) -> bool:
    assert name in NAMES, name
    return name not in off()
