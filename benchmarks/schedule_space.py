"""Data behind the schedule space: which register tiles reach the peak, and how large V may go.

Two tables, measured through the engine (new V: contraction form, hoisted accumulator, FMA lowering):

1. register tiles: serial `T(outer) V` on matmul 256^3 and conv2d 56x56x64 (3x3), GFLOP/s and % of the
   FMA peak, for the tile sizes of `Limits.tile_sizes` and for candidates outside it (6, 7, 12, 14, ...);
2. vector size: compile time (lower + JIT) and speed against the vectorized extent (the product of the
   tiled op's extents, `engine.schedule.state.vector_elements`), which `Limits.max_vector_elements` bounds.

    .venv/bin/python benchmarks/schedule_space.py [--only tiles|vectors]
"""

from __future__ import annotations

import argparse
import os
import sys

from mlir_rl_tui.engine import Engine, load_file, parse
from mlir_rl_tui.engine.config import MeasureConfig
from mlir_rl_tui.engine.schedule.state import check_schedule, vector_elements

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "samples")

TILES = [
    ("matmul", f"op0: T({i},{j},1) V") for i, j in
    [(4, 32), (4, 64), (8, 16), (8, 32), (8, 64), (16, 16), (16, 32), (2, 128), (1, 256)]
] + [
    ("conv2d", f"op0: T(1,1,{w},{f},1,0,1) V") for w, f in
    [(4, 32), (4, 64), (7, 32), (8, 16), (8, 32), (14, 16), (14, 32), (28, 16), (8, 64), (2, 64)]
]
VECTORS = [
    ("matmul", f"op0: T({i},{j},{k}) V") for i, j, k in
    [(8, 32, 1), (8, 32, 2), (8, 32, 4), (8, 32, 8), (16, 32, 4), (16, 64, 2), (32, 32, 4), (8, 32, 16),
     (16, 64, 4), (32, 64, 4), (64, 64, 2)]
] + [
    ("conv2d", f"op0: T(1,1,{w},{f},1,0,{c}) V") for w, f, c in
    [(8, 32, 1), (8, 32, 2), (8, 32, 4), (8, 32, 8), (14, 64, 2), (28, 64, 4)]
] + [
    ("add", f"op0: T({i},{j}) V") for i, j in [(1, 256), (1, 1024), (4, 512), (8, 512), (16, 1024), (32, 1024)]
]


def run(eng: Engine, cases: list[tuple[str, str]], title: str) -> None:
    print(f"\n{title}\n| program | schedule | vector elements | compile ms | ms | GFLOP/s | % of peak |")
    print("|---|---|---|---|---|---|---|")
    for name, text in cases:
        prog = load_file(os.path.join(SAMPLES, f"{name}.mlir"))
        sched = parse(text)
        from mlir_rl_tui.engine.config import Limits

        states = check_schedule(prog, sched, Limits(max_vector_elements=1 << 30))
        st = states["op0"]
        before_v = st.copy()
        before_v.vectorized = before_v.done = False
        n = vector_elements(before_v)
        m = eng.measure(prog, sched, check=False)
        comp = m.stages_ms.get("lower", 0) + m.stages_ms.get("jit", 0)
        if not m.ok:
            print(f"| {name} | `{text}` | {n} | {comp:.0f} | {m.status} | | |", flush=True)
            continue
        print(f"| {name} | `{text}` | {n} | {comp:.0f} | {m.time_ms:.3f} | {m.gflops:.1f} | "
              f"{100 * (m.peak_fraction or 0):.0f}% |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["tiles", "vectors"])
    args = ap.parse_args()
    with Engine(config=MeasureConfig(runs=5), reuse=False) as eng:
        if args.only != "vectors":
            run(eng, TILES, "Register tiles (serial)")
        if args.only != "tiles":
            run(eng, VECTORS, "Vector size: compile time and speed (serial)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
