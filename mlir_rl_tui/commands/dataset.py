"""`mlir-rl-tui dataset generate --out DIR --n N`: programs in the style of the paper's data set (engine.corpus.generator)."""

from __future__ import annotations

import argparse
import time

from mlir_rl_tui.cli.engine import make_engine
from mlir_rl_tui.cli.options import PROGRAMS_HELP, PROGRAMS_METAVAR, add_ray, add_runs, positive_int
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import dataset_folder, output_file, replacing


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="dataset_command", metavar="ACTION")
    g = sub.add_parser("generate", help="write N programs and manifest.json (paper Sec. VI-A)")
    g.add_argument("--out", required=True, help="output folder")
    g.add_argument("--n", type=positive_int, default=50, help="number of programs (default 50)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--eval-fraction", type=float, default=0.2, help="share of programs in the eval split")
    g.add_argument("--no-baseline", action="store_true", help="do not measure baselines (faster; no times)")
    add_runs(g, 5, "one baseline per program")
    g.add_argument("--json", action="store_true", help="print the manifest as one JSON object")
    g.add_argument("--force", action="store_true", help="write into a folder that already holds a data set or programs "
                                                        "(its manifest.json and same-named programs are overwritten)")
    m = sub.add_parser("measure", help="measure schedules of a data set's programs for the cost model (costmodel train)")
    m.add_argument("programs", nargs="+", metavar=PROGRAMS_METAVAR, help=PROGRAMS_HELP)
    m.add_argument("--split", choices=["train", "eval", "all"], default="all", help="which split of a folder")
    m.add_argument("--budget", type=positive_int, default=20, help="measurements per search method and program (default 20)")
    m.add_argument("--methods", default=",".join(("random", "hill")),
                   help="comma-separated search methods run on each program (default random,hill)")
    m.add_argument("--seed", type=int, default=0)
    add_runs(m, 3, "cheap data")
    add_ray(m)
    e = sub.add_parser("export", help="write the cache's measurements of some programs to a file (dataset import reads it)",
                       usage="%(prog)s [-h] FILE --programs PROGRAM [PROGRAM ...]")  # FILE first: --programs takes the rest
    e.add_argument("file", metavar="FILE", help="the measurement file to write (gzipped JSON lines; replaced "
                                                "only once it is written whole)")
    e.add_argument("--programs", nargs="+", required=True, metavar=PROGRAMS_METAVAR,
                   help="the programs whose rows to write: " + PROGRAMS_HELP + " (after FILE: --programs takes the "
                        "rest of the line)")
    i = sub.add_parser("import", help="put a measurement file's rows into the cache (the cache's own rows win)")
    i.add_argument("file", metavar="FILE", help="a file written by dataset export")
    i.add_argument("--as-this-machine", action="store_true",
                   help="file every row under this machine's fingerprint (timings of another machine of the same "
                        "kind and engine version taken as this one's); the samples' untransformed code the file "
                        "times is timed here first, and a file of another kind of machine is refused")
    p.set_defaults(usage_help=p.print_help)  # `mlir-rl-tui dataset` alone: its help, status 2


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine.corpus import generator
    from mlir_rl_tui.progress import ProgressLine

    if args.dataset_command == "measure":
        return run_measure(args)
    if args.dataset_command in ("export", "import"):
        return run_transfer(args)
    if args.dataset_command != "generate":
        args.usage_help()
        return 2
    if not 0 <= args.eval_fraction <= 1:
        raise CliError(f"--eval-fraction must be between 0 and 1, not {args.eval_fraction}")
    dataset_folder(args.out, args.force)
    start = time.monotonic()
    eng = None if args.no_baseline else make_engine(args)
    try:
        with ProgressLine() as line:
            man = generator.generate(args.out, args.n, args.seed, engine=eng, eval_fraction=args.eval_fraction,
                                   on_progress=lambda i, n, name: line.update(f"dataset: {i}/{n} {name}"))
    finally:
        if eng is not None:
            eng.close()
    if args.json:
        emit(man)
        return 0
    kinds = {k: sum(1 for e in man["programs"] if e["kind"] == k) for k in ("single", "sequence")}
    print(f"{args.out}: {len(man['programs'])} programs ({kinds['single']} single ops, {kinds['sequence']} "
          f"sequences), {len(man['train'])} train / {len(man['eval'])} eval, manifest.json, "
          f"{time.monotonic() - start:.1f} s")
    return 0


def run_measure(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine.corpus import generator
    from mlir_rl_tui.engine.corpus.programs import program_paths
    from mlir_rl_tui.engine.search import METHODS
    from mlir_rl_tui.progress import ProgressLine

    methods = tuple(m for m in args.methods.split(",") if m)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise CliError(f"unknown search method {','.join(bad) or '(none)'}; choose from {', '.join(METHODS)}")
    paths = program_paths(args.programs, None if args.split == "all" else args.split)
    start = time.monotonic()
    with ProgressLine() as line, make_engine(args) as eng:
        made = generator.measure(paths, eng, args.budget, methods, args.seed,
                               on_progress=lambda i, n, what: line.update(f"measure: {i}/{n} {what}"))
        cached = len(eng.cache) if eng.cache is not None else 0
    print(f"{sum(made.values())} measurements on {len(paths)} programs ({sum(1 for v in made.values() if v)} "
          f"measured), cache now {cached} rows, {time.monotonic() - start:.1f} s")
    return 0


def run_transfer(args: argparse.Namespace) -> int:
    """`dataset export FILE --programs ...` / `dataset import FILE`: measurements carried between caches."""
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.corpus.programs import program_paths
    from mlir_rl_tui.engine.store import measurement_file as mf
    from mlir_rl_tui.engine.store.cache import Cache
    from mlir_rl_tui.engine.store.keys import machine_key

    cache = Cache()
    if not cache.usable:
        raise CliError(f"the measurement cache {cache.folder} cannot be used")
    if args.dataset_command == "export":
        paths = program_paths(args.programs)
        output_file(args.file, [*paths, cache.path])
        shas = {load_file(p).sha256 for p in paths}
        with replacing(args.file) as tmp:  # an existing FILE is replaced only by a whole export
            n = mf.export_measurements(cache, tmp, shas)
        print(f"{args.file}: {n} measurements of {len(shas)} programs")
        return 0
    if args.as_this_machine:
        _same_kind(args.file)
    new, old, bad = mf.import_measurements(cache, args.file, machine_key() if args.as_this_machine else None)
    if bad and not new and not old:  # nothing of it could be used
        raise CliError(f"{args.file}: none of its {bad} rows is a measurement this engine stores; nothing imported")
    print(f"{args.file}: {new} measurements imported into {cache.folder}, {old} already there"
          + (f", {bad} refused (not a measurement this engine stores)" if bad else ""))
    return 0


def _same_kind(path: str) -> None:
    """`import --as-this-machine`: this machine is the file's kind (engine.store.measurement_file.check_same_kind),
    said on stdout; a one-line error, nothing imported, otherwise."""
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.store import measurement_file as mf

    print(f"{path}: timing the samples' untransformed code to check this machine is the file's kind", flush=True)
    with Engine() as eng:  # the cache's timing lock; same_kind's timings are not stored
        ratio, each = mf.check_same_kind(eng, path)
    print(f"{path}: this machine times the samples' untransformed code {ratio:.2f}x the file's "
          f"({mf.same_kind_detail(each)}): the same kind")
