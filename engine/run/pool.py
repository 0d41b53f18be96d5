"""Worker processes with a time-out and a memory limit; a dead worker is replaced, never fatal.

No worker outlives the process that started it: each watches its parent (engine.run.watchdog) and ends
when it is gone, kill -9 included. A worker that stopped a run over its limit answers `timeout` with
"exit": true and ends; the pool starts a fresh one for the next request."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from queue import Empty, Queue

Progress = Callable[[str, int, int], None]



def kill_group(proc: subprocess.Popen) -> None:
    """Kill a worker started in its own session, with everything it started (its process group), and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()

class WorkerDied(Exception):
    """The worker ended without answering (signal, abort, out of memory)."""


class WorkerTimeout(Exception):
    """The worker did not answer in time and was killed."""


class Cancelled(Exception):
    """The caller cancelled the request; the worker was killed."""


class Worker:
    """One `python -m mlir_rl_tui.engine.run.worker` process."""

    def __init__(self, memory_limit: int, nice: int = 0) -> None:
        self.memory_limit = memory_limit
        self.log = tempfile.NamedTemporaryFile(prefix="mlir-rl-worker-", suffix=".log", delete=False)
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
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mlir_rl_tui.engine.run.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, env=env, start_new_session=True)
        self.buf = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        ready = self._read(time.monotonic() + 60, None)
        if ready.get("event") != "ready":
            raise WorkerDied("worker did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self, deadline: float, cancel: threading.Event | None) -> dict:
        while True:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.strip():
                    return json.loads(line)
                continue
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                self.kill()
                raise Cancelled()
            if now >= deadline:
                self.kill()
                raise WorkerTimeout()
            events = self.sel.select(timeout=min(0.05, deadline - now))
            if events:
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    self.proc.wait()
                    raise WorkerDied(self.death_reason())
                self.buf += chunk

    def death_reason(self) -> str:
        rc = self.proc.returncode
        tail = ""
        try:
            with open(self.log.name, errors="replace") as f:
                lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
            for ln in reversed(lines):
                if "Assertion" in ln or "error" in ln.lower() or "LLVM ERROR" in ln:
                    tail = ln
                    break
        except OSError:
            pass
        if rc is not None and rc < 0:
            try:
                what = f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                what = f"killed by signal {-rc}"
        else:
            what = f"exited with status {rc}"
        return f"worker {what}" + (f": {tail[:300]}" if tail else "")

    def request(self, req: dict, on_progress: Progress | None, compile_timeout: float,
                run_timeout: float, cancel: threading.Event | None) -> dict:
        """Send one request and wait for its result; progress events reset the deadline."""
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.proc.wait()
            raise WorkerDied(self.death_reason()) from None
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
        kill_group(self.proc)

    def close(self) -> None:
        self.kill()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


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
        except (WorkerDied, WorkerTimeout, Cancelled):
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
