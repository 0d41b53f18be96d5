"""Traces: JSONL, one record per step, appended and flushed per step (DESIGN.md "Traces").

A record: {"program", "program_sha256", "op", "step", "action", "observation", "mask", "source",
"measurement", "time"}, plus "episode" (several episodes may share a file) and "program_text" on an
episode's first record when the program has no file. A trace replays to the same schedule and is the
imitation-learning data.

A writer killed in the middle of a record leaves a cut last line. Readers drop it (`Trace.truncated`);
the next writer cuts it off before appending, so every whole record survives and the next record starts
on a line of its own.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass

from engine.errors import warn
from engine.schedule import Action, Schedule, parse_action

SOURCES = ("user", "policy", "search")


class TraceWriter:
    """Appends records, each written whole and fsynced, so a killed process loses at most the record it
    was writing. Appends hold an exclusive lock on the file (writers in other processes wait), and each
    first cuts off a last line a killed writer left unfinished."""

    def __init__(self, path: str) -> None:
        self.path = path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self.repaired = 0  # bytes of cut lines dropped

    def append(self, record: dict) -> None:
        self.append_all([record])

    def append_all(self, records: list[dict]) -> None:
        """The records in one write (an episode written this way is whole or cut in its last line)."""
        data = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
        locked = _lock(self.fd)
        try:
            self._repair()
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
        finally:
            if locked:
                fcntl.flock(self.fd, fcntl.LOCK_UN)

    def _repair(self) -> None:
        """Cut the file after its last newline when it does not end with one (a writer was killed)."""
        size = os.fstat(self.fd).st_size
        if size == 0 or os.pread(self.fd, 1, size - 1) == b"\n":
            return
        end = size
        keep = 0
        while end > 0:
            start = max(0, end - (1 << 16))
            chunk = os.pread(self.fd, end - start, start)
            i = chunk.rfind(b"\n")
            if i >= 0:
                keep = start + i + 1
                break
            end = start
        os.ftruncate(self.fd, keep)
        self.repaired += size - keep
        warn(f"trace {self.path}: dropped a cut last line ({size - keep} bytes; a writer was killed mid-record)")

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


def make_record(program_path: str | None, program_sha256: str, op: str, step: int, action: Action | str,
                observation, mask, source: str, measurement: dict | None) -> dict:
    """One trace line; observation and mask are lists (numpy arrays are converted)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}")
    obs = observation.tolist() if hasattr(observation, "tolist") else observation
    if isinstance(mask, tuple | list):
        mask = [m.tolist() if hasattr(m, "tolist") else m for m in mask]
    return {"program": program_path or program_sha256, "program_sha256": program_sha256, "op": op, "step": step,
            "action": str(action), "observation": obs, "mask": mask, "source": source,
            "measurement": measurement, "time": time.time()}


@dataclass
class Episode:
    """The records of one episode (one program, one schedule) in step order."""

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

    def episodes(self) -> list[Episode]:
        """Records grouped by (episode, program) in file order; records without "episode" share one."""
        groups: dict[tuple, Episode] = {}
        for r in self.records:
            key = (r.get("episode", 0), r["program_sha256"])
            if key not in groups:
                groups[key] = Episode(r.get("program") or r["program_sha256"], r["program_sha256"], [])
            groups[key].records.append(r)
        for e in groups.values():
            e.records.sort(key=lambda r: r.get("step", 0))
        return list(groups.values())

    def schedules(self) -> dict[str, Schedule]:
        """program sha256 -> the schedule of its last episode."""
        return {e.program_sha256: e.schedule for e in self.episodes()}


def write_schedule(path: str, program, schedule: Schedule, source: str, measurement=None,
                   limits=None, openmp: bool = True, episode: int | None = None) -> int:
    """Append a whole schedule as one episode: each action with the observation and mask before it;
    the measurement goes on the last record. Returns the number of records written."""
    from engine.actions import flat_mask
    from engine.config import DEFAULT_LIMITS
    from engine.session import Session

    limits = limits or DEFAULT_LIMITS
    if episode is None:
        episode = _next_episode(path)
    sess = Session(program, limits=limits, openmp=openmp)
    steps = [(o.id, a) for o in program.ops for a in schedule.actions(o.id)]
    m = measurement.to_json() if hasattr(measurement, "to_json") else measurement
    records = []
    for i, (op_id, a) in enumerate(steps):
        rec = make_record(program.path, program.sha256, op_id, i, a, sess.observation(),
                          flat_mask(sess.mask(), limits), source, m if i == len(steps) - 1 else None)
        rec["episode"] = episode
        if program.path is None and i == 0:
            rec["program_text"] = program.text
        records.append(rec)
        sess = sess.apply(a)
    with TraceWriter(path) as w:  # the episode in one write: whole, or cut in its last line
        w.append_all(records)
    return len(steps)


def _next_episode(path: str) -> int:
    if not os.path.exists(path):
        return 0
    eps = [r.get("episode", 0) for r in read_trace(path).records]
    return max(eps) + 1 if eps else 0


MAX_TRACE_BYTES = 1 << 30  # largest trace read (a record with its observation is ~40 KB)
MAX_RECORD_CHARS = 64 << 20  # longest line parsed (a record may carry its program's text)


def _is_record(r) -> bool:
    """The fields a replay reads, of the types it expects."""
    return (isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("program_sha256", "op", "action"))
            and all(isinstance(r.get(k, 0), int) for k in ("step", "episode"))
            and all(isinstance(r.get(k) or "", str) for k in ("program", "program_text"))
            and isinstance(r.get("measurement") or {}, dict))


def read_trace(path: str) -> Trace:
    """Read whole lines; a last line cut off mid-write is dropped and reported as truncated. A line that is
    not a JSON record with the fields a replay needs (or is too long) counts as a bad line."""
    size = os.path.getsize(path)
    if size > MAX_TRACE_BYTES:
        from engine.errors import EngineError

        raise EngineError(f"{path}: {size >> 20} MB is larger than a trace may be ({MAX_TRACE_BYTES >> 20} MB); "
                          "split it into several files")
    with open(path, encoding="utf-8", errors="replace") as f:
        data = f.read()
    lines = data.split("\n")
    truncated = bool(lines and lines[-1].strip())
    if truncated:
        lines = lines[:-1]
    records, bad = [], 0
    for ln in lines:
        if not ln.strip():
            continue
        try:
            r = json.loads(ln) if len(ln) <= MAX_RECORD_CHARS else None
        except (json.JSONDecodeError, RecursionError):
            r = None
        if _is_record(r):
            records.append(r)
        else:
            bad += 1
    return Trace(records, truncated, bad)
