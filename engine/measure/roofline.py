"""How far a measurement is from what this machine can do: its roofline, measured once per machine.

The machine's limits are measured with the engine's own toolchain (MLIR, the same pipelines, the same
worker and timing protocol), once per machine fingerprint, and kept in the cache:

- FMA peak: independent `vector.fma` chains that stay in registers (24 accumulators of 16 floats, enough
  to hide the FMA latency), on one core and on every core (`scf.forall`, one chain set per thread);
- bandwidth: `out = a + b` over arrays sized for the L2 cache, the L3 cache and main memory, on one core
  and on every core; bytes counted as the engine counts a program's (inputs read once, output written
  once), so a memory-bound kernel at 100% moves its data as fast as this loop does.

Measuring takes 10-40 s, once per machine (the cache's `machines` table); `mlir-rl-tui doctor` shows
the figures.

A program's bound is the larger of flops / FMA peak and bytes / bandwidth (the bandwidth of the smallest
cache level that holds the program's arguments and result); `peak_fraction` = bound / measured time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from mlir_rl_tui.engine.ir.program import Program, TensorSpec
from mlir_rl_tui.engine.measure.measurement import positive

LANES = 16  # floats per accumulator (one AVX-512 register, two AVX2 registers)
ACCUMULATORS = 24
FMA_ITERATIONS = 200_000  # x 24 x 16 x 2 flops = 154 MFLOP per run per thread: ~1 ms per core
STREAM_VECTOR = 64  # floats per loop iteration of the bandwidth kernel
FMA_TRIES = 3  # measurements of each kernel; the fastest counts
STREAM_TRIES = 3
#: Working sets at most this large stand for the L3 and main memory: a VM's share of a large L3 is far
#: smaller than the size sysfs reports (a 2-core Intel Xeon VM with a 260 MiB L3: 14.3 GB/s at 130 MiB
#: and at 1 GiB), and a 1 GiB stream took 32 of the roofline's 47 s.
L3_CAP = 48 << 20
MEMORY_SIZE = 300 << 20  # over engine.run.worker.PLACEMENT_BYTES: one copy of the arrays, not three


@dataclass
class Peaks:
    """The machine's measured limits (a 0 is a part not measured yet: engine.engine.Engine.peaks measures
    the parts a program needs on first use, `mlir-rl-tui doctor` all of them), and its record of how
    timings behave here."""

    cores: int
    fma_gflops_1: float  # one core
    fma_gflops_all: float  # every core
    #: (working-set bytes, GB/s) per level, smallest first, for one core and for every core
    bandwidth_1: list[tuple[int, float]]
    bandwidth_all: list[tuple[int, float]]
    #: The fastest hand-off probe seen on this machine, in us (engine.measure.contention.far's near state; 0 until
    #: the first parallel timing): kept here so that the next engine starts from it.
    handoff_us: float = 0.0
    #: The fastest state probe seen on this machine, serial and parallel, in ms (engine.measure.contention; 0 until
    #: the first timing): the steady state's reference, kept for the next engine.
    probe_serial_ms: float = 0.0
    probe_parallel_ms: float = 0.0
    #: The latest log-ratios of two measurements of one thing at different moments (engine.measure.interval_floor): how far
    #: a repeat moves here, the floor of every reported interval.
    repeats: list[float] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Peaks:
        return cls(int(d["cores"]), float(d["fma_gflops_1"]), float(d["fma_gflops_all"]),
                   [(int(a), float(b)) for a, b in d["bandwidth_1"]],
                   [(int(a), float(b)) for a, b in d["bandwidth_all"]],
                   float(d.get("handoff_us", 0.0)), float(d.get("probe_serial_ms", 0.0)),
                   float(d.get("probe_parallel_ms", 0.0)),
                   [float(x) for x in d.get("repeats", [])][-128:])

    def level(self, nbytes: int, parallel: bool) -> int:
        """The index of the largest level a working set of `nbytes` does not exceed (the first one for a
        smaller working set): its bandwidth is a limit such a program cannot beat (stream_sizes)."""
        levels = self.bandwidth_all if parallel else self.bandwidth_1
        under = [i for i, (size, _) in enumerate(levels) if size <= nbytes]
        return max(under, key=lambda i: levels[i][0]) if under else min(range(len(levels)), key=lambda i: levels[i][0])

    def bandwidth(self, nbytes: int, parallel: bool) -> float:
        """GB/s a working set of `nbytes` moves at most (`level`; 0: not measured yet)."""
        return (self.bandwidth_all if parallel else self.bandwidth_1)[self.level(nbytes, parallel)][1]

    def knows(self, need: tuple[bool, int] | None = None) -> bool:
        """Whether what a program needs is measured: `need` = (parallel, working-set bytes), the FMA peak
        and that level; None: everything (the whole roofline)."""
        if need is None:
            return self.fma_gflops_1 > 0 and self.fma_gflops_all > 0 and \
                all(g > 0 for _, g in self.bandwidth_1 + self.bandwidth_all)
        parallel, nbytes = need
        return (self.fma_gflops_all if parallel else self.fma_gflops_1) > 0 and self.bandwidth(nbytes, parallel) > 0


@dataclass
class Bound:
    """Where a program sits on the roofline for one measured time."""

    gflops: float
    peak_fraction: float
    bound: str  # "compute" or "memory"
    bound_ms: float


def place(program: Program, time_ms: float, parallel: bool, peaks: Peaks) -> Bound:
    flops = program.flops
    peak = peaks.fma_gflops_all if parallel else peaks.fma_gflops_1
    nbytes = program.compulsory_bytes
    compute_ms = flops / peak / 1e6
    memory_ms = nbytes / peaks.bandwidth(nbytes, parallel) / 1e6
    bound_ms = max(compute_ms, memory_ms)
    return Bound(gflops=flops / time_ms / 1e6 if time_ms > 0 else 0.0,
                 peak_fraction=bound_ms / time_ms if time_ms > 0 else 0.0,
                 bound="compute" if compute_ms >= memory_ms else "memory", bound_ms=bound_ms)


# ----------------------------------------------------------------------------------------------
def cache_sizes() -> tuple[int, int, int]:
    """(L1 data per core, L2 per core, L3) in bytes, from sysfs; 32 KiB, 1 MiB and 32 MiB when unknown."""
    l1, l2, l3 = 32 << 10, 1 << 20, 32 << 20
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for idx in sorted(os.listdir(base)):
            with open(os.path.join(base, idx, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, idx, "size")) as f:
                text = f.read().strip()
            kind = ""
            if os.path.exists(os.path.join(base, idx, "type")):
                with open(os.path.join(base, idx, "type")) as f:
                    kind = f.read().strip()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
            size = int(text.rstrip("KMG")) * mult
            if level == 1 and kind != "Instruction":
                l1 = size
            elif level == 2:
                l2 = size
            elif level == 3:
                l3 = size
    except (OSError, ValueError):
        pass
    return l1, l2, l3


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


#: The levels sized per core (L1, L2 and past L2): a parallel measurement's working set is this times cores.
PER_CORE_LEVELS = 3


def stream_sizes() -> list[int]:
    """Working sets (bytes, three arrays) at which bandwidth is measured: half of one core's L1, within
    its L2, twice past it, a fifth and a half of the L3, and main memory. A program's bandwidth limit is
    that of the largest of these its working set does not exceed (bandwidth only falls as the working set
    grows, so the limit is one the program cannot beat: with the smallest level that holds it instead, the
    ReLU sample's 4 MB ran at 161% of the 10 MB level's bandwidth on 2 cores)."""
    l1, l2, l3 = cache_sizes()
    l3 = min(l3, L3_CAP)
    return [l1 // 2, int(l2 * 0.75), int(l2 * 2.5), l3 // 5, l3 // 2, max(MEMORY_SIZE, 4 * l3)]


def level_bytes(i: int, size: int, threads: int) -> int:
    """The working set to measure level i of stream_sizes() at with `threads` threads."""
    return size * threads if i < PER_CORE_LEVELS else size


#: run(text, argument specs, result spec, parallel) -> median ms of one call, or None if it failed
Runner = Callable[[str, list[TensorSpec], TensorSpec, bool], "float | None"]


def empty_peaks(cores: int) -> Peaks:
    """A roofline with nothing measured yet: the levels' sizes, every figure 0."""
    def levels(t: int) -> list[tuple[int, float]]:
        return [(3 * stream_kernel(t, level_bytes(i, size, t))[1] * 4, 0.0) for i, size in enumerate(stream_sizes())]

    return Peaks(cores, 0.0, 0.0, levels(1), levels(cores))


