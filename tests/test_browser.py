"""`mlir-rl-tui serve` in a real browser: headless Chromium (Debian's `chromium`, which `scripts/setup --test`
installs) opens the page, the op tree renders, keys apply a step and the status line shows its new time, all
read from the page's own terminal (tests/browser.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from browser import Visitor, chromium, launch, measured

pytest.importorskip("textual_serve")
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (the test extra)")
if chromium() is None:
    pytest.skip("no Chromium: scripts/setup --test installs Debian's chromium (apt-get), or set $CHROMIUM",
                allow_module_level=True)

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MLIR_RL_TUI_CACHE": str(tmp_path / "cache")}
    p = subprocess.Popen([sys.executable, "-m", "mlir_rl_tui", "serve", "matmul", "--host", "127.0.0.1",
                          "--port", str(port), "--max-visitors", "1"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        end = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert p.poll() is None, p.communicate()[1]
                assert time.monotonic() < end, "the server did not listen within 60 s"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(30)


def test_in_chromium_the_tree_renders_and_a_key_press_applies_a_measured_step(served):
    with sync_api.sync_playwright() as pw:
        browser = launch(pw)
        try:
            visitor = Visitor(browser, served)
            assert visitor.open() == 200
            assert "measured on" in visitor.page.title()  # the page names the machine that measures
            visitor.wait_for(lambda s: "op0 matmul 256x256x256" in s and "state untouched" in s, timeout=120)
            visitor.wait_for(lambda s: measured(visitor.status_line()) is not None, timeout=120)  # the baseline
            before = visitor.status_line()
            assert "speedup 1.00x" in before, before

            visitor.press("t", "x")  # tile op0 with the do row's sizes, apply
            visitor.wait_for(lambda s: "T(" in s and "state scheduled" in s, timeout=30)  # the step is in the tree
            # its own figure: the status line names the measured schedule (the baseline's line names none)
            visitor.wait_for(lambda s: " ok " in visitor.status_line() and "op0: T(" in visitor.status_line()
                             and measured(visitor.status_line()) is not None, timeout=180)
            after = visitor.status_line()
            assert measured(after) > 0 and "GFLOP/s" in after and "validated" in after, after

            second = Visitor(browser, served)  # the class holds one visitor: a second one gets the full page
            assert second.open() == 503 and "The class is full" in second.page.content()
        finally:
            browser.close()
