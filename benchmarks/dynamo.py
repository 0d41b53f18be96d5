"""`torch.compile(model, backend="mlir_rl_tui")` on the zoo's models, against PyTorch eager, on this CPU.

For each model of benchmarks/model_zoo.py (or --zoo FILE), each case in a process of its own with a fresh
Dynamo, at --threads threads:
1. **default options, no database** (a fresh cache folder): the first call's wall time (the compile), the
   output against eager (rtol 1e-3, atol 1e-4 of the largest value), what the backend said, and the
   compiled model's median call against eager's in --rounds interleaved rounds (each round: each one's
   median call over ~0.3 s): eager / compiled, median (min-max) over rounds. A graph the backend did not
   serve runs as eager code, so the ratio is the model's as a user gets it, fallbacks included.
2. **a database tuned for the model** (`mlir-rl-tui tune --minutes M` first, in that cache folder): the
   first call's wall time again, and the compiled model against the library `tune` built
   (`mlir_rl_tui.torch.load`), interleaved the same way (compiled / loaded: the cost of Dynamo's guards and
   the backend's call around the same kind of library).

    .venv/bin/python benchmarks/dynamo.py [--only resnet18,conv1d_net] [--minutes 1] [--rounds 5]

Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import load_zoo  # noqa: E402 - benchmarks/ is a folder of scripts, not a package

CASE = r"""
import importlib.util, json, statistics, sys, time, warnings
import torch
zoo, name, shape, lib, rounds, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
torch.set_num_threads(threads)
spec = importlib.util.spec_from_file_location("zoo", zoo); z = importlib.util.module_from_spec(spec); spec.loader.exec_module(z)
torch.manual_seed(0)
model = getattr(z, name)().eval()
x = torch.randn(*(int(d) for d in shape.split("x")))
c = torch.compile(model, backend="mlir_rl_tui")
with torch.no_grad(), warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    t = time.perf_counter(); got = c(x); first_s = time.perf_counter() - t
    want = model(x)
fell = [str(m.message) for m in w if "runs as PyTorch's own code" in str(m.message)]
ok = bool(torch.allclose(got, want, rtol=1e-3, atol=1e-4 * float(want.abs().max())))
other = None
if lib != "-":
    import mlir_rl_tui.torch as mt
    other = mt.load(lib)
def med(f, s=0.3):
    ts = []; end = time.perf_counter() + s
    while time.perf_counter() < end or len(ts) < 5:
        t = time.perf_counter(); f(x); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
ratios, ms = [], {"eager": [], "compiled": [], "loaded": []}
with torch.no_grad():
    for r in range(rounds):
        order = [("eager", model), ("compiled", c)] + ([("loaded", other)] if other is not None else [])
        order = order[r % len(order):] + order[:r % len(order)]
        for k, f in order:
            ms[k].append(med(f))
print(json.dumps({"first_s": first_s, "match": ok, "fallbacks": fell, "ms": ms}))
"""


def case(zoo: str, name: str, shape: str, lib: str, rounds: int, threads: int, cache: str) -> dict:
    env = {**os.environ, "MLIR_RL_TUI_CACHE": cache, "OMP_NUM_THREADS": str(threads)}
    os.makedirs(cache, exist_ok=True)  # and the case runs there: outside a checkout and its build's egg-info
    p = subprocess.run([sys.executable, "-c", CASE, zoo, name, shape, lib, str(rounds), str(threads)],
                       capture_output=True, text=True, env=env, cwd=cache if os.path.isdir(cache) else None)
    if p.returncode != 0:
        raise RuntimeError(f"{name}: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("mlir_rl_tui:")]
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "said": said}


def spread(xs: list[float]) -> str:
    s = sorted(xs)
    return f"{s[len(s) // 2]:.2f}x ({s[0]:.2f}-{s[-1]:.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=os.path.join(HERE, "model_zoo.py"))
    ap.add_argument("--only")
    ap.add_argument("--minutes", type=float, default=1.0, help="the tune before case 2 (default 1)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args()
    zoo = os.path.abspath(args.zoo)
    z = load_zoo(zoo)
    rows = []
    print("| model | first call, no database | matches eager | graphs served / fallbacks | eager / compiled "
          "| first call, tuned database | compiled / loaded library |")
    print("|---|---|---|---|---|---|---|")
    for name in (args.only.split(",") if args.only else list(z.MODELS)):
        shape = z.MODELS[name]
        with tempfile.TemporaryDirectory(prefix="mlir-rl-dynamo-") as tmp:
            cold = case(zoo, name, shape, "-", args.rounds, args.threads, os.path.join(tmp, "cold"))
            warm_cache = os.path.join(tmp, "warm")
            lib = os.path.join(tmp, f"{name}.so")
            t = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "tune", f"{zoo}:{name}", "--input", shape,
                                "--minutes", str(args.minutes), "-o", lib, "--json"], capture_output=True, text=True,
                               env={**os.environ, "MLIR_RL_TUI_CACHE": warm_cache})
            if t.returncode != 0:
                raise SystemExit(f"{name}: tune failed: {(t.stderr.strip().splitlines() or ['?'])[-1]}")
            warm = case(zoo, name, shape, lib, args.rounds, args.threads, warm_cache)
        e_c = [e / c for e, c in zip(cold["ms"]["eager"], cold["ms"]["compiled"])]
        c_l = [c / lo for c, lo in zip(warm["ms"]["compiled"], warm["ms"]["loaded"])]
        row = {"model": name, "cold": cold, "warm": warm, "eager_over_compiled": e_c, "compiled_over_loaded": c_l}
        rows.append(row)
        print(f"| {name} | {cold['first_s']:.1f} s | {cold['match'] and warm['match']} | {len(cold['said'])} / "
              f"{len(cold['fallbacks'])} | {spread(e_c)} | {warm['first_s']:.1f} s | {spread(c_l)} |", flush=True)
        for line in cold["said"] + cold["fallbacks"]:
            print(f"  {line}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