def measure_peaks(run: Runner, cores: int, need: tuple[bool, int] | None = None,
                  have: Peaks | None = None) -> Peaks | None:
    """Measure what `have` (default: nothing) lacks of the FMA peak and the bandwidths on one core and on
    `cores` cores: with `need` = (parallel, working-set bytes) only the peak and the level such a program
    needs, else all of it. Each figure is the best of a few measurements (a peak is what the machine can
    do; noise only ever makes a run slower). None when a kernel fails."""
    def best(text: str, args: list[TensorSpec], result: TensorSpec, parallel: bool, tries: int) -> float | None:
        times = [t for t in (run(text, args, result, parallel) for _ in range(tries)) if t]
        return min(times) if times else None

    p = Peaks.from_json(have.to_json()) if have is not None and have.cores == cores else empty_peaks(cores)
    for t in sorted({1, cores}):
        parallel = t > 1
        if need is not None and need[0] != parallel and cores > 1:
            continue
        if (p.fma_gflops_all if parallel else p.fma_gflops_1) <= 0:
            text, shape = fma_kernel(t)
            ms = best(text, [TensorSpec(shape, "f32")], TensorSpec(shape, "f32"), parallel, FMA_TRIES)
            if ms is None:
                return None
            gflops = t * FMA_ITERATIONS * ACCUMULATORS * LANES * 2 / ms / 1e6
            if parallel:
                p.fma_gflops_all = gflops
            else:
                p.fma_gflops_1 = gflops
        levels = p.bandwidth_all if parallel else p.bandwidth_1
        wanted = range(len(levels)) if need is None else [p.level(need[1], parallel)]
        for i, size in enumerate(stream_sizes()):
            if i not in wanted or levels[i][1] > 0:
                continue
            text, n, reps = stream_kernel(t, level_bytes(i, size, t))
            spec = TensorSpec((n,), "f32")
            ms = best(text, [spec, spec, spec], TensorSpec((1,), "f32"), parallel, STREAM_TRIES)
            if ms is None:
                return None
            levels[i] = (3 * n * 4, reps * 3 * n * 4 / ms / 1e6)
    if cores == 1:  # one core: the parallel figures are the serial ones
        p.fma_gflops_all, p.bandwidth_all = p.fma_gflops_1, list(p.bandwidth_1)
    return p


def peaks_from_record(rec: dict) -> Peaks:
    """The cached roofline back as Peaks; ValueError/KeyError/TypeError when it is not a usable one (a
    figure is positive, or 0 when that part is not measured yet)."""
    p = Peaks.from_json(rec)
    levels = p.bandwidth_1 + p.bandwidth_all
    figures = [p.fma_gflops_1, p.fma_gflops_all, p.handoff_us, p.probe_serial_ms, p.probe_parallel_ms,
               *(g for _, g in levels)]
    if p.cores < 1 or not p.bandwidth_1 or not p.bandwidth_all or not all(positive(n) for n, _ in levels) \
            or not all(x == 0 or positive(x) for x in figures) or not all(positive(x) or x == 0 for x in p.repeats):
        raise ValueError("peaks out of range")
    return p
