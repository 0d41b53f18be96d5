"""Traces: JSONL, one record per step (docs/search.md, "Traces"). The one writer and the one reader.

A record: {"program", "program_sha256", "op", "step", "action", "observation", "mask", "source",
"measurement", "time", "episode"}, plus "program_text" on an episode's first record when the program has
no file. Several episodes (one program, one schedule each) may share a file; a trace replays to the same
schedules and is the imitation-learning data. Records without "episode" (older traces) read as episode 0.

Writing: every writer (the env's `RecordTrace` wrapper, `search --trace`, the app's workspace)
goes through `TraceRecorder`; records are built here only (`_record`):

```python
rec = TraceRecorder("t.jsonl")               # appends; opens (creates) the file
h = rec.step(program, "op0", action, session.observation(), flat_mask(session.mask()), "user")
rec.measured(h, measurement.to_json())       # or None: no measurement is coming for this step
rec.new_episode()                            # the next step starts another episode (a reset)
rec.discard(h)                               # undo of a step not written yet (False: already in the file)
rec.close()                                  # writes the steps still waiting, without a measurement
```
- `step` records the observation and mask from before the action and returns a handle; the record is
  written once its measurement is known: `measured(h, m)` writes h and every earlier step still waiting
  (those keep no measurement: a later state was measured first, so theirs is not coming), in step order,
  in one write. A step of another program than the episode's starts a new episode.
- Episodes are numbered after every episode already in the file, when their first record is written,
  under the file lock: recorders in several processes never share a number.
- The handle (`TraceStep`) holds its record (`.record`) and whether it is in the file (`.written`). To write
  a path again (an export, or recording switched on in the middle of a session), step a new recorder
  through it: `rec.measured(rec.step(...), m)` per step. A recorder may be used from several threads.
- `write_schedule(path, program, schedule, source, measurement)` writes a whole schedule as one episode
  (search results, imitation targets).
- `check_appendable(path)`, before a command appends to a file the user named: an existing file that is
  not a trace is an EngineError, so no writer cuts or appends to it.

Reading: `read_trace(path).episodes()` -> `TraceEpisode`s (records grouped by episode and program, in step
order; `.schedule`, `.measurement`, `.program_text`). Replay, behaviour cloning and tests read through it.

Robustness: each write appends whole records under an exclusive lock and fsyncs, so a killed writer loses at
most the write it was making. A write first cuts off a last line a killed writer left unfinished, so every
whole record survives and the next record starts on a line of its own; readers drop such a line
(`Trace.truncated`). Reads are limited in size (MAX_TRACE_BYTES, MAX_RECORD_CHARS), and a line that is
not a record of the expected shape is counted, never used (`Trace.bad_lines`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from mlir_rl_tui.engine.errors import EngineError, warn
from mlir_rl_tui.engine.schedule.notation import Action, Schedule, parse_action
from mlir_rl_tui.engine.store import bounded, jsonl

SOURCES = ("user", "policy", "search")
MAX_TRACE_BYTES = 1 << 30  # largest trace read (a record with its observation is ~40 KB)
MAX_RECORD_CHARS = 64 << 20  # longest line parsed (a record may carry its program's text)


# ----------------------------------------------------------------------------------------------
# Writing
def _record(program_path: str | None, program_sha256: str, op: str, step: int, action: Action | str,
            observation, mask, source: str, measurement: dict | None) -> dict:
    """The one place a trace record is built; observation and mask become lists (numpy arrays too)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}")
    obs = observation.tolist() if hasattr(observation, "tolist") else observation
    if isinstance(mask, tuple | list):
        mask = [m.tolist() if hasattr(m, "tolist") else m for m in mask]
    return {"program": program_path or program_sha256, "program_sha256": program_sha256, "op": op, "step": step,
            "action": str(action), "observation": obs, "mask": mask, "source": source,
            "measurement": measurement, "time": time.time()}


@dataclass(eq=False)
class _Episode:
    program: object  # engine.Program
    number: int | None = None  # given when its first record is written
    steps: int = 0
    written: int = 0


