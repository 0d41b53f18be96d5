"""How far a measurement is from what this machine can do: its roofline, measured once per machine.

The machine's limits are measured with the engine's own toolchain (MLIR, the same pipelines, the same
worker and timing protocol), once per machine fingerprint, and kept in the cache:

- FMA peak: independent `vector.fma` chains that stay in registers (24 accumulators of 16 floats, enough
  to hide the FMA latency), on one core and on every core (`scf.forall`, one chain set per thread);
- bandwidth: `out = a + b` over arrays sized for the L2 cache, the L3 cache and main memory, on one core
  and on every core; bytes counted as the engine counts a program's (inputs read once, output written
  once), so a memory-bound kernel at 100% moves its data as fast as this loop does.

Measuring takes about 20 s, once per machine (the cache's `machines` table); `mlir-rl-tui doctor` shows
the figures.

A program's bound is the larger of flops / FMA peak and bytes / bandwidth (the bandwidth of the smallest
cache level that holds the program's arguments and result); `peak_fraction` = bound / measured time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass

from mlir_rl_tui.engine.program import Program, TensorSpec

LANES = 16  # floats per accumulator (one AVX-512 register, two AVX2 registers)
ACCUMULATORS = 24
FMA_ITERATIONS = 200_000  # x 24 x 16 x 2 flops = 154 MFLOP per run per thread: ~1 ms per core
STREAM_VECTOR = 64  # floats per loop iteration of the bandwidth kernel


@dataclass
class Peaks:
    """The machine's measured limits."""

    cores: int
    fma_gflops_1: float  # one core
    fma_gflops_all: float  # every core
    #: (working-set bytes, GB/s) per level, smallest first, for one core and for every core
    bandwidth_1: list[tuple[int, float]]
    bandwidth_all: list[tuple[int, float]]
    #: How much one kernel's time moves between measurements a moment apart, relative (half of max/min - 1
    #: over the tries of the FMA kernel and of the L3 stream kernel): a time's interval is at least this
    #: wide (on a shared VM, memory-bound kernels drift most: other tenants share the L3 and memory).
    drift_compute: float = 0.0
    drift_memory: float = 0.0
    #: The fastest hand-off probe seen on this machine, in us (engine.contention.far's near state; 0 until
    #: the first parallel timing): kept here so that the next engine starts from it.
    handoff_us: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Peaks:
        return cls(int(d["cores"]), float(d["fma_gflops_1"]), float(d["fma_gflops_all"]),
                   [(int(a), float(b)) for a, b in d["bandwidth_1"]],
                   [(int(a), float(b)) for a, b in d["bandwidth_all"]],
                   float(d.get("drift_compute", 0.0)), float(d.get("drift_memory", 0.0)),
                   float(d.get("handoff_us", 0.0)))

    def bandwidth(self, nbytes: int, parallel: bool) -> float:
        """GB/s for a working set of `nbytes`: the smallest measured level that holds it."""
        levels = self.bandwidth_all if parallel else self.bandwidth_1
        for size, gbs in levels:
            if nbytes <= size:
                return gbs
        return levels[-1][1]


@dataclass
class Bound:
    """Where a program sits on the roofline for one measured time."""

    gflops: float
    peak_fraction: float
    bound: str  # "compute" or "memory"
    bound_ms: float


def program_bytes(program: Program) -> int:
    """Compulsory traffic: every argument read once, the result written once."""
    return sum(a.nbytes for a in program.args) + sum(r.nbytes for r in program.results)


def place(program: Program, time_ms: float, parallel: bool, peaks: Peaks) -> Bound:
    flops = program.flops
    peak = peaks.fma_gflops_all if parallel else peaks.fma_gflops_1
    nbytes = program_bytes(program)
    compute_ms = flops / peak / 1e6
    memory_ms = nbytes / peaks.bandwidth(nbytes, parallel) / 1e6
    bound_ms = max(compute_ms, memory_ms)
    return Bound(gflops=flops / time_ms / 1e6 if time_ms > 0 else 0.0,
                 peak_fraction=bound_ms / time_ms if time_ms > 0 else 0.0,
                 bound="compute" if compute_ms >= memory_ms else "memory", bound_ms=bound_ms)


