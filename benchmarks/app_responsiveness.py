"""Event-loop lag of the app while real measurements run (goal: no stall longer than 100 ms).

Each sample runs in its own process (as the CLI runs the app: one program per process) headless with
`App.run_test(size=(120, 40))`, the real engine adapter and a fresh temporary measurement cache, so every
measurement really compiles and runs in the engine's worker processes. A 10 ms timer in the app's event
loop records the actual gap between its ticks (lag = gap - 10 ms) and the main thread's CPU time in that
gap (close to the lag: the loop was busy; much less: the OS gave the CPU to other processes) from the
first paint to the end, while a script applies steps by keyboard (fuse, tile, vectorize, undo) and
switches the IR view 1-5 while each measurement runs. Every tick is attributed to the phase (the step
being measured) and the last thing done (e.g. `view diff`). With `--stacks`, a watchdog thread samples
the main thread's stack whenever the loop has not ticked for 40 ms: what blocked it.

    .venv/bin/python benchmarks/app_responsiveness.py [--samples matmul conv2d] [--off NAME ...] [--stacks] [--json]

`--off` runs the app with some of its Textual work-arounds switched off (mlir_rl_tui/workarounds.py): what
each one buys.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INTERVAL = 0.01
GOAL_MS = 100.0
START = "start (until the first paint)"

#: Per sample: (phase label, keys that pick the action, tile sizes to set or None, key that applies it).
SCENARIOS: dict[str, list[tuple[str, str, tuple[int, ...] | None, str]]] = {
    "matmul": [
        ("TF(64,64,0)", "f", (64, 64, 0), "x"),
        ("T(8,32,1)", "t", (8, 32, 1), "x"),
        ("V", "", None, "v"),
        ("undo V", "", None, "u"),
        ("V again", "", None, "v"),
    ],
    "conv2d": [
        ("TF(0,8,8,32,0,0,0)", "f", (0, 8, 8, 32, 0, 0, 0), "x"),
        ("T(1,1,4,16,1,1,8)", "t", (1, 1, 4, 16, 1, 1, 8), "x"),
        ("V", "", None, "v"),
        ("undo V", "", None, "u"),
        ("V again", "", None, "v"),
    ],
}
VIEWS = {"1": "original", "2": "transformed", "3": "diff", "4": "loops", "5": "script"}


class Tick(NamedTuple):
    """One gap of the timer. While the app runs, kept as a plain tuple of numbers and strings: the collector
    stops tracking those at its next pass, so the benchmark does not make the app's full garbage
    collections slower (a NamedTuple instance stays tracked: thousands of them did)."""

    t: float
    lag_ms: float
    cpu_ms: float  # main-thread CPU time during the gap: near lag_ms = the loop was busy, else starved
    phase: str
    what: str


@dataclass
class Monitor:
    """Gaps of a 10 ms timer; `phase`/`what` name what the script is doing (set by the driver)."""

    phase: str = "start"
    what: str = "mount"
    last: float = 0.0
    last_cpu: float = 0.0
    ticks: list[tuple] = field(default_factory=list)  # plain tuples in the app's process (see Tick)
    samples: list[tuple[float, str, list[str]]] = field(default_factory=list)

    def tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        if self.last:
            self.ticks.append((now, max(0.0, (now - self.last - INTERVAL) * 1e3), (cpu - self.last_cpu) * 1e3,
                               self.phase, self.what))
        self.last, self.last_cpu = now, cpu

    def mark(self, phase: str | None = None, what: str = "") -> None:
        if phase is not None:
            self.phase = phase
        self.what = what


class Watchdog(threading.Thread):
    """Samples the main thread's stack every 10 ms while the event loop has not ticked for 40 ms."""

    def __init__(self, mon: Monitor) -> None:
        super().__init__(daemon=True)
        self.mon = mon
        self.main = threading.main_thread().ident
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.01):
            last = self.mon.last
            if not last or time.perf_counter() - last < 0.04:
                continue
            frame = sys._current_frames().get(self.main)
            if frame is None:
                continue
            stack = [f"{os.path.relpath(fs.filename, ROOT) if fs.filename.startswith(ROOT) else _short(fs.filename)}"
                     f":{fs.lineno} {fs.name}" for fs in traceback.extract_stack(frame)]
            self.mon.samples.append((time.perf_counter(), f"{self.mon.phase} / {self.mon.what}", stack))


def _short(path: str) -> str:
    for key in ("site-packages/", "lib/python3"):
        if key in path:
            return path.split(key, 1)[1]
    return path


#: Textual frames that say which part of a frame the loop is in (layout, paint) when no app frame is on the stack
TEXTUAL_PHASES = ("textual/screen.py", "textual/_compositor.py", "textual/app.py")


