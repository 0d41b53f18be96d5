"""Measurement files: a cache's rows carried to another checkout or machine (`mlir-rl-tui dataset export` writes
one, `dataset import` reads it; one writer, one reader), and the check that the file's machine is this kind."""

from __future__ import annotations

import json
from collections.abc import Iterator

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.store import bounded, jsonl

#: Who made a cached row, by its machine key: `M` measured by this engine on machine M; `M#imported` taken
#: from a measurement file as M's (`dataset import --as-this-machine`), not checked here; `M#validated` such a
#: row whose schedule this engine has since compiled, run and checked here once (Engine.measure serves
#: only those two: an imported figure ranks, a validated one is served as a result).
IMPORTED, VALIDATED = "#imported", "#validated"
MAX_MEASUREMENT_ROWS = 1_000_000
MAX_ROW_CHARS = 1 << 20  # longest line read (a row is a few hundred characters: key, times, flags)


def export_measurements(cache, path: str, programs: set[str] | None = None, machine: str | None = None) -> int:
    """Write the cache's intact rows (of these program sha256s, of `machine`; None: all) to `path`, gzipped
    JSON lines after a header line; returns the rows written. `import_measurements` reads it back."""
    import gzip

    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION

    rows = sorted(cache.entries(machine, programs), key=lambda r: r[:3])
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"format": jsonl.MEASUREMENTS, "engine_version": ENGINE_VERSION, "rows": len(rows)})
                + "\n")
        for sha, schedule, mach, result in rows:
            f.write(json.dumps({"program": sha, "schedule": schedule, "machine": mach, "result": result},
                               sort_keys=True) + "\n")
    return len(rows)


def read_measurements(path: str, version_must_match: bool = False
                      ) -> Iterator[tuple[str, str, str, dict] | None]:
    """The rows of a measurement file, each (program sha256, schedule text, machine, result), None for a row
    that is not a measurement this engine stores (fields, status, times) or whose schedule does not parse.
    `version_must_match`: a file of another engine version is an EngineError (its times belong to another
    pipeline). EngineError too for a file that cannot be read or is not a measurement file."""
    import gzip
    import zlib

    from mlir_rl_tui.engine.measure.measurement import Measurement
    from mlir_rl_tui.engine.schedule.notation import parse
    from mlir_rl_tui.engine.store.cache import ENGINE_VERSION

    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = bounded.lines(f, MAX_ROW_CHARS)
            first = next(rows, "null")
            header = json.loads(first) if first is not None else None
            if not isinstance(header, dict) or header.get("format") != jsonl.MEASUREMENTS:
                raise EngineError(f"{path}: not a measurement file (its first line is not a "
                                  f"{jsonl.MEASUREMENTS!r} header)")
            if version_must_match and header.get("engine_version") != ENGINE_VERSION:
                raise EngineError(f"{path}: measured with engine version {header.get('engine_version')}, this is "
                                  f"{ENGINE_VERSION}: its times cannot stand for this machine's")
            for n, line in enumerate(rows):
                if n >= MAX_MEASUREMENT_ROWS:
                    raise EngineError(f"{path}: more than {MAX_MEASUREMENT_ROWS} rows")
                if line is None:
                    raise EngineError(f"{path}: row {n + 1} is longer than a measurement row can be "
                                      f"({MAX_ROW_CHARS >> 20} MiB of text): not a measurement file")
                try:
                    row = json.loads(line)
                    sha, text, mach, result = row["program"], row["schedule"], row["machine"], row["result"]
                    if not all(isinstance(x, str) for x in (sha, text, mach)) or len(sha) != 64:
                        raise ValueError("key")
                    Measurement.from_record(result)
                    parse(text)
                except (ValueError, KeyError, TypeError, AttributeError, EngineError):
                    yield None
                    continue
                yield sha, text, mach, result
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise EngineError(f"{path}: cannot read the measurement file ({type(e).__name__}: {e})") from None


def import_measurements(cache, path: str, as_machine: str | None = None) -> tuple[int, int, int]:
    """Put the rows of a measurement file into the cache: (imported, already there, refused). A row the
    cache already has for its key is kept as it is (this machine's own measurement wins); a row that is not
    a measurement this engine stores (fields, status, times), or whose schedule does not parse, is refused.
    `as_machine`: every row is filed as imported for this machine fingerprint (`as_machine + IMPORTED`) instead
    of under its own (timings of another machine of the same kind used as this one's: the caller says so,
    `same_kind` checks it, and the engine validates each schedule here before serving its figure); rows of
    another engine version are refused then, since their times belong to another pipeline."""
    with cache.transaction():  # all or nothing: a file refused half-way (EngineError) imports no row
        return _import_rows(cache, path, as_machine)


