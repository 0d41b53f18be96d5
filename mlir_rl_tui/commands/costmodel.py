"""`mlir-rl-tui costmodel train|eval`: the learned cost model (agent.costmodel) on the measurement cache."""

from __future__ import annotations

import argparse
import os
import time

from mlir_rl_tui.cli.costmodel_report import accuracy_line, interval_line, per_program_lines
from mlir_rl_tui.cli.options import PROGRAMS_HELP, PROGRAMS_METAVAR, add_json, checkpoint, positive_int
from mlir_rl_tui.cli.output import CliError, emit
from mlir_rl_tui.cli.paths import folder, output_file, replacing

DESCRIPTION = """
The cost model predicts a schedule's speedup over the untransformed program, with an error bar, without
measuring it; `search --method guided` uses it to choose which candidates to measure.

Its data are the measurements in the cache (`--cache`, default the usual one) of the programs named by
--programs and --held-out (the cache stores programs by hash: the files are needed for their features).
Programs are split, not samples: the eval split of a data set folder and every --held-out program are
never trained on, and `train` and `eval` report the model's accuracy on them: Spearman rank correlation
(over all their measurements, and the mean over programs), mean error, and how often the measured speedup
is within two standard deviations of the prediction, and inside the calibrated interval.

`calibrate` sets that interval on held-out programs (split conformal prediction: the measured speedups'
distances from the prediction, in units of the ensemble's spread); the app and `search --method guided`
show it, and no interval (a "-") for a program with an op kind the model was not trained on.

    mlir-rl-tui dataset generate --out data --n 40
    mlir-rl-tui dataset measure data                    # measurements for the cache
    mlir-rl-tui costmodel train --programs data --out costmodel.pt
    mlir-rl-tui costmodel eval --model costmodel.pt --programs data
    mlir-rl-tui costmodel calibrate --model costmodel.pt --programs data   # train does it too
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="costmodel_command", metavar="ACTION")
    t = sub.add_parser("train", help="train the cost model on the cache's measurements")
    e = sub.add_parser("eval", help="the cost model's accuracy on held-out programs")
    c = sub.add_parser("calibrate", help="calibrate the model's interval on held-out programs")
    for q in (t, e, c):
        q.add_argument("--programs", nargs="+", default=[], metavar=PROGRAMS_METAVAR,
                       help=PROGRAMS_HELP + " (a data set's eval split is held out)")
        q.add_argument("--held-out", nargs="+", default=[], metavar=PROGRAMS_METAVAR,
                       help="programs never trained on: the model is evaluated on them")
        q.add_argument("--cache", metavar="DIR", help="cache folder (default: $MLIR_RL_TUI_CACHE or the user's)")
        add_json(q)
    t.add_argument("--out", default="costmodel.pt", help="model file to write (default costmodel.pt)")
    t.add_argument("--members", type=positive_int, default=5, help="ensemble size, for the error bar (default 5)")
    t.add_argument("--epochs", type=positive_int, default=400, help="training steps per member (default 400)")
    t.add_argument("--seed", type=int, default=0)
    for q in (e, c):
        q.add_argument("--model", metavar="FILE", type=checkpoint("cost model file"),
                       help="cost model file (default: the shipped one)")
    c.add_argument("--out", metavar="FILE", help="where to write the calibrated model (default: over --model)")
    for q in (t, c):
        q.add_argument("--level", type=float, default=0.9,
                       help="share of measured speedups the interval is to hold (default 0.9)")
    e.add_argument("--split", choices=["held-out", "all"], default="held-out",
                   help="evaluate on the held-out programs (default) or on all of them")
    p.set_defaults(usage_help=p.print_help)


def run(args: argparse.Namespace) -> int:
    if args.costmodel_command not in ("train", "eval", "calibrate"):
        args.usage_help()
        return 2
    if not args.programs and not args.held_out:
        raise CliError("name the programs whose measurements to use: --programs DIR|FILE ... (the cache keeps "
                       "programs by hash only)")
    try:
        from mlir_rl_tui.agent import costmodel_train as cm
    except ImportError as e:
        raise CliError(f"the cost model needs the agent extra (torch: {e.name} is missing); "
                       "pip install 'mlir-rl-tui[agent]'") from None
    from mlir_rl_tui.engine.store.cache import CACHE_FILE, Cache, default_cache_dir

    where = folder("--cache", args.cache, must_exist=True) if args.cache else default_cache_dir()
    out = getattr(args, "out", None)
    if out:  # the model file to write: not a folder, not a program read here (before any work)
        output_file(out, [*(args.programs or []), *(args.held_out or [])])
    programs = cm.read_programs(args.programs, args.held_out)
    cache = Cache(os.path.join(where, CACHE_FILE))
    try:
        samples = cm.read_samples(cache, programs)
    finally:
        cache.close()
    level = getattr(args, "level", None)
    if level is not None and not 0 < level < 1:
        raise CliError(f"--level {level}: a share between 0 and 1")
    if args.costmodel_command == "train":
        return _train(args, cm, programs, samples)
    held = cm.held_out_samples(programs, samples)
    if args.costmodel_command == "calibrate":
        return _calibrate(args, cm, programs, held)
    return _eval(args, cm, programs, samples if args.split == "all" else held)


def _model(path: str | None):
    """The cost model of `--model` (default: the shipped one)."""
    from mlir_rl_tui.agent.costmodel import load_cost_model

    model = load_cost_model(path)
    if model is None:
        raise CliError("no shipped cost model (agent/checkpoints/costmodel.pt); train one and pass --model")
    return model


def _calibrate(args, cm, programs, held) -> int:
    from mlir_rl_tui.agent.costmodel import DEFAULT_MODEL

    model = _model(args.model)
    c = cm.recalibrate(model, programs, held, args.level)
    out = args.out or args.model or DEFAULT_MODEL
    with replacing(out) as tmp:  # one line on a write error; OUT replaced only when whole
        model.save(tmp)
    if args.json:
        emit({"out": out, **c})
        return 0
    print(interval_line(out, c))
    return 0


def _train(args, cm, programs, samples) -> int:
    from mlir_rl_tui.progress import ProgressLine

    start = time.monotonic()
    with ProgressLine() as line:
        model, train, held = cm.train_held_out(
            programs, samples, cm.TrainConfig(members=args.members, epochs=args.epochs, seed=args.seed), args.level,
            on_progress=lambda k, n, loss: line.update(f"costmodel: member {k + 1}/{n}, loss {loss:.3f}"))
    with replacing(args.out) as tmp:  # one line on a write error; OUT replaced only when whole
        model.save(tmp)
    report = {"out": args.out, "train_samples": len(train), "train_programs": len({s.program for s in train}),
              "seconds": round(time.monotonic() - start, 1), **cm.fit_report(model, train, held, programs.names)}
    if args.json:
        emit(report)
        return 0
    print(f"{args.out}: trained on {len(train)} measurements of {report['train_programs']} programs, "
          f"{report['seconds']} s")
    print(accuracy_line("train (fit)", report["train"]))
    if held:
        print(accuracy_line("held out", report["held_out"]))
    else:
        print("no held-out programs with measurements: pass --held-out or a data set folder with an eval split")
    return 0


def _eval(args, cm, programs, samples) -> int:
    report = cm.evaluate(_model(args.model), samples, programs.names)
    if args.json:
        emit(report)
        return 0
    print(accuracy_line("held out" if args.split == "held-out" else "all", report))
    for line in per_program_lines(report):
        print(line)
    return 0
