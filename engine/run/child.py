"""The one child-process layer: the engine's worker processes (engine.run.pool) and its MLIR loader
(engine.ir.loader) are each a `Child`; a command run to its end in a process of its own (a built library's
check, PyTorch's reference timing, the model blocks' export) is a `run_module`.

A child runs in its own session (`kill_group` takes it with everything it started), writes its stderr to a log
file of its own and answers JSON lines on stdout. `read_line` waits for one line with a deadline (and the
caller's cancel event, or a hook called while it waits); when the child dies, `exit_words` and `log_tail` say
how, in words a one-line error can carry ("killed by SIGSEGV", "exited with status 1", the assertion that
aborted it). What a death means for the caller (a crashed candidate, a malformed file) is the caller's to say.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


class ChildDied(Exception):
    """The child ended without answering (a signal, an abort, out of memory, a closed pipe)."""


class ChildTimeout(Exception):
    """The child did not answer before the deadline and was killed."""


class Cancelled(Exception):
    """The caller cancelled the request; the child was killed."""


def kill_group(proc: subprocess.Popen) -> None:
    """Kill a child started in its own session, with everything it started (its process group), and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait()


def signal_name(rc: int | None) -> str | None:
    """The name of the signal that ended a process of return code `rc` ("SIGSEGV"), None if none did."""
    if rc is None or rc >= 0:
        return None
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def exit_words(rc: int | None) -> str:
    """How a process of return code `rc` ended: "killed by SIGKILL", "exited with status 1"."""
    sig = signal_name(rc)
    return f"killed by {sig}" if sig else f"exited with status {rc}"


def log_lines(path: str | None, last_bytes: int = 1 << 16) -> list[str]:
    """The non-empty lines of the end of a log file (none when it is gone)."""
    if not path:
        return []
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - last_bytes))
            return [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return []


@dataclass
class Ran:
    """A finished `run_module`: its return code and output, and `problem`, None when it exited 0, else one
    line (its time-out, how it ended, its last line on stderr)."""

    returncode: int | None
    stdout: str
    stderr: str
    problem: str | None


def run_module(module: str, args: list[str], timeout: float, env: dict[str, str] | None = None) -> Ran:
    """`python -m module args...` run to its end in its own session, its output captured; after `timeout`
    seconds it is killed with everything it started (`Ran.problem` says so)."""
    proc = subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return Ran(None, out, err, f"it did not finish in {timeout:.0f} s and was stopped")
    if proc.returncode == 0:
        return Ran(0, out, err, None)
    said = (err.strip().splitlines() or [""])[-1]
    if proc.returncode > 0:  # its own last word (an exit message, an exception), else its status
        said = said or (out.strip().splitlines() or [""])[-1]
        return Ran(proc.returncode, out, err, said or exit_words(proc.returncode))
    return Ran(proc.returncode, out, err, exit_words(proc.returncode) + (f": {said}" if said else ""))


class Child:
    """One child process answering JSON lines (`argv` with `env`; its stderr in a log named `prefix`...)."""

    def __init__(self, argv: list[str], env: dict[str, str], prefix: str) -> None:
        fd, self.log = tempfile.mkstemp(prefix=prefix, suffix=".log")
        os.close(fd)
        with open(self.log, "ab") as err:  # O_APPEND: clear_log between requests keeps it small
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env,
                                         start_new_session=True)
        self._buf = b""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, *parts: bytes) -> None:
        """Write to the child's stdin; ChildDied if it is gone."""
        try:
            for p in parts:
                self.proc.stdin.write(p)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ChildDied() from None

    def read_line(self, deadline: float, cancel: threading.Event | None = None,
                  on_wait: Callable[[float], None] | None = None) -> bytes:
        """The child's next non-empty line (without its newline), waited for until `deadline`
        (time.monotonic()); ChildTimeout after it, Cancelled when `cancel` is set (the child is killed in
        both), ChildDied when its stdout closes. `on_wait(now)` is called while waiting."""
        fd = self.proc.stdout.fileno()
        # chunks in a list, each searched once for the end of the line: an answer of a 90 MB model (a
        # ResNet-18's weights) arrives in thousands of pipe reads, and re-scanning a growing buffer per read
        # took minutes
        while True:
            chunks, found = [self._buf], b"\n" in self._buf
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while not found:
                    now = time.monotonic()
                    if cancel is not None and cancel.is_set():
                        self.kill()
                        raise Cancelled()
                    if now >= deadline:
                        self.kill()
                        raise ChildTimeout()
                    if on_wait is not None:
                        on_wait(now)
                    if sel.select(timeout=min(0.05, deadline - now)):
                        chunk = os.read(fd, 1 << 20)
                        if not chunk:
                            self._buf = b"".join(chunks)
                            raise ChildDied()
                        chunks.append(chunk)
                        found = b"\n" in chunk
            line, self._buf = b"".join(chunks).split(b"\n", 1)
            if line.strip():
                return line

    def returncode(self, wait_s: float = 5.0) -> int | None:
        """The child's return code, waited for up to `wait_s` (None: still running)."""
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def clear_log(self) -> None:
        """Keep only what the child writes from now on (one request's diagnostics)."""
        try:
            os.truncate(self.log, 0)
        except OSError:
            pass

    def kill(self) -> None:
        kill_group(self.proc)

    def close(self) -> None:
        """Kill the child, close its pipes and remove its log."""
        self.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.unlink(self.log)
        except OSError:
            pass
