"""Whole models through `mlir-rl-tui tune`, against PyTorch eager and `torch.compile`, on this CPU.

For each model of benchmarks/model_zoo.py (ResNet-18, MobileNetV2, a small ViT, a 1-D conv net, a speech
front-end, a U-Net down block; batch 1):
1. `mlir-rl-tui tune model_zoo.py:NAME --input SHAPE --minutes M` as a user runs it, with a fresh tuning
   database: the wall time (import, policy, tuning, build, check);
2. the same command again on the same database: the wall time of a second run (the workloads are known);
3. the tuned library through `mlir_rl_tui.torch.load` (its Python call included), the module eager and the
   module under `torch.compile` (compiled and warmed up first), all at --threads threads, checked against
   one another (rtol 1e-3, atol 1e-4 of the largest output), then timed in --rounds interleaved rounds
   (each round: each variant's median call over ~0.3 s, in a rotating order), and in the same rounds the
   tuned module as a user's model calls it between PyTorch's own layers: its median call when each call
   follows one eager call of the model ("between"), and its fastest call (the engine's figure is a fastest
   run per round). The engine's state probe, built as a library, is timed around every figure: rounds in
   which the host slowed it beyond STEADY_FACTOR are left out (the engine leaves out its own such rounds),
   when 2 or more rounds are left;
4. in the same rounds, the engine's own figure for the library's schedule (a fastest run per timing round
   of the kernel in its worker, `apply --no-cache`), against the module's median call alone and between
   PyTorch calls, their ratio taken within each round (a slow spell of the host moves both): the
   in-process overhead is what the call costs beyond it;
5. the tuned schedule against `tune`'s start, paired in one burst (Engine.compare);
6. per model: the ratios eager / tuned and compile / tuned (median over rounds, min..max).

    .venv/bin/python benchmarks/models.py [--minutes 5] [--only resnet18,unet_down] [--rounds 7] [--out DIR]
                                          [--zoo FILE]   (your own models, in model_zoo.py's form)

Run it on an otherwise idle machine: it takes about (minutes + 2) per model.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mlir_rl_tui.engine.measure.timing import STEADY_FACTOR

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(ROOT, "benchmarks", "model_zoo.py")


def tune(zoo: str, name: str, shape: str, minutes: float, out: str, db: str) -> tuple[dict, float]:
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "tune", f"{zoo}:{name}", "--input", shape, "--minutes",
                        str(minutes), "-o", out, "--db", db, "--json"], capture_output=True, text=True)
    took = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError(f"{name}: tune failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout), took


def call_ms(fn, x, seconds: float = 0.3, stat=statistics.median) -> float:
    """The median (`stat`) call of `fn(x)` over about `seconds`."""
    fn(x)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t = time.perf_counter()
        fn(x)
        times.append(time.perf_counter() - t)
    return stat(times) * 1e3


def state_probe(out: str):
    """The engine's state probe (engine.measure.contention: the matmul sample's parallel schedule, cache-resident
    vector code that the host's slow spells slow like the kernels) built as a library and called here: a
    function giving its fastest of 5 runs, in ms. Rounds it says the host slowed are left out, as the
    engine leaves out its own unsteady rounds."""
    import numpy as np

    from mlir_rl_tui import runtime
    from mlir_rl_tui.engine.measure.contention import STATE_PARALLEL, STATE_RUNS, STATE_SAMPLE

    lib = os.path.join(out, "state_probe.so")
    p = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", STATE_SAMPLE, "--schedule", STATE_PARALLEL,
                        "-o", lib], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"building the state probe failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    k = runtime.load(lib)
    xs = [np.random.default_rng(0).standard_normal(shape, dtype).astype(dtype) for shape, dtype in k.args]

    def ms() -> float:
        times = []
        for _ in range(STATE_RUNS):
            t = time.perf_counter()
            k.call(xs)
            times.append(time.perf_counter() - t)
        return min(times) * 1e3

    return ms


def between_ms(tuned, model, x, seconds: float = 0.3) -> float:
    """The median call of `tuned(x)` when each follows one call of `model(x)` (PyTorch's own ops before it,
    as a tuned block between a model's PyTorch layers is called)."""
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        model(x)
        t = time.perf_counter()
        tuned(x)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def paired(program, faster: str, slower: str) -> tuple[float, float, float] | None:
    """`slower`'s time over `faster`'s on `program` (two schedule texts), in one paired burst
    (Engine.compare), with its 95% interval (None: it failed; 1.0 for the same schedule)."""
    from mlir_rl_tui.engine import Engine, parse

    if faster == slower:
        return (1.0, 1.0, 1.0)
    with Engine() as eng:
        c = eng.compare(program, parse(faster), parse(slower))
    return (c.speedup, *c.speedup_ci) if c.status == "ok" and c.speedup_ci else None


def start_vs_best(lib: str, start: str, best: str) -> tuple[float, float, float] | None:
    """The tuned schedule against `tune`'s start on the model, in one paired burst: the start's time over
    the tuned one's, with its 95% interval (None: the same schedule, or it failed)."""
    from mlir_rl_tui.engine import load_file

    if start == best:
        return None
    return paired(load_file(os.path.splitext(lib)[0] + ".mlir"), best, start)


def engine_ms(lib: str) -> float:
    """The engine's figure for the library's schedule, measured now (`apply --no-cache` on the program `tune`
    imported beside the library)."""
    with open(lib + ".json") as f:
        desc = json.load(f)
    program = os.path.splitext(lib)[0] + ".mlir"
    p = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "apply", program, "--schedule", desc["schedule"],
                        "--no-cache", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{program}: apply failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(p.stdout)["time_ms"]


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}x ({min(xs):.2f}-{max(xs):.2f})"


