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
the train/eval split and every program's baseline time, measured with the same pipeline as search.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.program import load

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


def _t(shape) -> str:
    return "tensor<" + "x".join(str(s) for s in shape) + "xf32>"


def _map(n: int, dims) -> str:
    d = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({d}) -> ({', '.join(f'd{i}' for i in dims)})>"


class _Module:
    """Emits one function body, SSA value by SSA value."""

    def __init__(self) -> None:
        self.args: list[tuple[int, ...]] = []
        self.lines: list[str] = []
        self.n = 0
        self.flops = 0

    def arg(self, shape) -> str:
        self.args.append(tuple(shape))
        return f"%arg{len(self.args) - 1}"

    def val(self) -> str:
        self.n += 1
        return f"%{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def empty(self, shape) -> str:
        v = self.val()
        self.emit(f"{v} = tensor.empty() : {_t(shape)}")
        return v

    def filled(self, shape, cst: str) -> str:
        e = self.empty(shape)
        v = self.val()
        self.emit(f"{v} = linalg.fill ins({cst} : f32) outs({e} : {_t(shape)}) -> {_t(shape)}")
        return v

    def generic(self, ins: list[tuple[str, tuple, list[int]]], out: tuple, out_dims: list[int], n_loops: int,
                iterators: list[str], body: list[str], init: str | None = None) -> str:
        """A linalg.generic; `body` uses %in0.., %out and ends with the yielded value in its last line."""
        maps = [_map(n_loops, dims) for _, _, dims in ins] + [_map(n_loops, out_dims)]
        init = init or self.empty(out)
        v = self.val()
        names = ", ".join(x for x, _, _ in ins)
        types = ", ".join(_t(s) for _, s, _ in ins)
        its = ", ".join(f'"{i}"' for i in iterators)
        block = ", ".join(f"%in{i}: f32" for i in range(len(ins))) + ", %out: f32"
        self.emit(f"{v} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
                  f"ins({names} : {types}) outs({init} : {_t(out)}) {{")
        self.emit(f"^bb0({block}):")
        for ln in body[:-1]:
            self.emit("  " + ln)
        self.emit(f"  linalg.yield {body[-1]} : f32")
        self.emit(f"}} -> {_t(out)}")
        return v

    def text(self, result: str, result_shape, comment: str) -> str:
        args = ", ".join(f"%arg{i}: {_t(s)}" for i, s in enumerate(self.args))
        head = [f"// {comment}", f"func.func @forward({args}) -> {_t(result_shape)} {{",
                "  %cst = arith.constant 0.000000e+00 : f32", "  %cst_1 = arith.constant 1.000000e+00 : f32",
                "  %cst_ninf = arith.constant 0xFF800000 : f32"]
        return "\n".join(head + self.lines + [f"  return {result} : {_t(result_shape)}", "}", ""])


# ----------------------------------------------------------------------------------------------
# Ops: each takes the module, its input (value, shape) and the generator; returns (value, shape, label).
def op_matmul(m: _Module, x: str, shape: tuple, n: int) -> tuple[str, tuple]:
    rows, k = shape
    w = m.arg((k, n))
    acc = m.filled((rows, n), "%cst")
    v = m.val()
    m.emit(f"{v} = linalg.matmul ins({x}, {w} : {_t(shape)}, {_t((k, n))}) outs({acc} : {_t((rows, n))}) "
           f"-> {_t((rows, n))}")
    m.flops += 2 * rows * n * k
    return v, (rows, n)


def op_add(m: _Module, x: str, shape: tuple) -> tuple[str, tuple]:
    y = m.arg(shape)
    out = m.empty(shape)
    v = m.val()
    m.emit(f"{v} = linalg.add ins({x}, {y} : {_t(shape)}, {_t(shape)}) outs({out} : {_t(shape)}) -> {_t(shape)}")
    m.flops += int(np.prod(shape))
    return v, shape


def _elementwise(m: _Module, x: str, shape: tuple, body: list[str], cost: int) -> tuple[str, tuple]:
    n = len(shape)
    m.flops += cost * int(np.prod(shape))
    return m.generic([(x, shape, list(range(n)))], shape, list(range(n)), n, ["parallel"] * n, body), shape


def op_relu(m: _Module, x: str, shape: tuple) -> tuple[str, tuple]:
    return _elementwise(m, x, shape, ["%r = arith.maximumf %in0, %cst : f32", "%r"], 1)


def op_sigmoid(m: _Module, x: str, shape: tuple) -> tuple[str, tuple]:
    body = ["%a = arith.negf %in0 : f32", "%b = math.exp %a : f32", "%c = arith.addf %b, %cst_1 : f32",
            "%r = arith.divf %cst_1, %c : f32", "%r"]
    return _elementwise(m, x, shape, body, 4)


