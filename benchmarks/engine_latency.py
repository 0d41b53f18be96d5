"""Engine latency and the speedup of a good hand schedule, measured in one run on this machine.

    .venv/bin/python benchmarks/engine_latency.py [--repeat 5] [--schedule TEXT]

Reports the time of each stage (parse, features, transform, lower, JIT, run) for the matmul sample,
the wall time of a whole step (transform + compile + check + time in a worker), and speedup ratios.
Goals (issue 2): whole step < 1 s, transform < 50 ms per op, good schedule >= 20x over the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from mlir_rl_tui.engine import Engine, Session, load_file, parse
from mlir_rl_tui.engine.store.cache import Cache

HAND = {
    "serial": "op0: T(8,32,1) V",
    "parallel": "op0: TP(64,64,0) T(8,32,1) V",
    "parallel+fused fill": "op0: TF(64,64,0) T(8,32,1) V",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", default=os.path.join(os.path.dirname(__file__), "..", "samples", "matmul.mlir"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    t0 = time.perf_counter()
    prog = load_file(args.file)
    parse_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    for _ in range(100):
        Session(prog).observation()
    features_ms = (time.perf_counter() - t0) * 10

    with Engine(cache=Cache(os.path.join(tempfile.mkdtemp(), "c.sqlite"))) as eng:
        base = eng.baseline(prog)
        assert base.ok, base.error
        rows, walls = [], {}
        for name, text in HAND.items():
            ms = []
            for i in range(args.repeat):
                t0 = time.perf_counter()
                m = eng.measure(prog, parse(text), use_cache=False)
                ms.append((time.perf_counter() - t0) * 1e3)
                if i == args.repeat - 1:
                    rows.append((name, text, m))
            walls[name] = statistics.median(ms)
        print(f"# Engine latency: {os.path.basename(args.file)} ({prog.ops[0].name} {prog.ops[0].shape_text}), "
              f"{os.cpu_count()} cores\n")
        print(f"load (parse + describe) in the app process: {parse_ms:.1f} ms; features of one state: "
              f"{features_ms:.2f} ms\n")
        print("| schedule | status | transform ms | lower ms | JIT ms | run ms (k runs) | whole step ms | time ms | speedup |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, text, m in rows:
            s = m.stages_ms
            print(f"| `{text}` ({name}) | {m.status} | {s.get('transform', 0):.1f} | {s.get('lower', 0):.1f} | "
                  f"{s.get('jit', 0):.1f} | {s.get('run', 0):.1f} | {walls[name]:.0f} | {m.time_ms:.3f} | "
                  f"{m.speedup:.1f}x |")
        print(f"\nbaseline: {base.time_ms:.3f} ms ({2 * 256**3 / base.time_ms / 1e6:.1f} GFLOP/s)")
        best = max(rows, key=lambda r: r[2].speedup or 0)
        print(f"best hand schedule: `{best[1]}` {best[2].speedup:.1f}x, "
              f"{2 * 256**3 / best[2].time_ms / 1e6:.1f} GFLOP/s")
        worst_step = max(walls.values())
        worst_tr = max(r[2].stages_ms.get("transform", 0) for r in rows)
        print(f"goals: whole step {worst_step:.0f} ms (< 1000: {'yes' if worst_step < 1000 else 'NO'}); transform "
              f"{worst_tr:.1f} ms per op (< 50: {'yes' if worst_tr < 50 else 'NO'}); best speedup "
              f"{best[2].speedup:.1f}x (>= 20: {'yes' if best[2].speedup >= 20 else 'NO'})")


if __name__ == "__main__":
    main()
