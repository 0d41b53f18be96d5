"""Loading that cannot kill the caller: user MLIR is parsed in a guarded loader process.

MLIR's parser in the pip wheels aborts (LLVM assertions) on files cut inside a `dense_resource` blob
or a region, and overflows its stack on deeply nested input. So the text is parsed and described in
`engine.ir.load_worker`, a small process started on first use and reused (one Python start, not one per
load), with a time-out and a memory limit; when it dies the caller gets one line naming the cause and
the next request starts a fresh one. Special files (FIFO, device, directory, socket) are refused
before they are opened: reading a FIFO blocks forever.
"""

from __future__ import annotations

import atexit
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Callable

from mlir_rl_tui.engine.errors import EngineError, EntryError, LoadError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.run.child import Child, ChildDied, ChildTimeout, log_lines, signal_name

_ENGINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the engine's folder (BOOT)

#: Files larger than this are refused before they are read.
MAX_FILE_BYTES = 1 << 30
#: Address-space limit of the loader process (Python and MLIR take about 0.4 GiB of it idle; a parse
#: needs a few times the text).
MEMORY_LIMIT = 8 << 30
#: Time-out of one request: this much, plus a second per 5 MB of text.
TIMEOUT_S = 20.0
START_TIMEOUT_S = 60.0

#: Starts the loader without running the engine's `__init__` (it imports numpy and the measurement engine,
#: 0.1-0.2 s the loader does not need): `mlir_rl_tui.engine` is made a bare package over this folder.
BOOT = ("import sys, types; pkg = types.ModuleType('mlir_rl_tui.engine'); pkg.__path__ = [sys.argv[1]]; "
        "sys.modules['mlir_rl_tui.engine'] = pkg; "
        "from mlir_rl_tui.engine.ir.load_worker import main; main()")

Waiting = Callable[[float], None]

_SPECIAL = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


