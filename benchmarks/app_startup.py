"""Start to first paint of the app (goal: < 2 s), as a user runs it: a fresh interpreter each time.

The parent stamps the wall clock and starts `mlir-rl-tui`'s path (load the file, build the app, run it
headless); the child exits right after the main screen's first refresh and prints the elapsed time.
The real engine adapter is used: its worker processes start in the background and are not waited for.

    .venv/bin/python benchmarks/app_startup.py [FILE] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(path: str, t0: float) -> None:
    # what `mlir-rl-tui FILE` does (mlir_rl_tui.commands.open: load, then run_app), headless and ending at the first paint
    from mlir_rl_tui.idle_gc import pause_for_startup

    pause_for_startup()
    from mlir_rl_tui.app import make_app
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.screens.main import MainScreen

    prog = load_file(path)
    app = make_app(prog)
    painted: list[float] = []

    def first_paint() -> None:
        painted.append(time.time() - t0)
        app.exit()

    orig = MainScreen.on_mount

    def on_mount(self: MainScreen) -> None:
        orig(self)
        self.call_after_refresh(first_paint)

    MainScreen.on_mount = on_mount  # type: ignore[method-assign]
    try:
        app.run(headless=True, size=(120, 40))
    finally:
        app.adapter.close()
    print(f"{painted[0]:.3f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", default=os.path.join(ROOT, "samples", "matmul.mlir"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--child", type=float, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        child(a.file, a.child)
        return 0
    times = []
    for _ in range(a.runs):
        t0 = time.time()
        out = subprocess.run([sys.executable, __file__, a.file, "--child", repr(t0)], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    print(f"start to first paint ({os.path.basename(a.file)}, {a.runs} runs): median {statistics.median(times):.2f} s,"
          f" min {min(times):.2f} s, max {max(times):.2f} s (goal < 2 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
