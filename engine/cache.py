"""Measurement cache in SQLite (Pearl's memoization): (program sha256, schedule text, machine) -> result."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import threading
import time

ENGINE_VERSION = "7"  # bump when the pipeline or the measurement protocol changes


def default_cache_dir() -> str:
    env = os.environ.get("MLIR_RL_TUI_CACHE")
    if env:
        return env
    from platformdirs import user_cache_dir

    return user_cache_dir("mlir-rl-tui")


def machine_fingerprint() -> str:
    """CPU model, core count, architecture, MLIR package and engine version."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        mlir_v = version("xtc-mlir-python-bindings")
    except Exception:  # noqa: BLE001
        mlir_v = "?"
    text = f"{cpu}|{os.cpu_count()}|{platform.machine()}|{mlir_v}|{ENGINE_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Cache:
    """Thread-safe SQLite store; shared by the app, search, training and evaluation."""

    def __init__(self, path: str | None = None) -> None:
        if path is None:
            d = default_cache_dir()
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "measurements.sqlite")
        self.path = path
        self._lock = threading.Lock()
        self.db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS measurements (program TEXT, schedule TEXT, machine TEXT, "
            "result TEXT, created REAL, PRIMARY KEY (program, schedule, machine))")
        self.db.execute("CREATE TABLE IF NOT EXISTS machines (machine TEXT PRIMARY KEY, peaks TEXT, created REAL)")
        self.db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, program_sha: str, schedule: str, machine: str) -> dict | None:
        with self._lock:
            row = self.db.execute("SELECT result FROM measurements WHERE program=? AND schedule=? AND machine=?",
                                  (program_sha, schedule, machine)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, program_sha: str, schedule: str, machine: str, result: dict) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO measurements VALUES (?, ?, ?, ?, ?)",
                            (program_sha, schedule, machine, json.dumps(result), time.time()))
            self.db.commit()

    def get_machine(self, machine: str) -> dict | None:
        """The machine's measured roofline (engine.roofline.Peaks as JSON), if measured."""
        with self._lock:
            row = self.db.execute("SELECT peaks FROM machines WHERE machine=?", (machine,)).fetchone()
        return json.loads(row[0]) if row else None

    def put_machine(self, machine: str, peaks: dict) -> None:
        with self._lock:
            self.db.execute("INSERT OR REPLACE INTO machines VALUES (?, ?, ?)", (machine, json.dumps(peaks), time.time()))
            self.db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self.db.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self.db.close()