# ----------------------------------------------------------------------------------------------
def cache_sizes() -> tuple[int, int]:
    """(L2 per core, L3) in bytes, from sysfs; 1 MiB and 32 MiB when unknown."""
    l2, l3 = 1 << 20, 32 << 20
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in sorted(os.listdir(base)):
            with open(os.path.join(base, idx, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, idx, "size")) as f:
                text = f.read().strip()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
            size = int(text.rstrip("KMG")) * mult
            if level == 2:
                l2 = size
            elif level == 3:
                l3 = size
    except (OSError, ValueError):
        pass
    return l2, l3


def fma_kernel(threads: int) -> tuple[str, tuple[int, ...]]:
    """MLIR text of the FMA-peak kernel and its argument shape (threads x ACCUMULATORS x LANES)."""
    shape = (threads, ACCUMULATORS, LANES)
    ty = f"tensor<{threads}x{ACCUMULATORS}x{LANES}xf32>"
    vt = f"vector<{LANES}xf32>"
    a = range(ACCUMULATORS)
    reads = "\n".join(f"      %v{i} = vector.transfer_read %x[%t, %c{i}, %c0], %pad {{in_bounds = [true]}} : {ty}, {vt}"
                      for i in a)
    consts = "\n".join(f"  %c{i} = arith.constant {i} : index" for i in a if i > 1)
    iters = ", ".join(f"%a{i} = %v{i}" for i in a)
    fmas = "\n".join(f"        %y{i} = vector.fma %a{i}, %m, %k : {vt}" for i in a)
    ys = ", ".join(f"%y{i}" for i in a)
    one = f"tensor<1x{ACCUMULATORS}x{LANES}xf32>"
    writes, prev = [], "%e"
    for i in a:
        writes.append(f"      %w{i} = vector.transfer_write %r#{i}, {prev}[%c0, %c{i}, %c0] {{in_bounds = [true]}} "
                      f": {vt}, {one}")
        prev = f"%w{i}"
    text = f"""func.func @forward(%x: {ty}) -> {ty} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
{consts}
  %n = arith.constant {FMA_ITERATIONS} : index
  %pad = arith.constant 0.0 : f32
  %m = arith.constant dense<0.999999> : {vt}
  %k = arith.constant dense<0.000001> : {vt}
  %init = tensor.empty() : {ty}
  %out = scf.forall (%t) in ({threads}) shared_outs(%o = %init) -> ({ty}) {{
{reads}
      %r:{ACCUMULATORS} = scf.for %i = %c0 to %n step %c1 iter_args({iters}) -> ({", ".join([vt] * ACCUMULATORS)}) {{
{fmas}
        scf.yield {ys} : {", ".join([vt] * ACCUMULATORS)}
      }}
      %e = tensor.empty() : {one}
{chr(10).join(writes)}
      scf.forall.in_parallel {{
        tensor.parallel_insert_slice {prev} into %o[%t, 0, 0] [1, {ACCUMULATORS}, {LANES}] [1, 1, 1] : {one} into {ty}
      }}
  }}
  return %out : {ty}
}}
"""
    return text, shape