class LoaderProcess:
    """One `engine.ir.load_worker` process (an engine.run.child.Child), started on first use, reused,
    replaced when it dies."""

    def __init__(self, memory_limit: int = MEMORY_LIMIT) -> None:
        self.memory_limit = memory_limit
        self.child: Child | None = None
        self.owner = os.getpid()
        self.starts = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------
    def request(self, header: dict, text: str, name: str, timeout_s: float | None = None,
                on_wait: Waiting | None = None) -> dict:
        """Send one request (header + text), wait for its answer; LoadError (one line) if the process
        dies, does not answer in time, or cannot start."""
        payload = text.encode()
        timeout_s = timeout_s if timeout_s is not None else TIMEOUT_S + len(payload) / 5e6
        with self._lock:
            t0 = time.monotonic()
            child = self._ensure_started(name)
            child.clear_log()  # keep only this request's diagnostics
            try:
                child.send(json.dumps({**header, "nbytes": len(payload)}).encode() + b"\n", payload)
            except ChildDied:
                raise LoadError(self._death(name)) from None
            line = self._read_line(t0 + timeout_s, name, on_wait, t0)
        return json.loads(line)

    def close(self) -> None:
        with self._lock:
            self._kill()

    # ------------------------------------------------------------------------------------------
    def _ensure_started(self, name: str) -> Child:
        if self.owner != os.getpid():  # a forked child: the process belongs to the parent
            self.child, self.owner = None, os.getpid()
        if self.child is not None and self.child.alive():
            return self.child
        self._kill()
        env = dict(os.environ, MLIR_RL_LOADER_MEMORY=str(self.memory_limit or 0))
        self.child = Child([sys.executable, "-c", BOOT, _ENGINE], env, "mlir-rl-loader-")
        self.starts += 1
        ready = json.loads(self._read_line(time.monotonic() + START_TIMEOUT_S, name, None, 0.0))
        if ready.get("event") != "ready":
            self._kill()
            raise LoadError(f"{name}: the MLIR loader process did not start")
        return self.child

    def _read_line(self, deadline: float, name: str, on_wait: Waiting | None, t0: float) -> bytes:
        assert self.child is not None
        try:
            return self.child.read_line(deadline, on_wait=(lambda now: on_wait(now - t0)) if on_wait else None)
        except ChildTimeout:
            self._kill()
            raise LoadError(f"{name}: no answer from MLIR's parser within {deadline - t0:.0f} s; it was "
                            "stopped (the file is too large or pathological)") from None
        except ChildDied:
            raise LoadError(self._death(name)) from None

    def _death(self, name: str) -> str:
        """One line: how the process died, and what in the input typically does that."""
        assert self.child is not None
        rc = self.child.returncode()
        tail = _log_tail(self.child.log)
        self._kill()
        if "bad_alloc" in tail or "MemoryError" in tail or "out of memory" in tail.lower():
            return f"{name}: MLIR's parser ran out of memory (limit {self.memory_limit / 2**30:.0f} GiB)"
        sig = signal_name(rc)
        if sig:
            why = {"SIGABRT": "the file is probably cut off or malformed",
                   "SIGSEGV": "typically input nested too deeply, or malformed"}.get(sig, "malformed input")
            return f"{name}: MLIR's parser crashed ({sig}{': ' + tail if tail else ''}); {why}"
        return f"{name}: the MLIR loader process exited (status {rc}){': ' + tail if tail else ''}"

    def _kill(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None


def _log_tail(path: str | None) -> str:
    """The most telling line the process left on stderr: an assertion's message, or the last line."""
    lines = log_lines(path, 8192)
    for ln in reversed(lines):
        if "Assertion" in ln:
            quoted = ln.split('&& "')
            return quoted[-1].split('"')[0] if len(quoted) > 1 else ln[:200]
    return lines[-1][:200] if lines else ""


_default: LoaderProcess | None = None
_default_lock = threading.Lock()


def loader() -> LoaderProcess:
    """The process-wide loader (closed at exit)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LoaderProcess()
            atexit.register(_default.close)
        return _default


# ----------------------------------------------------------------------------------------------
def read_program_file(path: str) -> str:
    """The file's text; LoadError (one line) for special files, huge or binary files, read errors."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise LoadError(f"{path}: cannot read file ({e.strerror})") from None
    for test, what in _SPECIAL:
        if test(st.st_mode):
            raise LoadError(f"{path}: is {what}, not a regular file; expected a .mlir file")
    if st.st_size > MAX_FILE_BYTES:
        raise LoadError(f"{path}: {st.st_size / 2**30:.1f} GiB, more than the {MAX_FILE_BYTES / 2**30:.0f} GiB "
                        "limit for a program")
    try:
        # O_NONBLOCK: should the file have become a FIFO since stat, opening it does not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise LoadError(f"{path}: cannot read file ({e.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LoadError(f"{path}: not a regular file; expected a .mlir file")
        try:
            raw = f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise LoadError(f"{path}: cannot read file ({e.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise LoadError(f"{path}: more than the {MAX_FILE_BYTES / 2**30:.0f} GiB limit for a program")
    if b"\x00" in raw:
        raise LoadError(f"{path}: not MLIR text (binary data)")
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        raise LoadError(f"{path}: not MLIR text (binary data: byte {e.start} is not UTF-8)") from None


def load_text(text: str, name: str = "<input>", entry: str | None = None, on_wait: Waiting | None = None) -> Program:
    """Parse and describe `text` in the loader process; LoadError (EntryError when the entry function
    must be named) with one line on any failure."""
    if not text.strip():
        raise LoadError(f"{name}: empty file, expected an MLIR module with linalg ops")
    res = loader().request({"mode": "load", "name": name, "entry": entry}, text, name, on_wait=on_wait)
    if res.get("status") != "ok":
        if res.get("candidates"):
            raise EntryError(res["error"], res["candidates"])
        raise LoadError(res.get("error") or f"{name}: cannot be loaded")
    return Program.from_json(res["program"], text)


def load_file(path: str, entry: str | None = None, on_wait: Waiting | None = None) -> Program:
    """Read (refusing special files) and load a .mlir file."""
    prog = load_text(read_program_file(path), name=path, entry=entry, on_wait=on_wait)
    prog.path = path
    return prog


def guarded(mode: str, text: str, name: str = "<input>", **fields) -> dict:
    """Any other loader request (engine.ir.export); EngineError with the one-line error on failure."""
    res = loader().request({"mode": mode, "name": name, **fields}, text, name)
    if res.get("status") != "ok":
        raise EngineError(res.get("error") or f"{name}: {mode} failed")
    return res


class PendingLoad:
    """A load running in a thread, so the caller can do other work meanwhile (the app imports Textual
    while the loader parses)."""

    def __init__(self, path: str, entry: str | None = None) -> None:
        self._result: Program | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(path, entry), daemon=True, name="mlir-load")
        self._thread.start()

    def _run(self, path: str, entry: str | None) -> None:
        try:
            self._result = load_file(path, entry)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            self._error = e

    def result(self, on_wait: Waiting | None = None) -> Program:
        t0 = time.monotonic()
        while self._thread.is_alive():
            self._thread.join(0.1)
            if on_wait is not None and self._thread.is_alive():
                on_wait(time.monotonic() - t0)
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
