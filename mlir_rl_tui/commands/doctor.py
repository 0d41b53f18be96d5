"""`mlir-rl-tui doctor`: this machine's cores, runtime and roofline, and how far a measurement can be trusted now."""

from __future__ import annotations

import argparse

from mlir_rl_tui.cli.options import add_json, positive_int
from mlir_rl_tui.cli.output import emit

DESCRIPTION = ("Paste its output into a bug report. It reads the CPU model, the cores and steal time, takes the "
               "roofline from the cache (measured and kept the first time, 10-40 s), and times the matmul "
               "sample's serial and parallel reference schedules afresh a few times in turn: their spread "
               "(max/min) is what a repeat of a measurement may differ by now, and their pairs teach the engine "
               "how wide an interval must be here. The state: quiet (serial within 5%, parallel within 10%), "
               "noisy (within 10% and 15%), unstable (beyond, or most measurements flagged as taken in a bad "
               "state: compare only figures far apart, and measure again later). Steal over 2% or other "
               "processes using over half a core make it noisy at least.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=positive_int, default=5, help="fresh measurements of each reference schedule (default 5)")
    add_json(p)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _pct(x: float | None) -> str:
    return f"{100 * x:.1f}%" if x is not None else "-"


def run(args: argparse.Namespace) -> int:
    from mlir_rl_tui.engine import Engine
    from mlir_rl_tui.engine.measure.doctor import diagnose
    from mlir_rl_tui.progress import ProgressLine

    with ProgressLine() as line, Engine() as eng:
        d = diagnose(eng, max(2, args.repeats), on_progress=lambda s: line.update(f"doctor: {s}"))
    if args.json:
        emit(d.to_json())
        return 0
    print(f"machine:  {d.cpu}, {d.cores} cores, parallel runtime {d.runtime}")
    if d.peaks:
        p = d.peaks
        bw = lambda levels: ", ".join(f"{b:.0f} GB/s at {_size(s)}" for s, b in levels)  # noqa: E731
        print(f"roofline: FMA peak {p['fma_gflops_1']:.0f} GFLOP/s on one core, {p['fma_gflops_all']:.0f} on "
              f"{p['cores']}; bandwidth {bw(p['bandwidth_1'])} (one core)")
    else:
        print("roofline: could not be measured")
    print(f"host:     steal {_pct(d.steal)} of the CPU time during the check, other processes "
          f"{d.foreign_cores:.2f} cores while timing" if d.foreign_cores is not None
          else f"host:     steal {_pct(d.steal)}")
    for name, n in (("serial", d.serial), ("parallel", d.parallel)):
        if n is None:
            print(f"{name:9s} no parallel runtime")
            continue
        spread = f"{n.spread:.3f}" if n.spread else "-"
        times = ", ".join(f"{t:.3f}" for t in n.times_ms)
        print(f"{name + ':':9s} {n.schedule}: {len(n.times_ms)} fresh measurements {times} ms, max/min {spread}, "
              f"stated interval +-{_pct(n.stated)}" + (f", {n.flagged} flagged" if n.flagged else "")
              + (f", {n.failed} failed" if n.failed else ""))
    print(f"interval: every figure's 95% interval here is at least +-{_pct(d.floor)} (how far repeats moved, "
          f"learnt from {d.pairs} pairs)")
    from mlir_rl_tui.engine.measure import machine as m

    print(f"state:    {d.state} (quiet: serial max/min <= {m.QUIET[0]:.2f} and parallel <= {m.QUIET[1]:.2f}, steal <= "
          f"{m.STEAL_NOISY:.0%}, other processes <= {m.BUSY_NOISY:g} cores; noisy: <= {m.NOISY[0]:.2f}, "
          f"{m.NOISY[1]:.2f}, {m.STEAL_UNSTABLE:.0%}, {m.BUSY_UNSTABLE:g} core; unstable beyond), checked in "
          f"{d.seconds:.0f} s")
    return 0