@dataclass(eq=False)
class TraceStep:
    """A recorded step (what `TraceRecorder.step` returns): its record and whether it is in the file."""

    record: dict
    episode: _Episode = field(repr=False)
    written: bool = False


class TraceRecorder:
    """Records steps of episodes into a trace file (see the module docstring for the API)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = TraceWriter(path)
        self._episode: _Episode | None = None
        self._waiting: list[TraceStep] = []
        self._lock = threading.Lock()

    def new_episode(self) -> None:
        """The next step starts a new episode."""
        with self._lock:
            self._episode = None

    def step(self, program, op: str, action: Action | str, observation, mask, source: str) -> TraceStep:
        """Record an action taken on `op` of `program`, with the observation and mask from before it."""
        with self._lock:
            ep = self._episode
            if ep is None or ep.program.sha256 != program.sha256:
                ep = self._episode = _Episode(program)
            r = _record(program.path, program.sha256, op, ep.steps, action, observation, mask, source, None)
            s = TraceStep(r, ep)
            ep.steps += 1
            self._waiting.append(s)
            return s

    def measured(self, step: TraceStep, measurement: dict | None) -> None:
        """Attach the step's measurement (JSON, or None for none) and write it with the steps before it."""
        with self._lock:
            if step.written or step not in self._waiting:
                return  # written earlier, without it (a later step was measured first), or discarded
            step.record["measurement"] = measurement
            n = self._waiting.index(step) + 1
            self._write(self._waiting[:n])
            del self._waiting[:n]

    def discard(self, step: TraceStep) -> bool:
        """Forget a step that is not written yet (an undo); False when it is already in the file."""
        with self._lock:
            if step not in self._waiting:
                return False
            self._waiting.remove(step)
            if step.record["step"] == step.episode.steps - 1:
                step.episode.steps -= 1
            return True

    def flush(self) -> None:
        """Write every step still waiting for a measurement, without one."""
        with self._lock:
            if self._waiting:
                self._write(self._waiting)
                self._waiting = []

    def close(self) -> None:
        self.flush()
        self._file.close()

    def __enter__(self) -> TraceRecorder:
        return self

    def __exit__(self, *a) -> None:
        self.close()

    def _write(self, steps: list[TraceStep]) -> None:
        with self._file.locked():
            for s in steps:
                ep, r = s.episode, s.record
                if ep.number is None:
                    ep.number = self._file.next_episode()
                r["episode"] = ep.number
                if ep.written == 0 and ep.program.path is None:
                    r["program_text"] = ep.program.text
                ep.written += 1
            self._file.write([s.record for s in steps])
        for s in steps:
            s.written = True