def load_zoo(path: str):
    """A file of models in benchmarks/model_zoo.py's form (a factory per model, MODELS their input shapes)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("zoo", path)
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    return zoo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--zoo", default=ZOO, help="a file of models like benchmarks/model_zoo.py: a function per model "
                                               "and MODELS, each model's input shape (default: that file)")
    ap.add_argument("--only", help="comma-separated model names (default: all of model_zoo.MODELS)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", help="folder for the libraries and the tuning database (default: a temporary one)")
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    zoo = os.path.abspath(args.zoo)
    model_zoo = load_zoo(zoo)
    import torch

    import mlir_rl_tui.torch as mt

    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    out = args.out or tempfile.mkdtemp(prefix="mlir-rl-models-")
    os.makedirs(out, exist_ok=True)
    probe = state_probe(out)
    names = args.only.split(",") if args.only else list(model_zoo.MODELS)
    rows, failed = [], []
    for name in names:
        shape = model_zoo.MODELS[name]
        db = os.path.join(out, f"{name}.tuning.sqlite")
        if os.path.exists(db):
            os.remove(db)
        lib = os.path.join(out, f"{name}.so")
        try:
            first, t1 = tune(zoo, name, shape, args.minutes, lib, db)
            second, t2 = tune(zoo, name, shape, args.minutes, lib, db)
            with open(os.path.join(out, f"{name}.tune.json"), "w") as f:  # what each run did, per workload
                json.dump({"first": first, "second": second}, f, indent=1)
        except RuntimeError as e:  # reported, and the other models still run
            print(e, flush=True)
            failed.append(name)
            continue
        torch.manual_seed(0)
        model = getattr(model_zoo, name)().eval()
        tuned = mt.load(lib)
        x = torch.randn(*(int(d) for d in shape.split("x")))
        with torch.no_grad():
            compiled = torch.compile(model)
            want = model(x)
            got_c = compiled(x)
            got_t = tuned(x)
        atol = 1e-4 * max(1.0, float(want.abs().max()))
        torch.testing.assert_close(got_t, want, rtol=1e-3, atol=atol)
        torch.testing.assert_close(got_c, want, rtol=1e-3, atol=atol)
        variants = {"eager": model, "compile": compiled, "tuned": tuned}
        # the engine's figure is taken in the same rounds: a slow spell of the host that spans a round moves the
        # module and the engine's figure together, and their ratio is taken within a round
        kinds = [*variants, "between", "fastest", "engine"]
        taken: dict[str, list[tuple[float, float]]] = {k: [] for k in kinds}  # (ms, the state probe around it)
        with torch.no_grad():
            for r in range(args.rounds):
                for k in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
                    before = probe()
                    if k == "between":
                        t = between_ms(tuned, model, x)
                    elif k == "fastest":  # the engine's figure is a fastest run per round: the library's, so
                        t = call_ms(tuned, x, stat=min)
                    elif k == "engine":
                        t = engine_ms(lib)
                    else:
                        t = call_ms(variants[k], x)
                    taken[k].append((t, max(before, probe())))
        # rounds the host did not slow (the engine's state probe, engine.measure.contention: its library's fastest of
        # 5 runs within STEADY_FACTOR of its fastest), when there are 2 or more; else every round
        limit = STEADY_FACTOR * min(p for k in kinds for _, p in taken[k])
        steady = [r for r in range(args.rounds) if all(taken[k][r][1] <= limit for k in kinds)]
        use = steady if len(steady) >= 2 else list(range(args.rounds))
        times = {k: [taken[k][r][0] for r in use] for k in kinds}
        fastest = times["fastest"]
        engine_now = statistics.median(times["engine"])
        alone_vs_engine = [t / e for t, e in zip(times["tuned"], times["engine"])]
        between_vs_engine = [t / e for t, e in zip(times["between"], times["engine"])]
        gain = start_vs_best(lib, first.get("start_schedule", ""), first["schedule"])
        vs_eager = [e / t for e, t in zip(times["eager"], times["tuned"])]
        vs_compile = [c / t for c, t in zip(times["compile"], times["tuned"])]
        row = {
            "model": name, "input": shape, "ops": first["ops"], "workloads": first["distinct_workloads"],
            "eager_ms": statistics.median(times["eager"]), "compile_ms": statistics.median(times["compile"]),
            "tuned_ms": statistics.median(times["tuned"]), "between_ms": statistics.median(times["between"]),
            "engine_ms": engine_now, "engine_tuned_ms": second["best_ms"],
            "alone_vs_engine": alone_vs_engine, "between_vs_engine": between_vs_engine,
            "tuned_fastest_ms": statistics.median(fastest),
            "vs_eager": vs_eager, "vs_compile": vs_compile, "tune_s": t1, "second_s": t2,
            "second_searched": second["searched"], "measurements": first["measurements"],
            "start_ms": first["start_ms"], "best_ms": first["best_ms"], "start_vs_best": gain,
            "steady_rounds": len(steady), "rounds": args.rounds,
        }
        rows.append(row)
        print(f"{name}: eager {row['eager_ms']:.3f} ms, compile {row['compile_ms']:.3f} ms, tuned {row['tuned_ms']:.3f} "
              f"ms (between PyTorch calls {row['between_ms']:.3f}, fastest {row['tuned_fastest_ms']:.3f}, the engine's "
              f"{row['engine_ms']:.3f}); vs eager {spread(vs_eager)}, vs compile {spread(vs_compile)} "
              f"({len(steady)} of {args.rounds} rounds steady); "
              f"tune {t1:.0f} s ({first['start_ms']:.3f} -> {first['best_ms']:.3f} ms), again {t2:.0f} s", flush=True)
    print()
    print("| model | input | ops (distinct workloads) | eager ms | torch.compile ms | tuned ms | vs eager | vs compile "
          "| tune s | second tune s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['input']} | {r['ops']} ({r['workloads']}) | {r['eager_ms']:.3f} | "
              f"{r['compile_ms']:.3f} | {r['tuned_ms']:.3f} | {spread(r['vs_eager'])} | {spread(r['vs_compile'])} | "
              f"{r['tune_s']:.0f} | {r['second_s']:.0f} ({100 * r['second_s'] / r['tune_s']:.0f}%) |")
    print()
    print("| model | the engine's ms | tuned module ms, alone | between PyTorch calls | fastest call | "
              "alone / engine | between / engine |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['engine_ms']:.3f} | {r['tuned_ms']:.3f} | {r['between_ms']:.3f} | "
              f"{r['tuned_fastest_ms']:.3f} | {spread(r['alone_vs_engine'])} | {spread(r['between_vs_engine'])} |")
    print()
    print("| model | tune's start ms | tuned ms | start / tuned, paired (95% interval) | measurements |")
    print("|---|---|---|---|---|")
    for r in rows:
        g = r["start_vs_best"]
        paired = f"{g[0]:.2f}x ({g[1]:.2f}-{g[2]:.2f})" if g else "(the start)"
        print(f"| {r['model']} | {r['start_ms']:.3f} | {r['best_ms']:.3f} | {paired} | {r['measurements']} |")
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    if not rows:
        raise SystemExit(1)
    g = {k: math.exp(statistics.fmean(math.log(statistics.median(r[k])) for r in rows)) for k in ("vs_eager",
                                                                                                    "vs_compile")}
    print(f"\ngeomean: {g['vs_eager']:.2f}x eager, {g['vs_compile']:.2f}x torch.compile; lowest vs eager "
          f"{min(statistics.median(r['vs_eager']) for r in rows):.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