def stream_kernel(threads: int, nbytes: int) -> tuple[str, int, int]:
    """MLIR text of `c = a + b` over three arrays of `nbytes` in all, split over `threads` and repeated so a
    call moves at least 64 MiB (fork/join and call overheads amortized); (text, length, repeats). `c` is
    an argument written in place (no allocation, as in STREAM); the function returns c[0]."""
    chunk = max(STREAM_VECTOR, (nbytes // 12 // threads) // STREAM_VECTOR * STREAM_VECTOR)
    n = chunk * threads
    reps = max(1, (64 << 20) // (12 * n))
    ty, ct, vt = f"tensor<{n}xf32>", f"tensor<{chunk}xf32>", f"vector<{STREAM_VECTOR}xf32>"
    text = f"""func.func @forward(%a: {ty}, %b: {ty}, %c: {ty}) -> tensor<1xf32> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cv = arith.constant {STREAM_VECTOR} : index
  %cn = arith.constant {chunk} : index
  %cr = arith.constant {reps} : index
  %pad = arith.constant 0.0 : f32
  %out = scf.forall (%t) in ({threads}) shared_outs(%o = %c) -> ({ty}) {{
    %start = arith.muli %t, %cn : index
    %slice = tensor.extract_slice %o[%start] [{chunk}] [1] : {ty} to {ct}
    %rep = scf.for %r = %c0 to %cr step %c1 iter_args(%acc0 = %slice) -> ({ct}) {{
      %res = scf.for %i = %c0 to %cn step %cv iter_args(%acc = %acc0) -> ({ct}) {{
        %j = arith.addi %start, %i : index
        %va = vector.transfer_read %a[%j], %pad {{in_bounds = [true]}} : {ty}, {vt}
        %vb = vector.transfer_read %b[%j], %pad {{in_bounds = [true]}} : {ty}, {vt}
        %s = arith.addf %va, %vb : {vt}
        %w = vector.transfer_write %s, %acc[%i] {{in_bounds = [true]}} : {vt}, {ct}
        scf.yield %w : {ct}
      }}
      scf.yield %res : {ct}
    }}
    scf.forall.in_parallel {{
      tensor.parallel_insert_slice %rep into %o[%start] [{chunk}] [1] : {ct} into {ty}
    }}
  }}
  %first = tensor.extract %out[%c0] : {ty}
  %ret = tensor.from_elements %first : tensor<1xf32>
  return %ret : tensor<1xf32>
}}
"""
    return text, n, reps


def stream_sizes() -> list[int]:
    """Working sets (bytes, three arrays) at which bandwidth is measured: within one core's L2, twice
    past it, a fifth and a half of the L3, and main memory. A program's bandwidth is that of the smallest
    of these that holds its working set (an add of 6 MB ran 30% faster than the stream loop at 13 MB)."""
    l2, l3 = cache_sizes()
    return [int(l2 * 0.75), int(l2 * 2.5), l3 // 5, l3 // 2, max(128 << 20, 4 * l3)]


#: run(text, argument specs, result spec, parallel) -> median ms of one call, or None if it failed
Runner = Callable[[str, list[TensorSpec], TensorSpec, bool], "float | None"]


def measure_peaks(run: Runner, cores: int) -> Peaks | None:
    """Measure the FMA peak and the bandwidths on one core and on `cores` cores: the best of several
    measurements of each (a peak is what the machine can do; noise only ever makes a run slower), and
    from the spread of those measurements on one core, the machine's drift."""
    drift: dict[str, float] = {}

    def best(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool, tries: int,
             kind: str = "") -> float | None:
        times = [t for t in (run(text, args, result, parallel) for _ in range(tries)) if t]
        if not times:
            return None
        if kind:
            drift[kind] = (max(times) / min(times) - 1) / 2
        return min(times)

    fma: dict[int, float] = {}
    bw: dict[int, list[tuple[int, float]]] = {}
    for t in sorted({1, cores}):
        text, shape = fma_kernel(t)
        ms = best(text, [TensorSpec(shape, "f32")], TensorSpec(shape, "f32"), t > 1, 5, "compute" if t == 1 else "")
        if ms is None:
            return None
        fma[t] = t * FMA_ITERATIONS * ACCUMULATORS * LANES * 2 / ms / 1e6
        bw[t] = []
        for i, size in enumerate(stream_sizes()):
            text, n, reps = stream_kernel(t, size * t if i < 2 else size)  # L2 levels are per core
            spec = TensorSpec((n,), "f32")
            drifting = (t, i) == (1, 2)
            ms = best(text, [spec, spec, spec], TensorSpec((1,), "f32"), t > 1, 3 if drifting else 2,
                      "memory" if drifting else "")
            if ms is None:
                return None
            bw[t].append((3 * n * 4, reps * 3 * n * 4 / ms / 1e6))
    return Peaks(cores, fma[1], fma[cores], bw[1], bw[cores], drift.get("compute", 0.0), drift.get("memory", 0.0))
