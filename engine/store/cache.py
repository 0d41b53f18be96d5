"""Measurement cache in SQLite (Pearl's memoization): (program sha256, schedule text, machine) -> result.

The cache checks itself: a damaged cache never serves a wrong answer and never stops a run.
- The file carries its schema version (table `meta`). A file that is not a SQLite database, a truncated
  or read-only one, or one of another schema (an older mlir-rl-tui, another program) is moved aside
  (`measurements.sqlite.broken-<time>`) with one warning line on stderr, and a fresh cache is created.
- Every stored result (a measurement, or the machine's roofline in `machines`) is stored beside the
  sha256 of its key and its JSON text. A row whose checksum, JSON or fields are wrong is ignored,
  reported once, deleted, and the fresh measurement takes its place.
- A cache locked by another process is waited on for `LOCK_WAIT_S`, then the run goes on without it
  (one warning line); the next run uses it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from mlir_rl_tui.engine.errors import EngineError, warn

ENGINE_VERSION = "8"  # bump when the pipeline or the measurement protocol changes
SCHEMA = "2"  # bump when the tables change; a cache of another version's schema is left as it is (Store._beside)
CACHE_FILE = "measurements.sqlite"
#: How long an operation waits for a cache another process holds locked before going on without it.
LOCK_WAIT_S = 2.0
LOCK_RETRIES = 2  # a busy file is tried again this many times (each waiting LOCK_WAIT_S) before it is dropped
#: Corrupted rows reported one line each, at most this many per cache (the rest are replaced silently).
MAX_ROW_WARNINGS = 5

_TABLES = {
    "meta": "key TEXT PRIMARY KEY, value TEXT",
    "measurements": "program TEXT, schedule TEXT, machine TEXT, result TEXT, checksum TEXT, created REAL, "
                    "PRIMARY KEY (program, schedule, machine)",
    "machines": "machine TEXT PRIMARY KEY, peaks TEXT, checksum TEXT, created REAL",
}
_COLUMNS = {"meta": ["key", "value"], "measurements": ["program", "schedule", "machine", "result", "checksum", "created"],
            "machines": ["machine", "peaks", "checksum", "created"]}

T = TypeVar("T")


def default_cache_dir() -> str:
    """The cache folder: `$MLIR_RL_TUI_CACHE` (a folder, not a file) or the user's cache directory."""
    env = os.environ.get("MLIR_RL_TUI_CACHE")
    if env:
        return env
    from platformdirs import user_cache_dir

    return user_cache_dir("mlir-rl-tui")


def machine_fingerprint() -> str:
    """CPU model, core count, architecture, MLIR package and engine version."""
    from mlir_rl_tui.engine.measure.machine import cpu_model

    cpu = cpu_model(fallback="")  # "" without a model name: the keys of such machines stay what they were
    try:
        from importlib.metadata import version

        mlir_v = version("xtc-mlir-python-bindings")
    except Exception:  # noqa: BLE001
        mlir_v = "?"
    text = f"{cpu}|{os.cpu_count()}|{platform.machine()}|{mlir_v}|{ENGINE_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


MAX_ROW_CHARS = 1 << 20  # a stored result is ~1 KB: anything larger is not one


def checksum(key: tuple[str, ...], text: str) -> str:
    """sha256 of a row's key and stored JSON text: a flipped digit anywhere in either changes it."""
    h = hashlib.sha256()
    for part in (*key, text):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class Unusable(Exception):
    """The file cannot serve as this cache; str() says why (it goes into the warning)."""


class _OtherSchema(Unusable):
    """The file is a cache of another mlir-rl-tui version (its schema): left as it is, never moved aside."""


_UNSAVED: dict[str, list] = {}  # path -> [the store's WHAT, writes not stored, why]


def unsaved() -> str | None:
    """One line naming what this process could not store since the last call (a store dropped after an
    error, or locked), or None; the count starts again. A command ends non-zero with it
    (mlir_rl_tui.commands.main calls it before and after each command)."""
    if not _UNSAVED:
        return None
    parts = [f"{n} {what} row{'s' if n != 1 else ''} to {path} ({why})" for path, (what, n, why) in _UNSAVED.items()]
    _UNSAVED.clear()
    return "not saved: " + "; ".join(parts)