def summarize(stack: list[str]) -> str:
    """The innermost frame of the app (or engine; else Textual's screen or compositor: layout or paint) and
    the innermost frame overall."""
    ours = [s for s in stack if s.startswith(("mlir_rl_tui", "engine"))]
    ours = ours or [s for s in stack if TEXTUAL_PHASES[0] in s or TEXTUAL_PHASES[1] in s]
    ours = ours or [s for s in stack if s.startswith("benchmarks") or TEXTUAL_PHASES[2] in s]
    inner = stack[-1]
    app = ours[-1] if ours else "-"
    return f"{app}  ->  {inner}" if app != inner else app


def p99(values: list[float]) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]


async def settle(app, mon: Monitor, timeout: float) -> None:
    """Wait for every worker (measurement, IR) to finish, without blocking the loop."""
    await asyncio.sleep(0.15)
    await asyncio.wait_for(app.workers.wait_for_complete(), timeout)
    await asyncio.sleep(0.1)


async def cycle_views(pilot, mon: Monitor, phase: str, pause: float) -> None:
    """Switch the IR view 1-5 (and back to 2) while the measurement runs."""
    for key in ("2", "3", "4", "5", "1", "2"):
        mon.mark(phase, f"view {VIEWS[key]}")
        await pilot.press(key)
        await asyncio.sleep(pause)


async def run_sample(name: str, mon: Monitor, pause: float, timeout: float) -> dict:
    from mlir_rl_tui.adapter import EngineAdapter
    from mlir_rl_tui.app import make_app
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.widgets.action_bar import ActionBar

    prog = load_file(os.path.join(ROOT, "samples", f"{name}.mlir"))
    from mlir_rl_tui.screens.main import MainScreen

    adapter = EngineAdapter()  # as the CLI runs it: the engine and its workers start on first use
    app = make_app(prog, adapter)
    result: dict = {"sample": name, "steps": []}
    mon.mark(f"{name}: {START}", "")
    after_first_paint = MainScreen._after_first_paint

    def painted(screen: MainScreen) -> None:
        mon.mark(f"{name}: open + baseline", "first paint done")
        after_first_paint(screen)

    MainScreen._after_first_paint = painted  # type: ignore[method-assign]
    mon.last = 0.0
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            app.set_interval(INTERVAL, mon.tick)
            main = app.main
            phase = f"{name}: open + baseline"
            await asyncio.sleep(0.3)
            await cycle_views(pilot, mon, phase, pause)
            mon.mark(phase, "waiting")
            await settle(app, mon, timeout)
            for label, pick, sizes, key in SCENARIOS[name]:
                phase = f"{name}: {label}"
                mon.mark(phase, f"pick {pick or key}")
                if pick:
                    await pilot.press(pick)
                    await asyncio.sleep(0.05)
                    bar = main.query_one(ActionBar)
                    for sel, v in zip(bar._params, sizes or (), strict=True):
                        sel.value = v
                    await asyncio.sleep(0.05)
                mon.mark(phase, f"apply ({key})")
                await pilot.press(key)
                await asyncio.sleep(pause)
                await cycle_views(pilot, mon, phase, pause)
                mon.mark(phase, "waiting")
                await settle(app, mon, timeout)
                m = main.workspace.measurements.get(main.schedule_text)
                result["steps"].append({"step": label, "schedule": main.schedule_text,
                                        "status": m.status if m else "-",
                                        "speedup": round(m.speedup, 2) if m and m.speedup else None})
            mon.mark(f"{name}: quit", "")
    finally:
        adapter.close()
    return result