def op_softmax(m: _Module, x: str, shape: tuple) -> tuple[str, tuple]:
    """Row softmax of a 2-D tensor: max, exp(x - max), sum, divide - four linalg.generic ops."""
    rows, cols = shape
    red = ["parallel", "reduction"]
    mx = m.generic([(x, shape, [0, 1])], (rows,), [0], 2, red, ["%r = arith.maximumf %in0, %out : f32", "%r"],
                   init=m.filled((rows,), "%cst_ninf"))
    ex = m.generic([(x, shape, [0, 1]), (mx, (rows,), [0])], shape, [0, 1], 2, ["parallel"] * 2,
                   ["%a = arith.subf %in0, %in1 : f32", "%r = math.exp %a : f32", "%r"])
    sm = m.generic([(ex, shape, [0, 1])], (rows,), [0], 2, red, ["%r = arith.addf %in0, %out : f32", "%r"],
                   init=m.filled((rows,), "%cst"))
    out = m.generic([(ex, shape, [0, 1]), (sm, (rows,), [0])], shape, [0, 1], 2, ["parallel"] * 2,
                    ["%r = arith.divf %in0, %in1 : f32", "%r"])
    m.flops += 5 * rows * cols
    return out, shape


def op_conv(m: _Module, x: str, shape: tuple, f: int, k: int, stride: int) -> tuple[str, tuple]:
    b, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    filt = m.arg((k, k, c, f))
    out = (b, oh, ow, f)
    acc = m.filled(out, "%cst")
    v = m.val()
    m.emit(f"{v} = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : "
           f"tensor<2xi64>}} ins({x}, {filt} : {_t(shape)}, {_t((k, k, c, f))}) outs({acc} : {_t(out)}) -> {_t(out)}")
    m.flops += 2 * b * oh * ow * f * k * k * c
    return v, out


def op_pool(m: _Module, x: str, shape: tuple, k: int, stride: int) -> tuple[str, tuple]:
    b, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = (b, oh, ow, c)
    acc = m.filled(out, "%cst_ninf")
    win = m.empty((k, k))
    v = m.val()
    m.emit(f"{v} = linalg.pooling_nhwc_max {{dilations = dense<1> : vector<2xi64>, strides = dense<{stride}> : "
           f"vector<2xi64>}} ins({x}, {win} : {_t(shape)}, {_t((k, k))}) outs({acc} : {_t(out)}) -> {_t(out)}")
    m.flops += b * oh * ow * c * k * k
    return v, out


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
        m = _Module()
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
        m = _Module()
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
    from mlir_rl_tui.engine.program import load_file
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


# ----------------------------------------------------------------------------------------------
# Measurement files: a cache's rows carried to another checkout or machine (one writer, one reader)
MEASUREMENTS_FORMAT = "mlir-rl-tui measurements 1"
MAX_MEASUREMENT_ROWS = 1_000_000


def export_measurements(cache, path: str, programs: set[str] | None = None, machine: str | None = None) -> int:
    """Write the cache's intact rows (of these program sha256s, of `machine`; None: all) to `path`, gzipped
    JSON lines after a header line; returns the rows written. `import_measurements` reads it back."""
    import gzip

    from mlir_rl_tui.engine.cache import ENGINE_VERSION

    rows = sorted(cache.entries(machine, programs), key=lambda r: r[:3])
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"format": MEASUREMENTS_FORMAT, "engine_version": ENGINE_VERSION, "rows": len(rows)})
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

    from mlir_rl_tui.engine.cache import ENGINE_VERSION
    from mlir_rl_tui.engine.engine import Measurement
    from mlir_rl_tui.engine.schedule import parse

    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            header = json.loads(f.readline() or "null")
            if not isinstance(header, dict) or header.get("format") != MEASUREMENTS_FORMAT:
                raise EngineError(f"{path}: not a measurement file (its first line is not a "
                                  f"{MEASUREMENTS_FORMAT!r} header)")
            if version_must_match and header.get("engine_version") != ENGINE_VERSION:
                raise EngineError(f"{path}: measured with engine version {header.get('engine_version')}, this is "
                                  f"{ENGINE_VERSION}: its times cannot stand for this machine's")
            for n, line in enumerate(f):
                if n >= MAX_MEASUREMENT_ROWS:
                    raise EngineError(f"{path}: more than {MAX_MEASUREMENT_ROWS} rows")
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
    `as_machine`: every row is filed under this machine fingerprint instead of its own (timings of another
    machine of the same kind used as this one's: the caller says so, and `same_kind` checks it); rows of
    another engine version are refused then, since their times belong to another pipeline."""
    new = old = bad = 0
    for row in read_measurements(path, version_must_match=as_machine is not None):
        if row is None:
            bad += 1
            continue
        sha, text, mach, result = row
        mach = as_machine or mach
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
#: timed the samples' baselines 1.2-1.5x apart (2026-11-26), and their schedules' times and speedups with
#: them; sittings on one machine agree within a few percent.
SAME_KIND_TOLERANCE = 1.25


def same_kind(engine, path: str) -> tuple[float | None, list[tuple[str, float]]]:
    """Is the machine a measurement file was made on this kind? The shipped samples whose untransformed
    program the file has timed (under SAME_KIND_MAX_MS) are timed again here, fresh: (the median ratio of
    this machine's time to the file's, or None when the file has no such sample; each sample's name and
    ratio). The caller compares the ratio with SAME_KIND_TOLERANCE."""
    import statistics

    from mlir_rl_tui.engine.program import load_file, sha256_text
    from mlir_rl_tui.engine.samples import find, names
    from mlir_rl_tui.engine.schedule import Schedule

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
