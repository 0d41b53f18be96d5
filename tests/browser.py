"""Drive `mlir-rl-tui serve`'s page in a real headless Chromium (Playwright, Debian's chromium) and read the
visitor's screen from the page's own terminal.

textual-serve draws the app with xterm.js on a canvas, so the text is not in the DOM. The page keeps its
terminal in a closure; an init script catches it when the page's script assigns it (`this.terminal = new
Terminal(...)`), and the screen is read from that terminal's buffer: what the visitor sees, cell for cell.
Used by tests/test_browser.py and benchmarks/classroom.py."""

from __future__ import annotations

import os
import re
import shutil
import time

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# the first object that gets a `terminal` with a buffer is the page's terminal widget (textual.js)
CATCH_TERMINAL = """
Object.defineProperty(Object.prototype, 'terminal', {configurable: true, set(v) {
  if (v && v.buffer && !window.__terminal) window.__terminal = v;
  Object.defineProperty(this, 'terminal', {value: v, writable: true, configurable: true, enumerable: true});
}});
"""
READ_SCREEN = """() => {
  const t = window.__terminal; if (!t) return '';
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < t.rows; i++) { const l = b.getLine(b.viewportY + i); rows.push(l ? l.translateToString(true) : ''); }
  return rows.join('\\n');
}"""
NOW = re.compile(r"baseline ([\d.]+) ms\s+now ([\d.]+) ms")


def chromium() -> str | None:
    """The Chromium to drive: $CHROMIUM, or Debian's."""
    for path in (os.environ.get("CHROMIUM"), shutil.which("chromium"), shutil.which("chromium-browser")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def launch(playwright):
    return playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)


class Visitor:
    """One browser page on the served app."""

    def __init__(self, browser, url: str, size: tuple[int, int] = (1400, 900)) -> None:
        self.context = browser.new_context(viewport={"width": size[0], "height": size[1]})
        self.page = self.context.new_page()
        self.page.add_init_script(CATCH_TERMINAL)
        self.url = url

    def open(self) -> int:
        response = self.page.goto(self.url + "/")
        return response.status if response else 0

    def screen(self) -> str:
        return self.page.evaluate(READ_SCREEN)

    def status_line(self) -> str:
        return next((line for line in self.screen().splitlines() if "baseline" in line and " now " in line), "")

    def wait_for(self, predicate, timeout: float, poll: float = 0.05) -> float:
        """Seconds until `predicate(screen)` holds; TimeoutError after `timeout`."""
        start = time.monotonic()
        while True:
            screen = self.screen()
            if predicate(screen):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise TimeoutError(f"the page did not show it within {timeout:.0f} s; it shows:\n{screen}")
            time.sleep(poll)

    def press(self, *keys: str) -> None:
        """Keys to the app, as typed: the terminal's input gets the focus (no click: the app takes mouse events)."""
        self.page.focus(".xterm-helper-textarea")
        for k in keys:
            self.page.keyboard.press(k)

    def close(self) -> None:
        self.context.close()


def measured(status: str) -> float | None:
    """The current schedule's time on a status line, once it is measured ("now 1.234 ms")."""
    m = NOW.search(status)
    return float(m.group(2)) if m else None
