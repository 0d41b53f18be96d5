"""Worker processes with a time-out and a memory limit; a dead worker is replaced, never fatal.

No worker outlives the process that started it: each watches its parent (engine.run.watchdog) and ends
when it is gone, kill -9 included. A worker that stopped a run over its limit answers `timeout` with
"exit": true and ends; the pool starts a fresh one for the next request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from queue import Empty, Queue

from mlir_rl_tui.engine.run.child import Cancelled, Child, ChildDied, ChildTimeout, exit_words, log_lines

Progress = Callable[[str, int, int], None]


class Worker:
    """One `python -m mlir_rl_tui.engine.run.worker` process."""

    def __init__(self, memory_limit: int, nice: int = 0) -> None:
        self.memory_limit = memory_limit
        env = dict(os.environ)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("KMP_WARNINGS", "0")
        # OpenMP threads pinned one per core: unpinned, a third of the 2-thread runs had both threads on
        # one core, exactly 2x slower (reference/codegen-spike); the worker pins the main thread itself
        cores = len(os.sched_getaffinity(0))
        env.setdefault("OMP_NUM_THREADS", str(cores))
        if env.pop("MLIR_RL_TUI_UNPINNED", None):  # set by mlir_rl_tui.torch.load for the caller's own threads
            env.pop("KMP_AFFINITY", None)
        env.setdefault("KMP_AFFINITY", "granularity=fine,compact")
        env.setdefault("KMP_BLOCKTIME", "0")  # threads sleep at once, but while timing (worker._spinning)
        # A kernel's buffers come from the heap and stay there between runs: by default glibc gives the top of
        # its heap back to the system when a kernel frees it, and the next run faults every page in again,
        # as often as the heap's layout makes it (a MobileNetV3 block: 1.0-1.2 ms a run, 0.32-0.37 ms
        # without). A library keeps its buffers itself (engine/run/kernel_alloc.c); these settle the JIT's.
        env.setdefault("MALLOC_TRIM_THRESHOLD_", str(1 << 30))
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 << 20))
        # No preexec_fn: it forces a full fork() of this (large) process while holding the GIL, which
        # froze the app's event loop; the worker sets its own limits first thing (engine.run.worker.main).
        env["MLIR_RL_WORKER_MEMORY"] = str(memory_limit or 0)
        env["MLIR_RL_WORKER_NICE"] = str(nice)
        env["MLIR_RL_WORKER_PARENT"] = str(os.getpid())  # the worker ends when this process is gone
        self.child = Child([sys.executable, "-m", "mlir_rl_tui.engine.run.worker"], env, "mlir-rl-worker-")
        self.proc = self.child.proc
        try:
            ready = self._read(time.monotonic() + 60, None)
        except ChildDied:
            raise ChildDied(f"the worker did not start: {self.death_reason()}") from None
        if ready.get("event") != "ready":
            raise ChildDied("the worker did not start")

    def alive(self) -> bool:
        return self.child.alive()

    def _read(self, deadline: float, cancel: threading.Event | None) -> dict:
        try:
            return json.loads(self.child.read_line(deadline, cancel))
        except ChildDied:
            self.proc.wait()
            raise ChildDied(self.death_reason()) from None

    def death_reason(self) -> str:
        """How the worker died, with the most telling line of its stderr."""
        tail = next((ln for ln in reversed(log_lines(self.child.log))
                     if "Assertion" in ln or "error" in ln.lower() or "LLVM ERROR" in ln), "")
        return f"worker {exit_words(self.proc.returncode)}" + (f": {tail[:300]}" if tail else "")

    def request(self, req: dict, on_progress: Progress | None, compile_timeout: float,
                run_timeout: float, cancel: threading.Event | None) -> dict:
        """Send one request and wait for its result; progress events reset the deadline."""
        try:
            self.child.send((json.dumps(req) + "\n").encode())
        except ChildDied:
            self.proc.wait()
            raise ChildDied(self.death_reason()) from None
        deadline = time.monotonic() + compile_timeout
        while True:
            msg = self._read(deadline, cancel)
            if msg.get("event") == "result":
                if msg.get("exit"):  # the worker's last word (its watchdog stopped a run): let it end
                    self.finish()
                return msg
            if msg.get("event") == "phase":
                phase = msg.get("phase", "")
                if on_progress is not None:
                    on_progress(phase, msg.get("i", 0), msg.get("n", 0))
                deadline = time.monotonic() + (run_timeout if phase in ("run", "retry") else compile_timeout)

    def finish(self, wait_s: float = 5.0) -> None:
        """Wait for a worker that said it is ending; kill it if it does not."""
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        self.child.kill()

    def close(self) -> None:
        self.child.close()


class WorkerPool:
    """A fixed number of workers shared by threads; each request takes one idle worker."""

    def __init__(self, size: int = 2, memory_limit: int = 8 << 30, nice: int = 0) -> None:
        self.size = max(1, size)
        self.memory_limit = memory_limit
        self.nice = nice
        self.idle: Queue = Queue()
        for _ in range(self.size):
            self.idle.put(None)  # started lazily
        self.restarts = 0
        self._closed = False
        self._all: list[Worker] = []
        self._lock = threading.Lock()

    def _take(self) -> Worker:
        while True:
            try:
                w = self.idle.get(timeout=0.5)
                break
            except Empty:
                if self._closed:
                    raise RuntimeError("worker pool is closed") from None
        if w is None or not w.alive():
            if w is not None:
                w.close()
            w = Worker(self.memory_limit, self.nice)
            with self._lock:
                self._all.append(w)
        return w

    def run(self, req: dict, on_progress: Progress | None = None, compile_timeout: float = 60.0,
            run_timeout: float = 60.0, cancel: threading.Event | None = None) -> dict:
        w = self._take()
        try:
            res = w.request(req, on_progress, compile_timeout, run_timeout, cancel)
        except (ChildDied, ChildTimeout, Cancelled):
            w.close()
            self.restarts += 1
            self.idle.put(None)
            raise
        if res.get("exit") or not w.alive():
            w.close()
            self.restarts += 1
            self.idle.put(None)
        else:
            self.idle.put(w)
        return res

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for w in self._all:
                w.close()
            self._all.clear()