def report(mon: Monitor, results: list[dict], load: str, as_json: bool, stacks: bool) -> int:
    phases: dict[str, list[Tick]] = {}
    for t in mon.ticks:
        phases.setdefault(t.phase, []).append(t)
    rows = []
    for ph, ts in phases.items():
        lags = [t.lag_ms for t in ts]
        worst = max(ts, key=lambda t: t.lag_ms)
        rows.append({"phase": ph, "ticks": len(ts), "max_ms": round(worst.lag_ms, 1), "p99_ms": round(p99(lags), 1),
                     "cpu_ms": round(worst.cpu_ms, 1), "worst_during": worst.what,
                     "over_goal": sum(lag > GOAL_MS for lag in lags)})
    # the verdict is on what follows the first paint (measurements run from then on); the first paint is
    # benchmarks/app_startup.py's business, its row is shown for information
    ticks = [t for t in mon.ticks if START not in t.phase] or mon.ticks
    lags = [t.lag_ms for t in ticks]
    worst = max(ticks, key=lambda t: t.lag_ms)
    busiest = max(ticks, key=lambda t: t.cpu_ms)
    overall = {"ticks": len(lags), "max_ms": round(worst.lag_ms, 1), "p99_ms": round(p99(lags), 1),
               "median_ms": round(statistics.median(lags), 2), "worst": f"{worst.phase} / {worst.what}",
               "worst_cpu_ms": round(worst.cpu_ms, 1), "max_cpu_ms": round(busiest.cpu_ms, 1),
               "max_cpu_at": f"{busiest.phase} / {busiest.what}",
               "over_goal": sum(lag > GOAL_MS for lag in lags), "load": load}
    top = sorted(ticks, key=lambda t: -t.lag_ms)[:5]
    causes = []
    for t in top:
        start = t.t - t.lag_ms / 1e3 - INTERVAL
        hits = Counter(summarize(s) for ts, _, s in mon.samples if start <= ts <= t.t)
        causes.append({"lag_ms": round(t.lag_ms, 1), "cpu_ms": round(t.cpu_ms, 1), "at": f"{t.phase} / {t.what}",
                       "stacks": hits.most_common(4)})
    if as_json:
        print(json.dumps({"overall": overall, "phases": rows, "worst": causes, "samples": results}, indent=1))
    else:
        w = max(len(r["phase"]) for r in rows)
        print(f"{'phase':<{w}}  ticks  max ms  (cpu)  p99 ms  >{GOAL_MS:.0f}ms  worst during")
        for r in rows:
            print(f"{r['phase']:<{w}}  {r['ticks']:>5}  {r['max_ms']:>6.1f} {r['cpu_ms']:>6.1f}  {r['p99_ms']:>6.1f}  "
                  f"{r['over_goal']:>6}  {r['worst_during']}")
        print(f"after the first paint: {overall['ticks']} ticks, max {overall['max_ms']:.1f} ms ({overall['worst']}, main thread "
              f"on CPU {overall['worst_cpu_ms']:.1f} ms of it), p99 {overall['p99_ms']:.1f} ms, median "
              f"{overall['median_ms']:.2f} ms, {overall['over_goal']} gaps over {GOAL_MS:.0f} ms")
        print(f"longest main-thread CPU burst: {overall['max_cpu_ms']:.1f} ms ({overall['max_cpu_at']}); "
              f"load average {load}  (goal: max < {GOAL_MS:.0f} ms)")
        for r in results:
            print(f"{r['sample']}: " + ", ".join(f"{s['schedule'] or 'baseline'} {s['status']}"
                                                 + (f" {s['speedup']}x" if s["speedup"] else "") for s in r["steps"]))
        if stacks:
            print("\nworst stalls and the main thread's stack while they lasted (app frame -> innermost frame):")
            for c in causes:
                print(f"  {c['lag_ms']:.1f} ms (main thread on CPU {c['cpu_ms']:.1f} ms) at {c['at']}")
                for s, n in c["stacks"] or [("(no sample: the GIL was held in C code, or the stall was short)", 0)]:
                    print(f"      {n:>3}x {s}")
    return 0 if overall["max_ms"] < GOAL_MS else 1


def child(name: str, a: argparse.Namespace) -> None:
    """One sample in this process (as a user runs the app: one program per process); JSON on stdout."""
    from mlir_rl_tui import workarounds
    from mlir_rl_tui.idle_gc import pause_for_startup

    if workarounds.on("idle_gc"):
        pause_for_startup()  # as the CLI does before it opens the app
    mon = Monitor()
    dog = Watchdog(mon)
    if a.stacks:
        dog.start()
    try:
        result = asyncio.run(run_sample(name, mon, a.pause, a.timeout))
    finally:
        dog.stop.set()
    print(json.dumps({"result": result, "ticks": [Tick(*t)._asdict() for t in mon.ticks],
                      "samples": mon.samples}))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    p.add_argument("--pause", type=float, default=0.25, help="seconds between view switches")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for one step's measurement")
    p.add_argument("--stacks", action="store_true", help="sample the main thread's stack during stalls")
    p.add_argument("--off", nargs="+", default=[], metavar="NAME",
                   choices=["idle_gc", "prepared_ir"],
                   help="run with these work-arounds off (mlir_rl_tui/workarounds.py)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if a.off:
        os.environ["MLIR_RL_TUI_OFF"] = ",".join(a.off)  # the children inherit it
    if a.child:
        child(a.child, a)
        return 0
    # a fresh cache: every measurement really runs (the children inherit it)
    os.environ["MLIR_RL_TUI_CACHE"] = tempfile.mkdtemp(prefix="mlir-rl-resp-cache-")
    mon = Monitor()
    results = []
    loads = []
    for name in a.samples:
        args = [sys.executable, __file__, "--child", name, "--pause", str(a.pause), "--timeout", str(a.timeout)]
        out = subprocess.run(args + (["--stacks"] if a.stacks else []), capture_output=True, text=True,
                             cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr[-3000:], file=sys.stderr)
            return 2
        data = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(data["result"])
        mon.ticks += [Tick(**t) for t in data["ticks"]]
        mon.samples += [tuple(x) for x in data["samples"]]
        loads.append(os.getloadavg()[0])
    load = f"{os.getloadavg()[0]:.2f} at the end, {statistics.mean(loads):.2f} mean over samples"
    if a.off:
        load += f"; work-arounds off: {', '.join(a.off)}"
    return report(mon, results, load, a.json, a.stacks)


if __name__ == "__main__":
    sys.exit(main())
