"""Training-data generator in the style of the paper's dataset (mlir-rl-2025 Sec. VI-A).

Two kinds of programs, each one public `@forward` with tensor arguments and one tensor result (like
samples/):
- single deep-learning ops (matmul, conv_2d, max pooling, add, relu) with shapes drawn from the layers
  of common models (ResNet/MobileNet convolutions and poolings, transformer and MLP matmuls);
- random sequences of length L=5 where each op consumes the previous op's output, over add, matmul,
  relu, conv_2d, pooling, sigmoid and softmax (softmax as max / exp / sum / divide linalg.generic ops,
  since linalg.softmax is refused by the loader). A sequence lives either in the dense world (2-D:
  matmul, add, relu, sigmoid, softmax) or the image world (NHWC: conv_2d, pooling, add, relu, sigmoid).

Shapes are kept small enough for a baseline run of at most `max_baseline_ms` on a laptop core (the
paper's shapes take seconds untransformed). `generate` writes the .mlir files and `manifest.json` with
the train/eval split (and, given an engine, every program's baseline time), `read_manifest` reads such a
folder back, and `measure` runs searches on its programs for the cost model. The ops' MLIR text is
engine.corpus.linalg_text's; measurement files (dataset export/import) are engine.store.measurement_file's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mlir_rl_tui.engine.corpus.linalg_text import (
    Module,
    op_add,
    op_conv,
    op_matmul,
    op_pool,
    op_relu,
    op_sigmoid,
    op_softmax,
)
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import load

SINGLE_OPS = ("matmul", "conv_2d", "pooling", "add", "relu")
SEQUENCE_OPS = ("add", "matmul", "relu", "conv_2d", "pooling", "sigmoid", "softmax")
DENSE_OPS = ("matmul", "add", "relu", "sigmoid", "softmax")
IMAGE_OPS = ("conv_2d", "pooling", "add", "relu", "sigmoid")
SEQUENCE_LENGTH = 5
MAX_FLOPS = 6e7  # per program: a naive baseline runs in tens of milliseconds
MIN_FLOPS = 2e5  # per program: smaller ones run in microseconds, where timing noise swamps speedups
MAX_ELEMENTS = 1 << 20  # per tensor
MAX_MANIFEST_BYTES = 64 << 20  # largest manifest.json read

# Layer dimensions seen in real models (ResNet, MobileNet, BERT/ViT MLPs, small CNNs).
_ROWS = (16, 32, 49, 64, 128, 196, 256, 384, 512)
_FEATURES = (64, 128, 192, 256, 384, 512, 768, 1024)
_SPATIAL = (7, 14, 28, 56, 112)
_CHANNELS = (3, 16, 24, 32, 64, 96, 128, 256)
_FILTERS = (16, 32, 64, 128, 256)
_KERNELS = (1, 3, 3, 5, 7)


# ----------------------------------------------------------------------------------------------
@dataclass
class Generated:
    """One program of the data set, before it is written."""

    name: str
    kind: str  # "single" | "sequence"
    ops: list[str]
    text: str
    flops: int
    meta: dict = field(default_factory=dict)


def _pick(rng: np.random.Generator, xs):
    return xs[int(rng.integers(len(xs)))]


def single_op(rng: np.random.Generator, op: str) -> Generated:
    """One op with model-like shapes, redrawn until its work fits MAX_FLOPS."""
    for _ in range(1000):
        m = Module()
        if op == "matmul":
            rows, k, n = _pick(rng, _ROWS), _pick(rng, _FEATURES), _pick(rng, _FEATURES)
            x = m.arg((rows, k))
            v, shape = op_matmul(m, x, (rows, k), n)
            desc = f"{rows}x{n}x{k}"
        elif op == "conv_2d":
            s, c, f, k = _pick(rng, _SPATIAL), _pick(rng, _CHANNELS), _pick(rng, _FILTERS), _pick(rng, _KERNELS)
            stride = 2 if rng.random() < 0.25 else 1
            if s < k:
                continue
            h = (s - 1) * stride + k
            x = m.arg((1, h, h, c))
            v, shape = op_conv(m, x, (1, h, h, c), f, k, stride)
            desc = f"{h}x{h}x{c}_k{k}s{stride}_f{f}"
        elif op == "pooling":
            s, c, k = _pick(rng, _SPATIAL), _pick(rng, _CHANNELS[1:]), _pick(rng, (2, 3))
            stride = _pick(rng, (1, 2, 2))
            h = (s - 1) * stride + k
            x = m.arg((1, h, h, c))
            v, shape = op_pool(m, x, (1, h, h, c), k, stride)
            desc = f"{h}x{h}x{c}_k{k}s{stride}"
        elif op in ("add", "relu"):
            if rng.random() < 0.5:
                shape = (_pick(rng, _ROWS), _pick(rng, _FEATURES))
            else:
                s = _pick(rng, _SPATIAL)
                shape = (1, s, s, _pick(rng, _CHANNELS[1:]))
            x = m.arg(shape)
            v, shape = op_add(m, x, shape) if op == "add" else op_relu(m, x, shape)
            desc = "x".join(str(d) for d in shape)
        else:
            raise EngineError(f"unknown op {op!r}; single ops are {', '.join(SINGLE_OPS)}")
        if MIN_FLOPS <= m.flops <= MAX_FLOPS and all(np.prod(a) <= MAX_ELEMENTS for a in m.args + [shape]):
            text = m.text(v, shape, f"Data set single op ({op}, shapes as in real models): {desc}.")
            return Generated(f"{op}_{desc}", "single", [op], text, m.flops)
    raise EngineError(f"could not draw a {op} small enough")  # pragma: no cover


def sequence(rng: np.random.Generator, length: int = SEQUENCE_LENGTH) -> Generated:
    """A random chain: each op takes the previous op's output (paper Sec. VI-A)."""
    for _ in range(1000):
        m = Module()
        ops: list[str] = []
        if rng.random() < 0.5:
            shape = (_pick(rng, _ROWS[:-2]), _pick(rng, _FEATURES[:5]))
            world = DENSE_OPS
        else:
            s = _pick(rng, (16, 28, 32, 56))
            shape = (1, s, s, _pick(rng, (8, 16, 32, 64)))
            world = IMAGE_OPS
        x = m.arg(shape)
        v, cur = x, shape
        for _ in range(length):
            op = _pick(rng, world)
            if op == "matmul":
                v, cur = op_matmul(m, v, cur, _pick(rng, _FEATURES[:5]))
            elif op == "add":
                v, cur = op_add(m, v, cur)
            elif op == "relu":
                v, cur = op_relu(m, v, cur)
            elif op == "sigmoid":
                v, cur = op_sigmoid(m, v, cur)
            elif op == "softmax":
                v, cur = op_softmax(m, v, cur)
            elif op == "conv_2d":
                k = _pick(rng, (1, 3, 3)) if cur[1] >= 3 else 1
                v, cur = op_conv(m, v, cur, _pick(rng, (8, 16, 32, 64)), k, 1)
            elif op == "pooling":
                if cur[1] < 4:
                    op = "relu"
                    v, cur = op_relu(m, v, cur)
                else:
                    v, cur = op_pool(m, v, cur, 2, 2)
            ops.append(op)
        if MIN_FLOPS <= m.flops <= MAX_FLOPS and all(np.prod(a) <= MAX_ELEMENTS for a in m.args + [cur]):
            desc = "-".join(ops)
            dims = "x".join(str(d) for d in shape)
            text = m.text(v, cur, f"Data set random sequence of {length} ops on {dims}: {desc}.")
            return Generated(f"seq_{dims}_{desc}", "sequence", ops, text, m.flops)
    raise EngineError("could not draw a sequence small enough")  # pragma: no cover