def _import_rows(cache, path: str, as_machine: str | None) -> tuple[int, int, int]:
    new = old = bad = 0
    for row in read_measurements(path, version_must_match=as_machine is not None):
        if row is None:
            bad += 1
            continue
        sha, text, mach, result = row
        if as_machine is not None:  # filed as imported: served only once this engine has checked it here
            if any(cache.get(sha, text, as_machine + tag) is not None for tag in ("", VALIDATED)):
                old += 1
                continue
            mach = as_machine + IMPORTED
        if cache.get(sha, text, mach) is not None:
            old += 1
            continue
        cache.put(sha, text, mach, result)
        new += 1
    return new, old, bad


#: `same_kind` times the untransformed code of the shipped samples whose baseline the file has, when it ran
#: in under this many ms there (a few seconds in all; the matmul samples' 13-90 ms would take longer)
SAME_KIND_MAX_MS = 5.0
#: ... and the file's machine is this kind when the median ratio of the times is within this factor. Two
#: "AMD EPYC" VMs with the same fingerprint (the model name a VM shows, core count, MLIR, engine version)
#: timed the samples' baselines 1.2-1.5x apart, and their schedules' times and speedups with
#: them; runs on one machine agree within a few percent.
SAME_KIND_TOLERANCE = 1.25


def same_kind(engine, path: str) -> tuple[float | None, list[tuple[str, float]]]:
    """Is the machine a measurement file was made on this kind? The shipped samples whose untransformed
    program the file has timed (under SAME_KIND_MAX_MS) are timed again here, fresh: (the median ratio of
    this machine's time to the file's, or None when the file has no such sample; each sample's name and
    ratio). check_same_kind compares the ratio with SAME_KIND_TOLERANCE."""
    import statistics

    from mlir_rl_tui.engine.corpus.samples import find, names
    from mlir_rl_tui.engine.ir.program import load_file, sha256_text
    from mlir_rl_tui.engine.schedule.notation import Schedule

    files = {}  # a sample is one function: its program hash is its text's
    for name in names():
        with open(find(name), encoding="utf-8") as f:
            files[sha256_text(f.read())] = name
    theirs: dict[str, float] = {}
    for row in read_measurements(path, version_must_match=True):
        if row is not None and row[1] == "" and row[0] in files and row[3].get("status") == "ok" \
                and row[3]["time_ms"] < SAME_KIND_MAX_MS:
            theirs[row[0]] = row[3]["time_ms"]
    ratios = []
    for sha, t in sorted(theirs.items(), key=lambda kv: files[kv[0]]):
        name = files[sha]
        m = engine.measure(load_file(find(name)), Schedule({}), use_cache=False)
        if m.ok and m.time_ms:
            ratios.append((name, m.time_ms / t))
    return (statistics.median(r for _, r in ratios) if ratios else None), ratios


def check_same_kind(engine, path: str) -> tuple[float, list[tuple[str, float]]]:
    """`dataset import --as-this-machine`: the file's timings of the samples' untransformed code against this
    machine's (same_kind): (the median ratio, each sample's) when the file's machine is this kind, else a one-line
    EngineError (nothing is to be imported) when the file times no such sample, or the ratio is beyond
    SAME_KIND_TOLERANCE."""
    ratio, each = same_kind(engine, path)
    if ratio is None:
        raise EngineError(f"{path}: not imported as this machine's: no shipped sample's untransformed code is timed "
                          "in it, so whether this machine is its kind cannot be checked (import it without "
                          "--as-this-machine to keep its rows under their own machine)")
    if not 1 / SAME_KIND_TOLERANCE <= ratio <= SAME_KIND_TOLERANCE:
        raise EngineError(f"{path}: not imported: this machine times the samples' untransformed code {ratio:.2f}x "
                          f"the file's ({same_kind_detail(each)}), beyond {SAME_KIND_TOLERANCE}x: another kind of "
                          "machine whose timings cannot stand for this one's (import without --as-this-machine keeps "
                          "them apart)")
    return ratio, each


def same_kind_detail(each: list[tuple[str, float]]) -> str:
    """Each sample's ratio of check_same_kind in words: `add 1.02x, relu 0.98x`."""
    return ", ".join(f"{name} {r:.2f}x" for name, r in each)
