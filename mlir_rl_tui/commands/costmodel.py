"""`mlir-rl-tui costmodel train|eval`: the learned cost model (agent.costmodel) on the measurement cache."""

from __future__ import annotations

import argparse
import math
import os
import time

from mlir_rl_tui.commands.common import (
    PROGRAMS_HELP,
    PROGRAMS_METAVAR,
    CliError,
    add_json,
    checkpoint,
    emit,
    folder,
    output_file,
    positive_int,
    replacing,
)

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
    held = [s for s in samples if s.program in programs.held_out]
    level = getattr(args, "level", None)
    if level is not None and not 0 < level < 1:
        raise CliError(f"--level {level}: a share between 0 and 1")
    if args.costmodel_command == "train":
        return _train(args, cm, programs, samples, held)
    if args.costmodel_command == "calibrate":
        return _calibrate(args, cm, programs, held)
    return _eval(args, cm, programs, samples if args.split == "all" else held)


def _trained_op_types(programs) -> list[str]:
    return sorted({op.op_type for sha, p in programs.by_sha.items() if sha not in programs.held_out for op in p.ops})


def _calibrate(args, cm, programs, held) -> int:
    from mlir_rl_tui.agent.costmodel import DEFAULT_MODEL, load_cost_model
    from mlir_rl_tui.engine.errors import EngineError

    model = load_cost_model(args.model)
    if model is None:
        raise CliError("no shipped cost model (agent/checkpoints/costmodel.pt); train one and pass --model")
    try:
        model.info["interval"] = cm.calibrate(model, held, _trained_op_types(programs), args.level)
    except EngineError as e:
        raise CliError(str(e)) from None
    out = args.out or args.model or DEFAULT_MODEL
    with replacing(out) as tmp:  # one line on a write error; OUT replaced only when whole
        model.save(tmp)
    c = model.info["interval"]
    if args.json:
        emit({"out": out, **c})
        return 0
    print(f"{out}: {100 * c['level']:.0f}% interval = exp(log prediction -+ {c['q']:.2f} x (members' spread + "
          f"{c['floor']:.3f})); on held-out programs it held {100 * c['coverage']:.0f}% of {c['samples']} measured "
          f"speedups of {c['programs']} programs (each half checked against the other's calibration)")
    return 0


def _train(args, cm, programs, samples, held) -> int:
    from mlir_rl_tui.progress import ProgressLine

    train = [s for s in samples if s.program not in programs.held_out]
    start = time.monotonic()
    with ProgressLine() as line:
        model = cm.train(train, cm.TrainConfig(members=args.members, epochs=args.epochs, seed=args.seed),
                         on_progress=lambda k, n, loss: line.update(f"costmodel: member {k + 1}/{n}, loss {loss:.3f}"))
    model.info.update(trained_on=sorted(programs.names[s] for s in {x.program for x in train}),
                      held_out=sorted(programs.names[s] for s in {x.program for x in held}))
    if len({s.program for s in held}) >= 2:
        model.info["interval"] = cm.calibrate(model, held, _trained_op_types(programs), args.level)
    with replacing(args.out) as tmp:  # one line on a write error; OUT replaced only when whole
        model.save(tmp)
    report = {"out": args.out, "train_samples": len(train), "train_programs": len({s.program for s in train}),
              "seconds": round(time.monotonic() - start, 1),
              "train": _summary(cm.evaluate(model, train, programs.names))}
    if held:
        report["held_out"] = cm.evaluate(model, held, programs.names)
    if args.json:
        emit(report)
        return 0
    print(f"{args.out}: trained on {len(train)} measurements of {report['train_programs']} programs, "
          f"{report['seconds']} s")
    _print("train (fit)", report["train"])
    if held:
        _print("held out", report["held_out"])
    else:
        print("no held-out programs with measurements: pass --held-out or a data set folder with an eval split")
    return 0


def _eval(args, cm, programs, samples) -> int:
    from mlir_rl_tui.agent.costmodel import load_cost_model

    model = load_cost_model(args.model)
    if model is None:
        raise CliError("no shipped cost model (agent/checkpoints/costmodel.pt); train one and pass --model")
    report = cm.evaluate(model, samples, programs.names)
    if args.json:
        emit(report)
        return 0
    _print("held out" if args.split == "held-out" else "all", report)
    for name, p in report["per_program"].items():
        print(f"    {name:<60} {p['samples']:>4} samples  spearman {_f(p['spearman'])}  "
              f"model's pick {p['top1']:.2f} of the best")
    return 0


def _summary(r: dict) -> dict:
    return {k: v for k, v in r.items() if k != "per_program"}


def _f(x: float) -> str:
    return "  -  " if math.isnan(x) else f"{x:+.2f}"


def _print(what: str, r: dict) -> None:
    print(f"{what}: {r['samples']} measurements of {r['programs']} programs: spearman {_f(r['spearman'])} "
          f"(per program {_f(r['spearman_per_program'])}), mean error {100 * r['mean_rel_error']:.0f}% "
          f"(median {100 * r['median_rel_error']:.0f}%, |log| {r['mean_abs_log_error']:.2f}), "
          f"{100 * r['within_2_std']:.0f}% within 2 std, model's pick {r['top1_gmean']:.2f} of the best"
          + (f", {100 * r['within_interval']:.0f}% inside its {100 * r['interval_level']:.0f}% interval"
             if "within_interval" in r else ""))
