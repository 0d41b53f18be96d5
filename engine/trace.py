"""Traces: JSONL, one record per step, appended and flushed per step (DESIGN.md "Traces").

A record: {"program", "program_sha256", "op", "step", "action", "observation", "mask", "source",
"measurement", "time"}; a trace replays to the same schedule and is the imitation-learning data.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from engine.schedule import Action, Schedule, parse_action

SOURCES = ("user", "policy", "search")


class TraceWriter:
    """Appends records and flushes (and fsyncs) each one, so a killed process loses at most one line."""

    def __init__(self, path: str) -> None:
        self.path = path
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        self.f = open(path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self.f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        self.f.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *a) -> None:
        self.close()


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
class Trace:
    records: list[dict]
    truncated: bool  # the file ended in the middle of a line (writer killed)
    bad_lines: int = 0

    def schedules(self) -> dict[str, Schedule]:
        """program sha256 -> the schedule the trace's actions build, in step order."""
        out: dict[str, dict[str, list[Action]]] = {}
        for r in sorted(self.records, key=lambda r: r.get("step", 0)):
            out.setdefault(r["program_sha256"], {}).setdefault(r["op"], []).append(parse_action(r["action"]))
        return {k: Schedule(v) for k, v in out.items()}


def read_trace(path: str) -> Trace:
    """Read whole lines; a last line cut off mid-write is dropped and reported as truncated."""
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
            records.append(json.loads(ln))
        except json.JSONDecodeError:
            bad += 1
    return Trace(records, truncated, bad)
