"""The tuning database: what `mlir-rl-tui tune` learned, by workload and machine kind (as TVM's
MetaSchedule keeps one), in `tuning.sqlite` beside the measurement cache.

- `records`: every op schedule timed inside a model, (machine, workload, op schedule) -> the op's time in
  ms (its share of the model's per-op profile, engine.measure.per_op), the workload's label and description, the
  program it was timed in. The best known schedule of a workload is its fastest record.
- `tuned`: workloads whose tuning ended (machine, workload) -> the schedule it kept, how many
  measurements it took and how it ended (at a local optimum, cut by the deadline, too small to search, or
  not reached before the deadline). `tune` starts every workload from its best record and skips the tuned ones: a
  model whose workloads are all tuned is scheduled, checked and built without a search.

It checks itself like the cache (engine.store.cache.Store): the default file, when it is not this database, is
moved aside with one warning (a file the user named, `named`/`readonly`, never is: an EngineError), a row whose checksum or fields are wrong is never served (reported, deleted), a run
killed mid-write leaves the rows written before it (SQLite's journal). A record is only a starting
point: `tune` measures and checks every schedule it hands back, whatever the database said.

Shared as a file: `export` writes JSON lines (each record with its checksum), `import_file` merges such a
file, refusing lines whose checksum does not match; records of other machine kinds are kept and served
only on their kind.

Every record and tuning says who made it (`origin`): `here()` (this engine version timed it on this
machine) or `imported from FILE` (kept through later exports: a file passed on twice still names where
its rows came from). Rows of earlier versions have none ("" : unknown). Whatever the origin, a record only
ranks a start: `tune` measures, checks and validates here what it hands back.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, replace

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.store import bounded, jsonl
from mlir_rl_tui.engine.store.cache import MAX_ROW_CHARS, Store, checksum

TUNING_FILE = "tuning.sqlite"
#: The largest export `import_file` reads (a shared file is data, not a way to fill this machine's memory).
MAX_LINE_CHARS = 4 * MAX_ROW_CHARS  # longest line of an export read (a record, JSON-escaped, with its key)


@dataclass(frozen=True)
class Record:
    """One op schedule of one workload, timed on one machine kind."""

    machine: str
    workload: str
    schedule: str  # the op's actions, e.g. "TP(32,32,0) T(8,32,1) V" ("" untransformed)
    ms: float
    label: str = ""
    description: dict | None = None
    program: str = ""  # sha256 of the program it was timed in
    origin: str = ""  # who made it: here() or "imported from FILE" ("": an earlier version's row)


def here() -> str:
    """The origin of a row this engine version timed on this machine."""
    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION

    return f"timed here by engine {ENGINE_VERSION}"


def imported_from(path: str) -> str:
    import os

    return f"imported from {os.path.basename(path)}"


class TuningDB(Store):
    """The tuning database (one file per user, or the one `MLIR_RL_TUI_CACHE` names the folder of)."""

    TABLES = {
        "meta": "key TEXT PRIMARY KEY, value TEXT",
        "records": "machine TEXT, workload TEXT, schedule TEXT, record TEXT, checksum TEXT, created REAL, "
                   "PRIMARY KEY (machine, workload, schedule)",
        "tuned": "machine TEXT, workload TEXT, record TEXT, checksum TEXT, created REAL, "
                 "PRIMARY KEY (machine, workload)",
    }
    COLUMNS = {"meta": ["key", "value"],
               "records": ["machine", "workload", "schedule", "record", "checksum", "created"],
               "tuned": ["machine", "workload", "record", "checksum", "created"]}
    SCHEMA = "tuning-1"
    WHAT = "tuning database"
    FILE = TUNING_FILE
    AGAIN = "not served"

    # -- writing -----------------------------------------------------------------------------------
    def add(self, rec: Record) -> None:
        """Store a timed op schedule; a faster time of the same schedule replaces a slower one. A record
        without an origin is this engine's, timed here (`here()`)."""
        if not (math.isfinite(rec.ms) and rec.ms > 0):
            return
        key = {"machine": rec.machine, "workload": rec.workload, "schedule": rec.schedule}
        old = self._read("records", "record", key, None, f"record of {rec.label or rec.workload}")
        if old is not None and isinstance(old.get("ms"), int | float) and old["ms"] <= rec.ms:
            return
        self._write("records", key, {"ms": rec.ms, "label": rec.label, "description": rec.description,
                                     "program": rec.program, "origin": rec.origin or here()})

    def mark_tuned(self, machine: str, workload: str, schedule: str, ms: float, measurements: int,
                   label: str = "", state: str = "tuned", origin: str = "") -> None:
        """The workload's tuning ended with `schedule` (later runs start from it and skip the search):
        `state` "tuned" at a local optimum, "cut" by the deadline, "small" or "unreached" not searched
        (engine.tune.tuner); `origin` as a record's (default: here)."""
        self._write("tuned", {"machine": machine, "workload": workload},
                    {"schedule": schedule, "ms": ms, "measurements": measurements, "label": label, "state": state,
                     "origin": origin or here()})

    # -- reading -----------------------------------------------------------------------------------
    def records(self, machine: str | None = None, workload: str | None = None) -> list[Record]:
        """Every intact record (of a machine kind, of a workload), fastest first. Corrupted rows are
        reported, deleted and left out."""
        conds = {k: v for k, v in (("machine", machine), ("workload", workload)) if v is not None}
        where = (" WHERE " + " AND ".join(f"{k}=?" for k in conds)) if conds else ""
        rows = self._run(lambda db: db.execute(
            f"SELECT machine, workload, schedule, record, checksum FROM records{where}",
            tuple(conds.values())).fetchall()) or []
        out = []
        for mach, wl, sched, text, digest in rows:
            try:
                out.append(_record(mach, wl, sched, text, digest))
            except (ValueError, TypeError, KeyError) as e:
                self._reject("records", "machine=? AND workload=? AND schedule=?",
                             {"machine": mach, "workload": wl, "schedule": sched}, digest,
                             f"record of workload {wl}", str(e) or type(e).__name__)
        return sorted(out, key=lambda r: r.ms)

    def best(self, machine: str, workload: str) -> Record | None:
        """The fastest intact record of the workload on this machine kind."""
        recs = self.records(machine, workload)
        return recs[0] if recs else None

    def tuned(self, machine: str, workload: str) -> dict | None:
        """The end of the workload's tuning on this machine kind, or None."""
        got = self._read("tuned", "record", {"machine": machine, "workload": workload}, _tuned_entry,
                         f"tuning of workload {workload}")
        return got

    def counts(self) -> dict[str, int]:
        n = self._run(lambda db: (db.execute("SELECT COUNT(*) FROM records").fetchone()[0],
                                  db.execute("SELECT COUNT(DISTINCT machine || workload) FROM records").fetchone()[0],
                                  db.execute("SELECT COUNT(*) FROM tuned").fetchone()[0]))
        records, workloads, tuned = n or (0, 0, 0)
        return {"records": records, "workloads": workloads, "tuned": tuned}

    # -- sharing -----------------------------------------------------------------------------------
    def export(self, path: str, machine: str | None = None) -> int:
        """Write the intact records and tunings (of one machine kind, or all) as JSON lines; returns the
        number of lines written after the header."""
        conds = " WHERE machine=?" if machine else ""
        params = (machine,) if machine else ()
        recs = self._run(lambda db: db.execute(
            f"SELECT machine, workload, schedule, record, checksum FROM records{conds}", params).fetchall()) or []
        tuned = self._run(lambda db: db.execute(
            f"SELECT machine, workload, record, checksum FROM tuned{conds}", params).fetchall()) or []
        n = 0
        try:
            with open(path, "w") as f:
                f.write(json.dumps({"format": jsonl.TUNING_RECORDS, "written": time.time()}) + "\n")
                for mach, wl, sched, text, digest in recs:
                    if digest == checksum((mach, wl, sched), text):
                        f.write(json.dumps({"table": "records", "key": [mach, wl, sched], "record": text,
                                            "checksum": digest}) + "\n")
                        n += 1
                for mach, wl, text, digest in tuned:
                    if digest == checksum((mach, wl), text):
                        f.write(json.dumps({"table": "tuned", "key": [mach, wl], "record": text,
                                            "checksum": digest}) + "\n")
                        n += 1
        except OSError as e:
            raise EngineError(f"cannot write {path}: {e.strerror}") from None
        return n

    def import_file(self, path: str) -> tuple[int, int]:
        """Merge an exported file: (lines taken, lines refused: checksum, fields or JSON wrong). A record
        only replaces a slower one of the same schedule; a tuning replaces the one stored."""
        try:
            with open(path, encoding="utf-8", errors="replace") as f, self.transaction():  # all or nothing
                return self._import_lines(path, bounded.lines(f, MAX_LINE_CHARS))
        except OSError as e:
            raise EngineError(f"cannot read {path}: {e.strerror}") from None

    def _import_lines(self, path: str, rows) -> tuple[int, int]:
        first = next(rows, None)
        try:
            head = json.loads(first) if first is not None else {}
        except ValueError:
            head = {}
        if not isinstance(head, dict) or head.get("format") != jsonl.TUNING_RECORDS:
            raise EngineError(f"{path}: not a tuning database export (`mlir-rl-tui tuning-db export` writes one)")
        taken = refused = 0
        origin = imported_from(path)
        for line in rows:
            if line is not None and not line.strip():
                continue
            try:
                if line is None:
                    raise ValueError("longer than a line of an export can be")
                row = json.loads(line)
                table, key, text, digest = row["table"], tuple(row["key"]), row["record"], row["checksum"]
                if not all(isinstance(k, str) for k in key) or digest != checksum(key, text):
                    raise ValueError("checksum mismatch")
                if table == "records" and len(key) == 3:
                    rec = _record(*key, text, digest)
                    # a row passed on keeps the file it first came from; one timed by the exporter names this file
                    self.add(replace(rec, origin=rec.origin if rec.origin.startswith("imported") else origin))
                elif table == "tuned" and len(key) == 2:
                    entry = _tuned_entry(json.loads(text))
                    was = str(entry.get("origin", ""))
                    self.mark_tuned(*key, entry["schedule"], entry["ms"], entry["measurements"], entry.get("label", ""),
                                    entry["state"], was if was.startswith("imported") else origin)
                else:
                    raise ValueError(f"unknown table {table!r}")
                taken += 1
            except (ValueError, TypeError, KeyError, AttributeError):
                refused += 1
        return taken, refused


def _record(machine: str, workload: str, schedule: str, text, digest) -> Record:
    if not isinstance(text, str) or len(text) > MAX_ROW_CHARS:
        raise ValueError("not a stored record (too long)")
    if digest != checksum((machine, workload, schedule), text):
        raise ValueError("checksum mismatch")
    d = json.loads(text)
    ms = d["ms"]
    if not isinstance(ms, int | float) or isinstance(ms, bool) or not (math.isfinite(ms) and ms > 0):
        raise ValueError(f"bad time {ms!r}")
    desc = d.get("description")
    if desc is not None and not isinstance(desc, dict):
        raise ValueError("bad description")
    return Record(machine, workload, schedule, float(ms), str(d.get("label", "")), desc, str(d.get("program", "")),
                  str(d.get("origin", "")))


def _tuned_entry(d: dict) -> dict:
    if not isinstance(d.get("schedule"), str) or not isinstance(d.get("measurements"), int):
        raise ValueError("bad tuning entry")
    if d.get("state") not in ("tuned", "cut", "small", "unreached"):
        raise ValueError(f"bad tuning state {d.get('state')!r}")
    if not isinstance(d.get("ms"), int | float) or not math.isfinite(d["ms"]):
        raise ValueError("bad time")
    return d