def draw(rng: np.random.Generator, i: int) -> Generated:
    """Program number i: even numbers are single ops (cycling through SINGLE_OPS), odd ones sequences."""
    return single_op(rng, SINGLE_OPS[(i // 2) % len(SINGLE_OPS)]) if i % 2 == 0 else sequence(rng)


MAX_DUPLICATE_DRAWS = 1000
MAX_SLOW_DRAWS = 20


def generate(out_dir: str, n: int, seed: int = 0, engine=None, eval_fraction: float = 0.2,
             max_baseline_ms: float = 100.0, on_progress: Callable[[int, int, str], None] | None = None) -> dict:
    """Write n programs and manifest.json to out_dir; with an engine, each baseline is measured and a
    program whose baseline fails or exceeds max_baseline_ms is redrawn. Returns the manifest."""
    if n < 1:
        raise EngineError(f"--n must be at least 1, not {n}")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise EngineError(f"cannot create {out_dir}: {e.strerror}") from None
    rng = np.random.default_rng(seed)
    entries: list[dict] = []
    seen: set[str] = set()
    for i in range(n):
        # duplicates cost nothing to redraw (small kinds such as 2-D adds repeat often in long data sets);
        # draws whose baseline fails or is too slow cost a measurement each, so those are capped lower
        dups = slow = 0
        while True:
            g = draw(rng, i)
            prog = load(g.text, name=g.name)  # a LoadError here is a generator bug
            if prog.sha256 in seen:
                dups += 1
                if dups >= MAX_DUPLICATE_DRAWS:
                    raise EngineError(f"program {i}: {dups} draws in a row repeated earlier programs; "
                                      f"ask for fewer than {n} programs or another --seed")
                continue
            fname = f"{i:04d}_{g.name}.mlir"
            entry = {"name": fname[:-5], "path": fname, "kind": g.kind, "ops": g.ops, "flops": g.flops,
                     "linalg_ops": len(prog.ops), "sha256": prog.sha256}
            if engine is not None:
                m = engine.baseline(prog)
                if not m.ok or (m.time_ms or 0) > max_baseline_ms:
                    slow += 1
                    if slow >= MAX_SLOW_DRAWS:
                        raise EngineError(f"program {i}: no new draw had a baseline that runs under "
                                          f"{max_baseline_ms} ms")
                    continue
                entry["baseline_ms"] = m.time_ms
            break
        seen.add(prog.sha256)
        with open(os.path.join(out_dir, fname), "w") as f:
            f.write(g.text)
        entries.append(entry)
        if on_progress is not None:
            on_progress(i + 1, n, fname)
    # split: stratified by kind, a seeded eval_fraction of each kind goes to eval
    split_rng = np.random.default_rng(seed + 1)
    for kind in ("single", "sequence"):
        idx = [i for i, e in enumerate(entries) if e["kind"] == kind]
        n_eval = int(round(eval_fraction * len(idx)))
        chosen = set(split_rng.permutation(idx)[:n_eval].tolist()) if idx else set()
        for i in idx:
            entries[i]["split"] = "eval" if i in chosen else "train"
    manifest = {"version": 1, "seed": seed, "n": n, "eval_fraction": eval_fraction, "programs": entries,
                "train": [e["path"] for e in entries if e["split"] == "train"],
                "eval": [e["path"] for e in entries if e["split"] == "eval"]}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def read_manifest(path: str) -> dict:
    """A data-set manifest (a file, or a folder holding manifest.json): the one reader, for what `generate`
    writes and for hand-written ones, {"programs": [entry, ...]} where an entry is a path or an object with
    a "path" (and optionally a "split"). Entries come back as objects with "abspath" (paths are relative to
    the manifest's folder); anything else is an EngineError (one line)."""
    if os.path.isdir(path):
        path = os.path.join(path, "manifest.json")
    what = f"{path} is not a data set manifest"
    try:
        size = os.path.getsize(path)
        if size > MAX_MANIFEST_BYTES:
            raise EngineError(f"{what}: {size / 2**20:.1f} MB is larger than a manifest may be "
                              f"({MAX_MANIFEST_BYTES / 2**20:.1f} MB)")
        with open(path, "rb") as f:
            man = json.loads(f.read(MAX_MANIFEST_BYTES + 1))
    except OSError as e:
        raise EngineError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise EngineError(f"{what}: {e.msg} at line {e.lineno}") from None
    except UnicodeDecodeError:
        raise EngineError(f"{what}: not UTF-8 text") from None
    except RecursionError:
        raise EngineError(f"{what}: nested too deeply") from None
    programs = man.get("programs") if isinstance(man, dict) else None
    if not isinstance(programs, list):
        raise EngineError(f"{what}: no list of programs (expected {{\"programs\": [{{\"path\": ...}}, ...]}})")
    base = os.path.dirname(os.path.abspath(path))
    for i, e in enumerate(programs):
        e = {"path": e} if isinstance(e, str) else e
        p = e.get("path") if isinstance(e, dict) else None
        if not isinstance(p, str) or not p or len(p) > 4096 or "\0" in p:
            raise EngineError(f"{what}: program {i} of the manifest is not a path or a {{\"path\": ...}} object")
        e["abspath"] = os.path.join(base, p)
        programs[i] = e
    return man


#: What `measure` runs on each program by default: random draws cover the space, hill climbing the region
#: near good schedules (where a model-guided search must rank well).
MEASURE_METHODS = ("random", "hill")


def measure(paths: list[str], engine, budget: int = 20, methods: tuple[str, ...] = MEASURE_METHODS, seed: int = 0,
            on_progress: Callable[[int, int, str], None] | None = None) -> dict[str, int]:
    """Measurements for the cost model (agent.costmodel): each search method with `budget` measurements on
    each program, all stored in the engine's cache. Returns {program path: measurements made}; a program
    whose baseline does not run is skipped (0)."""
    from mlir_rl_tui.engine.ir.program import load_file
    from mlir_rl_tui.engine.search import search

    made: dict[str, int] = {}
    for i, path in enumerate(paths):
        prog = load_file(path)
        made[path] = 0
        for k, method in enumerate(methods):
            if on_progress is not None:
                on_progress(i, len(paths), f"{os.path.basename(path)} {method}")
            try:
                made[path] += search(engine, prog, method, budget, seed=seed + k).evaluated
            except EngineError:  # the baseline fails: nothing to learn from this program
                break
    return made
