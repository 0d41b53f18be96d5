"""The worker's watchdog: a thread that ends the worker when its parent is gone, and stops a run that
goes over its time limit the moment it does.

A jitted kernel is called through ctypes, which releases the GIL, so this thread runs while a kernel
does. Stopping a run means answering `timeout` on the protocol and ending the process: a kernel cannot
be interrupted, and the pool (engine.run.pool) starts a fresh worker for the next request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

#: The thread wakes this often to see whether its parent is still there ...
POLL_S = 0.1
#: ... and sleeps no longer than this past a watched run's deadline.
LATE_S = 0.01
EXIT_TIMEOUT = 3  # exit status of a worker stopped by its watchdog
EXIT_ORPHAN = 4  # exit status of a worker whose parent died


class Watchdog:
    """One per worker process. `arm(limit, answer)` before a run, `disarm()` after it.

    `lock` guards the protocol stream: the watchdog checks that the run is still armed, sends
    `answer(elapsed)` and exits while holding it, so the worker never answers twice."""

    def __init__(self, parent: int, lock: threading.Lock, send: Callable[[dict], None]) -> None:
        self.parent = parent
        self.lock = lock
        self.send = send
        self._run: tuple[float, float, Callable[[float], dict]] | None = None  # start, deadline, answer
        self._thread = threading.Thread(target=self._loop, name="watchdog", daemon=True)

    def start(self) -> None:
        self._orphan_check()  # the parent may have died before this process got here
        self._thread.start()

    def arm(self, limit_s: float, answer: Callable[[float], dict]) -> None:
        """Watch the run starting now: past `limit_s`, send `answer(seconds since the start)` and exit."""
        now = time.monotonic()
        self._run = (now, now + limit_s, answer)

    def disarm(self) -> None:
        self._run = None

    def _orphan_check(self) -> None:
        if os.getppid() != self.parent:  # re-parented: the engine that started this worker is gone
            os._exit(EXIT_ORPHAN)

    def _loop(self) -> None:
        while True:
            self._orphan_check()
            run = self._run
            now = time.monotonic()
            if run is not None and now >= run[1]:
                self._stop(run)
            wait = POLL_S if run is None else min(POLL_S, max(run[1] - now, 0.0) + LATE_S)
            time.sleep(wait)

    def _stop(self, run: tuple[float, float, Callable[[float], dict]]) -> None:
        with self.lock:
            if self._run is not run:  # the run ended meanwhile (and may be answering)
                return
            try:
                self.send(run[2](time.monotonic() - run[0]))
            finally:
                os._exit(EXIT_TIMEOUT)
