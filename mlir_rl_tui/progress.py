"""A progress line on stderr for anything that takes over a second: no silent 30 s.

On a terminal the line is rewritten in place and cleared at the end; otherwise (a log, a pipe) it is a
plain line, at most one every `every_s` seconds, and the same text again at most every `same_s` seconds
(an hours-long run waiting on one program writes a line a minute, not twelve), so logs stay short. A ticker thread shows the line
(and its elapsed time) even when nothing reports for a while, e.g. during one long baseline run.
The one progress line of the command line: every command that takes time shows its work through it.

    with ProgressLine() as line:
        line.update("search: 3 measured")
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from mlir_rl_tui.engine import units

#: What the engine's phases (engine.run.worker) mean to a user.
_PHASES = {"baseline": "compiling and running the baseline", "compile": "compiling",
           "transform": "transforming, compiling",
           "retry": "timing again: other processes used the cores it needs, or the host slowed them",
           "wait": "waiting for the cores: another process that shares this cache is timing a kernel",
           "roofline": "measuring this machine's roofline (once: the FMA peak and the bandwidth this program needs)"}


class ProgressLine:
    """Shows the last `update(text)` with the elapsed time, once `after_s` seconds have passed."""

    def __init__(self, stream: TextIO | None = None, after_s: float = 1.0, every_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, tty: bool | None = None,
                 tick_s: float | None = 0.5, same_s: float = 60.0) -> None:
        self.stream = stream or sys.stderr
        self.after_s, self.every_s, self.clock, self.tick_s = after_s, every_s, clock, tick_s
        self.same_s = same_s
        try:
            self.tty = self.stream.isatty() if tty is None else tty
        except (AttributeError, ValueError):
            self.tty = False
        self.start = clock()
        self.shown = False
        self.text = ""
        self._last_at = -1e9
        self._last_text = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def update(self, text: str) -> None:
        with self._lock:
            self.text = text
            self._render()
        if self.tick_s and self._ticker is None and not self._stop.is_set():
            self._ticker = threading.Thread(target=self._tick, daemon=True, name="progress-line")
            self._ticker.start()

    def log(self, text: str) -> None:
        """A line that stays (a log line); on a terminal it goes above the progress line."""
        with self._lock:
            if self.tty and self.shown:
                self._write("\r\033[K")
                self.shown = False
            self._write(text + "\n")
            if self.tty:
                self._render()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()

    def clear(self) -> None:
        """Stop ticking and erase the line on a terminal (a log keeps its lines)."""
        self._stop.set()
        with self._lock:
            if self.tty and self.shown:
                self._write("\r\033[K")
            self.shown = False

    def phase(self, what: str) -> Callable[[str, int, int], None]:
        """An `on_progress(phase, i, n)` callback for the engine that updates this line."""

        first_round_at: list[float | None] = [None]

        def on_progress(phase: str, i: int, n: int) -> None:
            if phase != "run":
                self.update(f"{what}: {_PHASES.get(phase, phase)}")
            elif not n:
                self.update(f"{what}: the first run")
            else:
                if i <= 1:
                    first_round_at[0] = self.clock()
                left = ""
                if 1 < i < n and first_round_at[0] is not None:  # the pace so far: the least rounds' time left
                    s = (self.clock() - first_round_at[0]) / (i - 1) * (n - i)
                    left = f", {units.left(s)}" if s >= 1 else ""
                self.update(f"{what}: timing, round {i} of at least {n}{left}")

        return on_progress

    # ------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self._lock:
                if not self._stop.is_set():
                    self._render()

    def _render(self) -> None:
        now = self.clock()
        elapsed = now - self.start
        if elapsed < self.after_s or not self.text:
            return
        line = f"{self.text} ({units.duration(elapsed)})"
        if self.tty:
            try:
                width = max(20, os.get_terminal_size(self.stream.fileno()).columns - 1)
            except (OSError, ValueError, AttributeError):
                width = 79
            self._write("\r\033[K" + line[:width])
        elif now - self._last_at >= (self.every_s if self.text != self._last_text else max(self.every_s, self.same_s)):
            self._write(line + "\n")
            self._last_at, self._last_text = now, self.text
        else:
            return
        self.shown = True

    def _write(self, s: str) -> None:
        try:
            self.stream.write(s)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed or odd stream: progress is optional