class TraceWriter:
    """The trace file: appends whole records and fsyncs, under an exclusive lock (writers in other
    processes wait); each append first cuts off a last line a killed writer left unfinished. Records are
    built by `TraceRecorder`."""

    def __init__(self, path: str) -> None:
        self.path = path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self.repaired = 0  # bytes of cut lines dropped
        self._scanned = 0  # bytes of the file whose episode numbers are counted in _last_episode
        self._last_episode = -1
        self._locked = False

    def append(self, record: dict) -> None:
        self.append_all([record])

    def append_all(self, records: list[dict]) -> None:
        """The records in one write (an episode written this way is whole or cut in its last line)."""
        with self.locked():
            self.write(records)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the file lock, with a cut last line already repaired; `next_episode` and `write` inside."""
        have = _lock(self.fd)
        self._locked = True
        try:
            self._repair()
            yield
        finally:
            self._locked = False
            if have:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def next_episode(self) -> int:
        """A number after every episode in the file (and every one given out here); call it locked."""
        assert self._locked
        self._scan()
        self._last_episode += 1
        return self._last_episode

    def write(self, records: list[dict]) -> None:
        """Append the records in one write and fsync; call it locked."""
        assert self._locked
        before = os.fstat(self.fd).st_size
        written = jsonl.write_records(self.fd, records)
        if self._scanned == before:  # nothing unread before these records: count them without reading
            self._scanned = before + written
            self._last_episode = max([self._last_episode] + [_episode(r) for r in records])

    def _scan(self) -> None:
        """Count the episode numbers of the records appended since the last scan (by anyone)."""
        size = os.fstat(self.fd).st_size
        if size < self._scanned:  # the file was replaced or cut by someone else: read it again
            self._scanned, self._last_episode = 0, -1
        rest, too_long = b"", False  # the start of a line; a line over MAX_RECORD_CHARS is skipped
        pos = self._scanned
        while pos < size:
            chunk = os.pread(self.fd, min(1 << 20, size - pos), pos)
            if not chunk:
                break
            pos += len(chunk)
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for ln in lines:
                r = None if too_long else _parse(ln.decode("utf-8", "replace"))
                too_long = False
                if r is not None:
                    self._last_episode = max(self._last_episode, _episode(r))
            if len(rest) > MAX_RECORD_CHARS:
                rest, too_long = b"", True
        self._scanned = pos if too_long else pos - len(rest)  # a last line without its newline: read again

    def _repair(self) -> None:
        """Cut the file after its last newline when it does not end with one (a writer was killed)."""
        dropped = jsonl.cut_tail(self.fd)
        if dropped:
            self.repaired += dropped
            self._scanned = min(self._scanned, os.fstat(self.fd).st_size)
            warn(f"trace {self.path}: dropped a cut last line ({dropped} bytes; a writer was killed mid-record)")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *a) -> None:
        self.close()


def _lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    except OSError:  # a file system without flock: append unlocked
        return False


def _episode(r: dict) -> int:
    e = r.get("episode", 0)
    return e if isinstance(e, int) and not isinstance(e, bool) else 0


def schedule_steps(program, schedule: Schedule, limits=None, openmp: bool = True):
    """The steps that build `schedule`, as an agent takes them: (session before, op id, action), op by op in
    traversal order. An op whose actions do not end with V or NT gets an NT (the same schedule); an op
    finished early (fused into its consumer) is skipped. ScheduleError for an illegal schedule."""
    from mlir_rl_tui.engine.config import DEFAULT_LIMITS
    from mlir_rl_tui.engine.session import Session

    sess = Session(program, limits=limits or DEFAULT_LIMITS, openmp=openmp)
    for op in program.ops:
        acts = list(schedule.actions(op.id))
        if not acts or not acts[-1].terminal:
            acts.append(Action("NT"))
        for a in acts:
            if sess.current is None or sess.current.op.id != op.id:
                break
            yield sess, op.id, a
            sess = sess.apply(a)


def write_schedule(path: str, program, schedule: Schedule, source: str, measurement=None,
                   limits=None, openmp: bool = True) -> int:
    """Append a whole schedule as one episode, in one write (whole, or cut in its last line): each action
    with the observation and mask before it (`schedule_steps`); the measurement (a Measurement or its
    JSON) goes on the last record. Returns the number of records written."""
    from mlir_rl_tui.engine.config import DEFAULT_LIMITS
    from mlir_rl_tui.engine.rl.actions import flat_mask

    limits = limits or DEFAULT_LIMITS
    m = measurement.to_json() if hasattr(measurement, "to_json") else measurement
    steps = list(schedule_steps(program, schedule, limits, openmp))
    with TraceRecorder(path) as rec:
        handles = [rec.step(program, op, a, sess.observation(), flat_mask(sess.mask(), limits), source)
                   for sess, op, a in steps]
        if handles:
            rec.measured(handles[-1], m)
    return len(handles)


# ----------------------------------------------------------------------------------------------
# Reading
@dataclass
class TraceEpisode:
    """The records of one episode of a trace (one program, one schedule) in step order."""

    program: str  # path (or sha256 when the program had no file)
    program_sha256: str
    records: list[dict]

    @property
    def schedule(self) -> Schedule:
        ops: dict[str, list[Action]] = {}
        for r in self.records:
            ops.setdefault(r["op"], []).append(parse_action(r["action"]))
        return Schedule(ops)

    @property
    def measurement(self) -> dict | None:
        """The last recorded measurement of the episode (the final one for a finished episode)."""
        for r in reversed(self.records):
            if r.get("measurement"):
                return r["measurement"]
        return None

    @property
    def program_text(self) -> str | None:
        for r in self.records:
            if r.get("program_text"):
                return r["program_text"]
        return None


@dataclass
class Trace:
    records: list[dict]
    truncated: bool  # the file ended in the middle of a line (writer killed)
    bad_lines: int = 0

    def episodes(self) -> list[TraceEpisode]:
        """Records grouped by (episode, program) in file order; records without "episode" share episode 0."""
        groups: dict[tuple, TraceEpisode] = {}
        for r in self.records:
            key = (_episode(r), r["program_sha256"])
            if key not in groups:
                groups[key] = TraceEpisode(r.get("program") or r["program_sha256"], r["program_sha256"], [])
            groups[key].records.append(r)
        for e in groups.values():
            e.records.sort(key=lambda r: r.get("step", 0))
        return list(groups.values())

    def schedules(self) -> dict[str, Schedule]:
        """program sha256 -> the schedule of its last episode."""
        return {e.program_sha256: e.schedule for e in self.episodes()}


def _is_record(r) -> bool:
    """The fields a replay reads, of the types it expects."""
    return (isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("program_sha256", "op", "action"))
            and all(isinstance(r.get(k, 0), int) for k in ("step", "episode"))
            and all(isinstance(r.get(k) or "", str) for k in ("program", "program_text"))
            and isinstance(r.get("measurement") or {}, dict))


def _parse(line: str) -> dict | None:
    """A line as a record, or None (not JSON, too long, nested too deeply, not of a record's shape)."""
    if not line.strip() or len(line) > MAX_RECORD_CHARS:
        return None
    try:
        r = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    return r if _is_record(r) else None


def check_appendable(path: str) -> None:
    """Before appending to `path`: an EngineError (one line) when it exists and is not a trace, so that no
    writer cuts or appends to another file. A file is taken as a trace when it is empty, or when its first
    and last whole lines are records and what follows the last newline (a line a killed writer cut, which
    the next write drops) starts like one; a file that is not a regular one (a pipe, a device) is not read.
    Reads at most the first and the last line."""
    if not os.path.isfile(path):
        return
    try:
        with open(path, "rb") as f:
            first = f.readline(MAX_RECORD_CHARS + 1)
            size = f.seek(0, os.SEEK_END)
            tail = b""
            if first.endswith(b"\n") and size > len(first):  # the last whole line and a cut one after it
                pos = size
                while pos > len(first) and tail.count(b"\n") < 2 and len(tail) <= MAX_RECORD_CHARS:
                    step = min(1 << 16, pos - len(first))
                    pos -= step
                    f.seek(pos)
                    tail = f.read(step) + tail
    except OSError as e:
        raise EngineError(f"{path}: cannot read it to append a trace ({e.strerror})") from None
    if not first:
        return
    lines = ([first] + tail.split(b"\n")[-2:]) if tail else first.split(b"\n")
    cut = lines.pop()  # after the last newline: b"" when the file ends with one
    whole = [ln for ln in lines if ln.strip()]
    if any(_parse(ln.decode("utf-8", "replace")) is None for ln in whole[:1] + whole[-1:]) \
            or (cut.strip() and not cut.lstrip().startswith(b'{"')):
        raise EngineError(f"{path}: exists and is not a trace (its lines are not trace records); give "
                          "another file to append the trace to")


def read_trace(path: str) -> Trace:
    """Read whole lines; a last line cut off mid-write is dropped and reported as truncated. A line that is
    not a JSON record with the fields a replay needs (or is too long) counts as a bad line."""
    size = os.path.getsize(path)
    if size > MAX_TRACE_BYTES:
        raise EngineError(f"{path}: {size >> 20} MB is larger than a trace may be ({MAX_TRACE_BYTES >> 20} MB); "
                          "split it into several files")
    records, bad, truncated = [], 0, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for ln in bounded.lines(f, MAX_RECORD_CHARS):  # streamed: a line is held only up to MAX_RECORD_CHARS
            if ln is None:
                bad += 1
                continue
            if not ln.endswith("\n"):  # the last line, cut off mid-write
                truncated = bool(ln.strip())
                break
            if not ln.strip():
                continue
            r = _parse(ln)
            if r is not None:
                records.append(r)
            else:
                bad += 1
    return Trace(records, truncated, bad)
