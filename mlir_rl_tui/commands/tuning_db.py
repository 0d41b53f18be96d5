"""`mlir-rl-tui tuning-db show|export|import`: the tuning database `tune` keeps (engine.store.tuning_db)."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.engine import open_tuning_db
from mlir_rl_tui.cli.output import emit
from mlir_rl_tui.cli.paths import output_file, replacing

DESCRIPTION = """show: its workloads and their best schedules on this machine kind (--all: every kind). export FILE:
its records as JSON lines (a team shares one file per machine kind). import FILE: merge such a file; a line
whose checksum does not match is refused; what it brings is marked "imported from FILE" (show prints
it, and it stays through later exports). Records are only starting points: `tune` measures and checks every
schedule it hands back. show and export only read a --db FILE: a missing file, or one that is not a tuning
database, is an error and is left as it was."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["show", "export", "import"])
    p.add_argument("file", nargs="?", metavar="FILE", help="the file to export to or import from")
    p.add_argument("--db", metavar="FILE", help="the tuning database (default: tuning.sqlite in the cache folder; "
                                                "show and export read it only, import creates it)")
    p.add_argument("--all", action="store_true", help="every machine kind, not only this one")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.cli.output import CliError
    from mlir_rl_tui.engine.store.keys import machine_key

    if args.action in ("export", "import") and not args.file:
        raise CliError(f"tuning-db {args.action} needs a FILE")
    if args.action == "show" and args.file:
        raise CliError(f"tuning-db show takes no FILE ({args.file}); --db FILE shows another database")
    # show and export only read: a --db file the user named is opened as it is (never created, repaired or
    # moved aside); the default database, the product's own, opens as `tune` opens it
    db = open_tuning_db(args.db, readonly=args.action != "import")
    machine = None if args.all else machine_key()
    if args.action == "export":
        output_file(args.file, [db.path])  # before any record is read
        with replacing(args.file) as tmp:  # an existing FILE is replaced only by a whole export
            n = db.export(tmp, machine)
        out = {"file": args.file, "lines": n, "machine": machine or "all"}
        emit(out) if args.json else print(f"{args.file}: {n} records and tunings"
                                          + (" of this machine kind" if machine else ""))
        return 0
    if args.action == "import":
        taken, refused = db.import_file(args.file)
        out = {"file": args.file, "taken": taken, "refused": refused}
        if refused and not taken:  # nothing of it could be used: not a tuning-db export, or a damaged one
            raise CliError(f"{args.file}: none of its {refused} lines is a record of `tuning-db export` (checksum, "
                           "fields or JSON wrong); nothing imported")
        emit(out) if args.json else print(f"{args.file}: {taken} taken" + (f", {refused} refused (checksum, "
                                                                            "fields or JSON wrong)" if refused else ""))
        return 0
    best: dict[tuple[str, str], object] = {}
    for rec in db.records(machine):
        best.setdefault((rec.machine, rec.workload), rec)
    rows = []
    for (mach, key), rec in best.items():
        tuned = db.tuned(mach, key)
        rows.append({"machine": mach, "workload": key, "label": rec.label, "best_ms": rec.ms,
                     "schedule": rec.schedule, "origin": rec.origin, "tuned": tuned is not None,
                     "tuned_origin": tuned.get("origin", "") if tuned else None,
                     "records": len(db.records(mach, key))})
    if args.json:
        emit({"path": db.path, **db.counts(), "workloads_shown": rows})
        return 0
    c = db.counts()
    print(f"{db.path}: {c['records']} records of {c['workloads']} workloads, {c['tuned']} tuned")
    for r in sorted(rows, key=lambda r: r["label"]):
        print(f"  {r['label'][:48]:48} {r['best_ms']:9.4f} ms  {'tuned' if r['tuned'] else '     '}  "
              f"{r['schedule'] or '(untransformed)'}" + (f"  ({r['origin']})" if r["origin"].startswith("imported")
                                                         else ""))
    return 0
