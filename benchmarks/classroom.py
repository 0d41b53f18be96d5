"""A classroom on one machine: how responsive `mlir-rl-tui serve` stays with three visitors at once, and how their
measurements share the cores (queued, and flagged when they contend).

Each round starts a fresh server (a fresh measurement cache, so every figure is really compiled and timed) on
the matmul sample and drives it from headless Chromium (tests/browser.py reads each page's screen from its own
terminal). Two kinds of round, alternated: **alone**, one visitor applies the three steps T, TP and TF one
after the other (undoing in between); **three**, three visitors apply one of them each at the same moment.
For every step it records the seconds from the key press to the figure on the page, and, while the step is
being measured, the page's echo: the seconds from pressing a view key (`4` loops, `1` orig) to the IR panel showing that view. Every status line the page showed is kept, so the report counts the figures flagged
"contended" and the steps that waited for another visitor's timing.

    .venv/bin/python benchmarks/classroom.py [--rounds 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from browser import Visitor, chromium, launch, measured  # noqa: E402

POLL = 0.05  # seconds between looks at the pages (each look reads the screen in the page: light, not free)
PROBE_EVERY = 1.0  # seconds between echo probes of one page
STEPS = {"T": ("t", "x"), "TP": ("p", "x"), "TF": ("f", "x")}


def serve(cache: str, visitors: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "mlir_rl_tui", "serve", "matmul", "--host", "127.0.0.1", "--port",
                          str(port), "--max-visitors", str(visitors)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env={**os.environ, "MLIR_RL_TUI_CACHE": cache},
                         start_new_session=True)
    end = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return p, f"http://127.0.0.1:{port}"
        except OSError:
            if p.poll() is not None or time.monotonic() > end:
                raise SystemExit("the server did not start") from None
            time.sleep(0.2)


ORIGINAL = "// Matrix multiplication C = A @ B"  # the first line of the sample, in the IR panel's `1 orig` view


def shows_original(screen: str) -> bool:
    return ORIGINAL in screen


class Run:
    """One visitor's step: press its keys, then watch its status line and probe the echo until the figure."""

    def __init__(self, visitor: Visitor, step: str) -> None:
        self.visitor, self.step = visitor, step
        self.seen: list[str] = []
        self.echo: list[float] = []
        self.figure_s: float | None = None
        self.start = 0.0

    def begin(self) -> None:
        self.start = time.monotonic()
        self.visitor.press(*STEPS[self.step])
        self.probe: tuple[float, bool] | None = None  # (pressed at, the view it should show)
        self.measuring = False
        self.next_probe = 0.0

    def poll(self) -> bool:
        """One look at the page; True once the figure is there."""
        screen = self.visitor.screen()
        status = next((ln for ln in screen.splitlines() if "baseline" in ln and " now " in ln), "")
        if not self.seen or self.seen[-1] != status:
            self.seen.append(status)
        if self.probe is not None and shows_original(screen) == self.probe[1]:
            self.echo.append(time.monotonic() - self.probe[0])
            self.probe = None
        self.measuring = self.measuring or " now - " in status
        if self.measuring and " ok " in status and measured(status) is not None:
            self.figure_s = time.monotonic() - self.start
            return True
        if self.probe is None and " now - " in status and time.monotonic() > self.next_probe:
            # while it measures, once a second: does the page still answer?
            self.next_probe = time.monotonic() + PROBE_EVERY
            back = not shows_original(screen)  # switch the IR panel between the `1 orig` and `4 loops` views
            self.probe = (time.monotonic(), back)
            self.visitor.press("1" if back else "4")
        return False


def drive(runs: list[Run], timeout: float = 300.0) -> None:
    for r in runs:
        r.begin()
    end = time.monotonic() + timeout
    pending = list(runs)
    while pending and time.monotonic() < end:
        pending = [r for r in pending if not r.poll()]
        time.sleep(POLL)
    for r in runs:  # each page back at the untouched program, for the next step
        r.visitor.press("u", "1")


def round_(browser, kind: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as cache:
        server, url = serve(cache, 3)
        visitors: list[Visitor] = []
        try:
            visitors += [Visitor(browser, url) for _ in range(1 if kind == "alone" else 3)]
            for v in visitors:
                v.open()
            for v in visitors:
                v.wait_for(lambda s, v=v: measured(v.status_line()) is not None, timeout=180)
            runs = []
            if kind == "alone":
                for step in STEPS:
                    r = Run(visitors[0], step)
                    drive([r])
                    time.sleep(1.0)
                    runs.append(r)
            else:
                runs = [Run(v, step) for v, step in zip(visitors, STEPS, strict=True)]
                drive(runs)
            return [{"round": kind, "step": r.step, "figure_s": r.figure_s, "echo_s": r.echo,
                     "contended": any("contended" in s for s in r.seen),
                     "waited": any("another process is timing" in s for s in r.seen),
                     "status": r.seen[-1].strip() if r.seen else ""} for r in runs]
        finally:
            for v in visitors:
                v.close()
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)


def spread(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    return f"median {statistics.median(xs):.3f}  max {xs[-1]:.3f}  (n={len(xs)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of each kind, alternated (default: 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if chromium() is None:
        raise SystemExit("no chromium: apt-get install chromium (or set $CHROMIUM)")
    from playwright.sync_api import sync_playwright

    rows: list[dict] = []
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            for _ in range(args.rounds):
                for kind in ("alone", "three"):
                    rows += round_(browser, kind)
        finally:
            browser.close()
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for kind in ("alone", "three"):
        rs = [r for r in rows if r["round"] == kind]
        print(f"{kind}: key press -> figure on the page, s: {spread([r['figure_s'] for r in rs if r['figure_s']])}")
        print(f"{kind}: echo while measuring (view key -> view shown), s: "
              f"{spread([e for r in rs for e in r['echo_s']])}")
        print(f"{kind}: {sum(r['contended'] for r in rs)} of {len(rs)} figures flagged contended, "
              f"{sum(r['waited'] for r in rs)} waited for another's timing, "
              f"{sum(r['figure_s'] is None for r in rs)} never showed a figure")
    for r in rows:
        print(f"  {r['round']:5} {r['step']:3} {r['figure_s'] or float('nan'):7.2f} s  {r['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