class _Locked(Exception):
    """Another process holds the cache locked for longer than LOCK_WAIT_S."""


def _is_locked(e: sqlite3.Error) -> bool:
    name = getattr(e, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(e)


def writable(path: str) -> bool:
    """The file may be written: access rights, and for root (who may write anything) its mode bits."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True  # not there yet: created fresh
    return os.access(path, os.W_OK) and (os.geteuid() != 0 or bool(mode & 0o222))


class Store:
    """A thread-safe, self-checking SQLite file of checksummed JSON rows (the rules above). A subclass
    names its tables (`TABLES`: the first columns key a row, then the JSON text, its checksum and the
    time it was written), its schema version, what it is called in warnings and its file name.

    `usable` is False when the run goes on without it (locked by another process, or a folder that
    cannot hold one); reads then miss and writes store nothing.

    `readonly=True` (a command that only reads a file the user named) opens the file as it is: it is never
    created, changed (a corrupted row is ignored, not deleted) or moved aside, and a missing, locked or
    damaged file, or one of another kind, is an EngineError (one line) instead. `named=True` (a file the
    user named for a command that writes to it) is never moved aside either: a file of another kind, a
    read-only or locked one, or a missing folder is an EngineError; a missing file is created."""

    TABLES: dict[str, str] = {}
    COLUMNS: dict[str, list[str]] = {}
    SCHEMA = ""
    WHAT = "cache"
    FILE = ""
    AGAIN = "measuring again"  # what happens instead of serving a corrupted row

    def __init__(self, path: str | None = None, readonly: bool = False, named: bool = False) -> None:
        if path is None:
            path = os.path.join(default_cache_dir(), self.FILE)
        self.path = path
        self.folder = os.path.dirname(os.path.abspath(path))
        self.hits = 0
        self.misses = 0
        self.corrupted = 0  # rows ignored because their checksum, JSON or fields were wrong
        self._lock = threading.Lock()
        self.why = ""  # why the run goes on without the store (its first cause), when it does
        self._batch = False  # inside transaction(): writes are committed at its end
        self._batched = 0  # writes made inside the current transaction
        self.readonly = readonly
        self.db: sqlite3.Connection | None = (self._open_readonly() if readonly else
                                              self._open_named() if named else self._open())

    @property
    def usable(self) -> bool:
        return self.db is not None

    # -- opening -----------------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection | None:
        if os.path.exists(self.folder) and not os.path.isdir(self.folder):
            return self._without(f"the {self.WHAT} folder {self.folder} is a file (MLIR_RL_TUI_CACHE names a folder)")
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as e:
            return self._without(f"cannot create the {self.WHAT} folder {self.folder} ({e.strerror})")
        if os.path.isdir(self.path):
            return self._without(f"the {self.WHAT} file {self.path} is a folder")
        if not os.access(self.folder, os.W_OK):
            return self._without(f"the {self.WHAT} folder {self.folder} is read-only")
        for _ in range(3):
            try:
                return self._connect()
            except _Locked:
                return self._locked()
            except _OtherSchema as e:  # another installed version's cache: this version keeps its own beside it
                return self._beside(str(e))
            except Unusable:
                pass
            try:
                with self._recovery():  # one process moves a broken file aside; the others use its fresh one
                    try:
                        return self._connect()
                    except Unusable as e:
                        moved = self._move_aside(str(e))
            except _Locked:
                return self._locked()
            if not moved:
                return None
        return self._without(f"{self.path} stays unusable after being replaced")

    def _beside(self, reason: str) -> sqlite3.Connection | None:
        """The file holds another version's schema: it is left as it is and this version uses a file of its
        own schema's name beside it (FILE.schema-N.sqlite), so two installed versions never orphan each
        other's rows."""
        root, ext = os.path.splitext(self.path)
        other = self.path
        self.path = f"{root}.schema-{self.SCHEMA}{ext}"
        warn(f"{self.WHAT} {other} {reason}: left as it is; this version uses {os.path.basename(self.path)}")
        try:
            return self._connect()
        except _Locked:
            return self._locked()
        except Unusable as e:
            return self._without(f"{self.path} {e}")

    def _connect(self) -> sqlite3.Connection:
        """A connection to a file that passed the checks and holds this schema, or Unusable / _Locked."""
        if not writable(self.path):
            raise Unusable("is read-only")
        try:
            db = sqlite3.connect(self.path, timeout=LOCK_WAIT_S, check_same_thread=False)
        except sqlite3.Error as e:
            raise Unusable(f"cannot be opened ({e})") from None
        try:  # read only until the file is known to be ours: another program's file stays as it was
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:  # a new file (or one cut to nothing): this schema, in one transaction
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("BEGIN IMMEDIATE")  # a process racing to create it sees nothing or everything
                for name, cols in self.TABLES.items():
                    db.execute(f"CREATE TABLE IF NOT EXISTS {name} ({cols})")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (self.SCHEMA,))
                db.execute("COMMIT")
            else:
                self._check(db, tables)
            db.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer
        except sqlite3.Error as e:
            db.close()
            if _is_locked(e):
                raise _Locked() from None
            raise Unusable(f"is damaged ({e})") from None
        except Unusable:
            db.close()
            raise
        return db

    def _check(self, db: sqlite3.Connection, tables: set[str]) -> None:
        """Unusable unless the file holds this schema and passes SQLite's quick check; reads only."""
        if "meta" not in tables:
            raise Unusable("has an unknown schema (no version: an older mlir-rl-tui or another program)")
        row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and isinstance(row[0], str) and row[0] != self.SCHEMA:
            raise _OtherSchema(f"holds schema {row[0]!r} of another mlir-rl-tui version, this version uses "
                               f"{self.SCHEMA!r}")
        if row is None or row[0] != self.SCHEMA:
            raise Unusable(f"has schema {row[0] if row else 'none'!r}, this version uses {self.SCHEMA!r}")
        for name, cols in self.COLUMNS.items():
            have = [r[1] for r in db.execute(f"PRAGMA table_info({name})")]
            if have != cols:
                raise Unusable(f"has a damaged schema (table {name})")
        check = db.execute("PRAGMA quick_check").fetchone()
        if check is None or check[0] != "ok":
            raise Unusable(f"is damaged ({check[0] if check else 'no answer'})")

    def _open_named(self) -> sqlite3.Connection:
        """`named` (a file the user named to write to): the file as it is, or a new one in a folder that
        exists; never moved aside or run without: a folder, a read-only file, a locked one or one of another
        kind is an EngineError naming the cause."""
        if os.path.isdir(self.path):
            raise EngineError(f"{self.path}: is a folder, not a {self.WHAT}")
        if not os.path.isdir(self.folder):
            raise EngineError(f"{self.path}: no such folder {self.folder}")
        if not writable(self.path):
            raise EngineError(f"{self.path}: read-only (this command writes to the {self.WHAT})")
        try:
            return self._connect()
        except _Locked:
            raise EngineError(f"{self.path}: the {self.WHAT} is locked by another process (waited "
                              f"{LOCK_WAIT_S:g} s); try again") from None
        except Unusable as e:
            raise EngineError(f"{self.path}: not a {self.WHAT}: it {e}") from None

    def _open_readonly(self) -> sqlite3.Connection:
        """`readonly`: a read-only connection to the file as it is, or EngineError naming the cause."""
        if not os.path.exists(self.path):
            raise EngineError(f"{self.path}: no such {self.WHAT}")
        if not os.path.isfile(self.path):
            raise EngineError(f"{self.path}: not a file, so not a {self.WHAT}")
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        try:
            db = sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_S, check_same_thread=False)
        except sqlite3.Error as e:
            raise EngineError(f"{self.path}: cannot be opened as a {self.WHAT} ({e})") from None
        try:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                raise Unusable("is empty (no tables)")
            self._check(db, tables)
        except (sqlite3.Error, Unusable) as e:
            db.close()
            if isinstance(e, sqlite3.Error) and _is_locked(e):
                raise EngineError(f"{self.path}: the {self.WHAT} is locked by another process (waited "
                                  f"{LOCK_WAIT_S:g} s); try again") from None
            reason = str(e) if isinstance(e, Unusable) else f"is damaged ({e})"
            raise EngineError(f"{self.path}: not a {self.WHAT}: it {reason}") from None
        return db

    def _recovery(self):
        """An exclusive lock on `<file>.recover.lock` while a broken file is replaced (waits LOCK_WAIT_S)."""
        lock_path = self.path + ".recover.lock"

        class _L:
            def __enter__(self_):
                try:
                    self_.f = open(lock_path, "a")
                except OSError:
                    self_.f = None  # a read-only folder: moving aside fails next, and says so
                    return
                end = time.monotonic() + LOCK_WAIT_S
                while True:
                    try:
                        fcntl.flock(self_.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        return
                    except BlockingIOError:
                        if time.monotonic() >= end:
                            self_.f.close()
                            raise _Locked() from None
                        time.sleep(0.02)

            def __exit__(self_, *a):
                if self_.f is not None:
                    fcntl.flock(self_.f, fcntl.LOCK_UN)
                    self_.f.close()

        return _L()

    def _move_aside(self, reason: str) -> bool:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = f"{self.path}.broken-{stamp}"
        n = 1
        while os.path.exists(dest):
            dest = f"{self.path}.broken-{stamp}-{n}"
            n += 1
        try:
            os.replace(self.path, dest)
            for side in ("-wal", "-shm", "-journal"):  # a stale log must not be replayed into the new file
                if os.path.exists(self.path + side):
                    os.replace(self.path + side, dest + side)
        except OSError as e:
            self._without(f"{self.path} {reason}, and it cannot be moved aside ({e.strerror})")
            return False
        warn(f"{self.WHAT} {self.path} {reason}: moved aside to {os.path.basename(dest)}, starting a fresh {self.WHAT}")
        return True

    def _without(self, reason: str) -> None:
        self.why = reason
        warn(f"{reason}: this run continues without a {self.WHAT}")
        return None

    def _locked(self) -> None:
        return self._without(f"{self.WHAT} {self.path} is locked by another process (waited {LOCK_WAIT_S:g} s)")

    # -- rows --------------------------------------------------------------------------------------
    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T | None:
        """`fn(db)` under the lock. A busy file is tried again (each try waits LOCK_WAIT_S for the other
        writer); a cache that breaks, or stays locked through the retries, is dropped for this run (its
        unsaved writes are counted: `unsaved`)."""
        with self._lock:
            if self.db is None:
                return None
            for attempt in range(LOCK_RETRIES + 1):
                try:
                    return fn(self.db)
                except sqlite3.Error as e:
                    err = e
                    if not (_is_locked(e) and attempt < LOCK_RETRIES) or self._batch:
                        break
                    with contextlib.suppress(sqlite3.Error):
                        self.db.rollback()
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = None
            if _is_locked(err):
                self._locked()
            else:
                self._without(f"{self.WHAT} {self.path} failed ({err})")
            return None

    def _read(self, table: str, value_col: str, key: dict[str, str], parse: Callable[[Any], T] | None,
              what: str) -> T | None:
        where = " AND ".join(f"{k}=?" for k in key)
        row = self._run(lambda db: db.execute(f"SELECT {value_col}, checksum FROM {table} WHERE {where}",
                                              tuple(key.values())).fetchone())
        if row is None:
            return None
        text, digest = row
        try:
            if not isinstance(text, str) or len(text) > MAX_ROW_CHARS:
                raise ValueError("not a stored result (too long)")
            if digest != checksum(tuple(key.values()), text):
                raise ValueError("checksum mismatch")
            value = json.loads(text)
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
            return parse(value) if parse is not None else value
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            self._reject(table, where, key, digest, what, str(e) or type(e).__name__)
            return None

    def _reject(self, table: str, where: str, key: dict[str, str], digest, what: str, reason: str) -> None:
        """Ignore a corrupted row: delete it (unless another process replaced it meanwhile), say so once."""
        self.corrupted += 1
        if not self.readonly:
            self._run(lambda db: (db.execute(f"DELETE FROM {table} WHERE {where} AND checksum IS ?",
                                             (*key.values(), digest)), db.commit()))
        if self.corrupted <= MAX_ROW_WARNINGS:
            more = ((" (further corrupted rows are ignored silently)" if self.readonly else
                     " (further corrupted rows are replaced silently)") if self.corrupted == MAX_ROW_WARNINGS else "")
            warn(f"{self.WHAT} {self.path}: the stored {what} is corrupted ({reason.splitlines()[0][:120]}): "
                 f"ignored, {self.AGAIN}{more}")

    def _write(self, table: str, key: dict[str, str], value: dict) -> None:
        text = canonical(value)
        row = (*key.values(), text, checksum(tuple(key.values()), text), time.time())
        done = self._run(lambda db: (db.execute(f"INSERT OR REPLACE INTO {table} VALUES "
                                                f"({', '.join('?' * len(row))})", row),
                                     None if self._batch else db.commit()))
        if done is None and not self.readonly:  # not stored: the command says so at its end (unsaved)
            self._unsaved(1)
        elif self._batch:
            self._batched += 1

    def _unsaved(self, n: int) -> None:
        entry = _UNSAVED.setdefault(self.path, [self.WHAT, 0, self.why or "no store"])
        entry[1] += n

    @contextlib.contextmanager
    def transaction(self):
        """The block's writes in one transaction (an import): committed together when it ends, none of them
        when it raises or the store fails meanwhile (then every write of the block is counted unsaved). A
        busy file inside it is not retried: a retry rolls back, which would drop the block's earlier writes."""
        self._batch, self._batched = True, 0
        try:
            yield self
        except BaseException:
            self._batch = False
            if self.db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self.db.rollback()
            raise
        self._batch = False
        if self._run(lambda db: db.commit() or True) is None and self._batched:
            self._unsaved(self._batched)  # written into a transaction that was never committed

    def close(self) -> None:
        with self._lock:
            if self.db is not None:
                self.db.close()
                self.db = None


class Cache(Store):
    """The measurement cache; shared by the app, search, training and evaluation."""

    TABLES = _TABLES
    COLUMNS = _COLUMNS
    SCHEMA = SCHEMA
    WHAT = "cache"
    FILE = CACHE_FILE

    def get(self, program_sha: str, schedule: str, machine: str,
            parse: Callable[[dict], T] | None = None) -> T | dict | None:
        """The stored result, through `parse` (which raises ValueError/TypeError/KeyError on a record it
        does not accept); None when there is none or it is corrupted (then it is reported and deleted)."""
        got = self._read("measurements", "result", {"program": program_sha, "schedule": schedule, "machine": machine},
                         parse, f"result of {schedule or 'the baseline'!r}")
        if got is None:
            self.misses += 1
        else:
            self.hits += 1
        return got

    def put(self, program_sha: str, schedule: str, machine: str, result: dict) -> None:
        self._write("measurements", {"program": program_sha, "schedule": schedule, "machine": machine}, result)

    def entries(self, machine: str | None = None, programs: set[str] | None = None) -> list[tuple[str, str, str, dict]]:
        """Every intact stored measurement as (program sha256, schedule text, machine, result): the cost
        model's training data (agent.costmodel). `machine` and `programs` (sha256s) narrow the rows read; a
        row whose checksum or JSON is wrong is skipped (and left for `get` to report and replace)."""
        where, params = "", []
        if machine is not None:
            where, params = " WHERE machine=?", [machine]
        rows = self._run(lambda db: db.execute(f"SELECT program, schedule, machine, result, checksum FROM measurements"
                                               f"{where}", params).fetchall()) or []
        out = []
        for program, schedule, mach, text, digest in rows:
            if programs is not None and program not in programs:
                continue
            if not isinstance(text, str) or len(text) > MAX_ROW_CHARS \
                    or digest != checksum((program, schedule, mach), text):
                continue
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append((program, schedule, mach, value))
        return out

    def get_machine(self, machine: str, parse: Callable[[dict], T] | None = None) -> T | dict | None:
        """The machine's measured roofline (engine.measure.roofline.Peaks as JSON), if measured and intact."""
        return self._read("machines", "peaks", {"machine": machine}, parse, "roofline of this machine")

    def put_machine(self, machine: str, peaks: dict) -> None:
        self._write("machines", {"machine": machine}, peaks)

    def __len__(self) -> int:
        n = self._run(lambda db: db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])
        return n or 0
