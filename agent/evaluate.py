"""The evaluation protocol, in one place: the policy's one pass against hill climbing and PyTorch eager.

Per program, one program at a time (nothing else competes for the cores):
1. the policy schedules the program in one pass (no measurement during its decisions); with several
   policies (`evaluate --policy A.pt B.pt ...`: "policy", "policy_B", ...), each does;
2. hill climbing searches with each of the budgets (hill@50, hill@100: the larger search replays the
   smaller one's candidates from the cache); its `found` figure is the fastest of those noisy measurements,
   which overstates its schedule (the winner's curse); `hill@B_measured` and `hill@B_replayed` count the
   candidates timed in this run and those answered without a timing (the cache's earlier rows, repeats);
3. the final schedules (a schedule two of them share, once) are measured again, fresh, interleaved A B C A B C
   for `rounds` rounds, more while one's runs are split by a slow spell (engine.measure.remeasure; the row's "rounds");
   each figure is the fastest run's speedup over the fastest baseline timed beside the runs (pooled over the
   remeasurement's runs, so the schedules compare as their times do; `engine.measure.remeasure.figure`: noise only adds time),
   each round's figures in the row's "<k>_runs";
4. PyTorch eager on the same shapes and layout in a fresh process (agent.torch_reference), when the
   program is one op PyTorch has.
Each row also has the fraction of the machine's roofline both schedules reach, and whether the policy's own
schedule is below the baseline (failed or under 0.95x) and whether `optimize`'s fallback would keep the
untransformed program instead (agent/fallback.py); the summary counts both and gives the policy's own
geometric mean next to the one with the fallback; each further policy's figures come with its ratio to the
first's, program by program (measured in the same rounds: the comparison of two checkpoints that leaves the
least to the machine's drift). The policy infers on one torch thread: the cores are for the kernels being
timed. `mlir-rl-tui evaluate` prints `evaluation(...)`.

An evaluation takes hours on a 2-core machine (27 programs, 150 searched candidates and three final schedules
each: 2.5 hours on a 2-core Intel Xeon VM): `RowsFile` keeps each finished row (`evaluate --rows FILE`), so
a stopped evaluation loses only the program it was on, and the same call again measures only the rest.
"""

from __future__ import annotations

import hashlib
import math
import os
import statistics
from collections.abc import Callable

from mlir_rl_tui.agent.fallback import below_baseline, fallback_fires, with_fallback
from mlir_rl_tui.engine import Engine, load_file, to_text
from mlir_rl_tui.engine.measure.remeasure import figure, pooled_baseline, remeasure, speedups
from mlir_rl_tui.engine.store import jsonl


def gmean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


class RowsError(ValueError):
    """A rows file that cannot be read or belongs to another evaluation (one line: the cause)."""


def file_sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class RowsFile:
    """The rows of one evaluation as JSON lines (`evaluate --rows FILE`): a header with the settings the rows were
    measured with, then one finished row per line, appended and flushed as it finishes. Opening a file written
    with other settings (policy, budgets, seed, rounds, PyTorch) is a RowsError, not a mix; a row is reused only
    for a program file with the same content (its sha256) and path; an incomplete last line (the writer was
    killed mid-write) is dropped."""

    FORMAT = jsonl.EVALUATE_ROWS
    #: The command and option that write such files, in messages.
    COMMAND = "evaluate --rows"

    def __init__(self, path: str, settings: dict):
        self.path, self.settings = path, settings
        self.rows: dict[tuple[str, str], dict] = {}
        try:
            lines = jsonl.read(path)
        except (OSError, UnicodeDecodeError) as e:
            raise RowsError(f"{path}: cannot read it ({e})") from None
        if not lines.records and lines.cut:  # one line and no newline: not a file this class wrote
            raise RowsError(f"{path}: line 1 is not JSON: not a rows file of `{self.COMMAND}`")
        if not lines.records:
            self._write(lambda: jsonl.rewrite(path, [jsonl.header(self.FORMAT, **settings)]))
            return
        for number, r in zip(lines.numbers, lines.records):
            if r is None:
                raise RowsError(f"{path}: line {number} is not JSON: not a rows file of `{self.COMMAND}`")
        head = lines.records[0]
        if not jsonl.is_header(head, self.FORMAT):
            raise RowsError(f"{path}: not a rows file of `{self.COMMAND}` (no {self.FORMAT!r} header)")
        keys = [*settings, *(k for k in head if k not in settings and k != "format")]  # a setting on either side
        other = {k: (head.get(k), settings.get(k)) for k in keys if head.get(k) != settings.get(k)}
        if other:
            diff = ", ".join(f"{k} {a!r} there, {b!r} now" for k, (a, b) in other.items())
            raise RowsError(f"{path} holds rows of another evaluation ({diff}): give another --rows file")
        for number, row in zip(lines.numbers[1:], lines.records[1:]):
            if not isinstance(row, dict) or not isinstance(row.get("program"), str):
                raise RowsError(f"{path}: line {number} is not a row of `{self.COMMAND}` (no program)")
            self.rows[(row["program"], row.get("sha256"))] = row

    def _write(self, write) -> None:
        try:
            write()
        except OSError as e:
            raise RowsError(f"{self.path}: cannot write it ({e.strerror})") from None

    def get(self, path: str) -> dict | None:
        """The finished row of this program file, if the file holds one."""
        return self.rows.get((path, file_sha256(path)))

    def add(self, row: dict) -> None:
        self.rows[(row["program"], row["sha256"])] = row
        self._write(lambda: jsonl.append(self.path, row))  # a last line cut by a kill is cut off first


def policy_keys(n: int) -> list[str]:
    """The names of `n` policies in rows and summaries: "policy" (the first), then "policy_B", "policy_C", ..."""
    return ["policy"] + [f"policy_{chr(ord('B') + i)}" for i in range(n - 1)]


def _fallback_key(k: str) -> str:
    """The row's key of whether `optimize`'s fallback fires for policy `k` ("fallback" for the first)."""
    return "fallback" if k == "policy" else f"{k}_fallback"


def hill_key(budget: int) -> str:
    """The name of hill climbing with `budget` measurements in rows and summaries: hill@50."""
    return f"hill@{budget}"


def evaluate_program(eng: Engine, policies: list, path: str, budgets: list[int], seed: int = 0, rounds: int = 3,
                     torch: bool = True, only_differing: bool = False) -> dict:
    """One row of the evaluation table (see the module docstring); no budgets: no search. With
    `only_differing`, a program every policy schedules alike is not measured at all (a row with the schedules
    and "timed": false)."""
    from mlir_rl_tui.engine.search import search

    prog = load_file(path)
    keys = policy_keys(len(policies))
    schedules = {k: pol.one_pass(prog, eng.openmp) for k, pol in zip(keys, policies)}
    row: dict = {"program": path, "sha256": file_sha256(path), **{f"{k}_schedule": str(schedules[k]) for k in keys}}
    if only_differing and len({row[f"{k}_schedule"] for k in keys}) == 1:
        return {**row, "timed": False}
    for b in sorted(budgets):  # the smaller search first: the larger one meets its candidates in the cache
        r = search(eng, prog, "hill", b, seed=seed)
        k = hill_key(b)
        schedules[k] = r.schedule
        row.update({f"{k}_schedule": str(r.schedule), f"{k}_found": r.best.speedup if r.best.ok else None,
                    f"{k}_measured": r.evaluated, f"{k}_replayed": r.cache_hits})
    # each distinct schedule measured once per round, all of them interleaved (A B C A B C ...), more rounds
    # while one's runs are split by a slow spell of the machine (engine.measure.remeasure)
    runs = remeasure(eng, prog, list(schedules.values()), rounds)
    figures = speedups(runs)  # over the remeasurement's pooled baseline: the schedules compare as their times
    row["rounds"] = len(next(iter(runs.values())))
    for k, sched in schedules.items():
        ms, xs = runs[to_text(sched)], figures[to_text(sched)]
        ok = [m for m in ms if m.ok and m.time_ms]
        row[k] = figure(xs) or None  # the fastest run; None when a run failed
        row[f"{k}_status"] = "ok" if row[k] else next((m.status for m in ms if not m.ok), "ok")
        row[f"{k}_peak"] = statistics.median(m.peak_fraction or 0 for m in ok) if ok else None
        row[f"{k}_spread"] = [min(x for x in xs if x), max(xs)] if any(xs) else None
        row[f"{k}_runs"] = [round(x, 4) for x in xs]  # round by round, aligned across the row's schedules
    for k in keys:
        own = (row[f"{k}_schedule"], row[f"{k}_status"] == "ok", row[k])
        row[f"{k}_below_baseline"] = below_baseline(*own)
        row[_fallback_key(k)] = fallback_fires(*own)
        row[f"{k}_with_fallback"] = with_fallback(*own)
    row["contended"] = sum(m.contended for ms in runs.values() for m in ms)  # engine.measure.contention, after retries
    row["far"] = sum(m.far for ms in runs.values() for m in ms)  # the host kept the cores far, after retries
    handoff = [m.handoff_us for ms in runs.values() for m in ms if m.handoff_us]
    row["handoff_us"] = statistics.median(handoff) if handoff else None  # the cores' state while measured
    row["baseline_ms"] = pooled_baseline(runs)
    if torch:
        from mlir_rl_tui.agent.torch_reference import run_in_subprocess

        t = run_in_subprocess(path, len(os.sched_getaffinity(0)))
        row["torch_ms"] = t["time_ms"] if t else None
        row["torch"] = row["baseline_ms"] / t["time_ms"] if t and row["baseline_ms"] else None
    return row


def summarize(rows: list[dict], budgets: list[int] = (), n_policies: int = 1) -> dict:
    """Geometric means over the programs. "policy" is the policy's own schedules (failures left out and
    counted in "policy_failed"), "policy_with_fallback" what `optimize` delivers, "hill@B" hill climbing with
    B measurements (its final schedule re-measured), "policy_over_hill@B" their ratio; "below_baseline" counts
    the programs whose own schedule failed or is under 0.95x, "fallbacks" those where `optimize` would keep the
    untransformed program. A further policy K ("policy_B", ...) has the same figures under its name ("K",
    "K_with_fallback", "K_over_hill@B", "K_failed", "K_below_baseline", "K_below_baseline_programs",
    "K_fallbacks") and "K_over_policy": the geometric mean of its per-program ratios to the first policy (the
    programs where both ran), with "K_over_policy_spread" (x/ one standard deviation of those ratios),
    "K_ahead", "K_behind": the programs where it is more than 5% faster or slower, and "K_same_schedule".
    A row not timed (every policy scheduled it alike: `only_differing`) counts exactly 1.0 in each
    "K_over_policy" and is in no other figure; "not_timed" counts them."""
    untimed = sum(1 for r in rows if not r.get("timed", True))
    out = {"policy": gmean([r.get("policy") for r in rows]),
           "policy_with_fallback": gmean([r.get("policy_with_fallback") for r in rows])}
    for k in policy_keys(n_policies)[1:]:
        out[k] = gmean([r.get(k) for r in rows])
        out[f"{k}_with_fallback"] = gmean([r.get(f"{k}_with_fallback") for r in rows])
        logs = [math.log(r[k] / r["policy"]) for r in rows if r.get(k) and r.get("policy")] + [0.0] * untimed
        out[f"{k}_over_policy"] = math.exp(statistics.mean(logs)) if logs else None
        out[f"{k}_over_policy_spread"] = math.exp(statistics.stdev(logs)) if len(logs) > 1 else None
        out[f"{k}_ahead"] = sum(1 for x in logs if x > math.log(1.05))
        out[f"{k}_behind"] = sum(1 for x in logs if x < -math.log(1.05))
        out[f"{k}_same_schedule"] = sum(1 for r in rows if r.get(f"{k}_schedule") == r.get("policy_schedule"))
    for b in sorted(budgets):
        k = hill_key(b)
        out[k] = gmean([r.get(k) for r in rows])
        out[f"{k}_found"] = gmean([r.get(f"{k}_found") for r in rows])
        # the search's candidates timed in this run, and those answered without a timing (cache rows, repeats)
        out[f"{k}_measured"] = sum(r.get(f"{k}_measured", 0) for r in rows)
        out[f"{k}_replayed"] = sum(r.get(f"{k}_replayed", 0) for r in rows)
        for p in policy_keys(n_policies):
            if out[p] and out[k]:
                out[f"{p}_over_{k}"] = out[p] / out[k]
    if any(r.get("torch") for r in rows):
        out["torch"] = gmean([r.get("torch") for r in rows])
    out["programs"] = len(rows)
    if n_policies > 1 or untimed:
        out["not_timed"] = untimed
    out["policy_failed"] = sum(1 for r in rows if r.get("policy_status", "ok") != "ok")
    out["below_baseline"] = sum(1 for r in rows if r.get("policy_below_baseline"))
    out["below_baseline_programs"] = [os.path.basename(r["program"]) for r in rows if r.get("policy_below_baseline")]
    out["fallbacks"] = sum(1 for r in rows if r.get("fallback"))
    for k in policy_keys(n_policies)[1:]:
        out[f"{k}_failed"] = sum(1 for r in rows if r.get(f"{k}_status", "ok") != "ok")
        below = [os.path.basename(r["program"]) for r in rows if r.get(f"{k}_below_baseline")]
        out[f"{k}_below_baseline"], out[f"{k}_below_baseline_programs"] = len(below), below
        out[f"{k}_fallbacks"] = sum(1 for r in rows if r.get(_fallback_key(k)))
    out["contended_measurements"] = sum(r.get("contended", 0) for r in rows)
    out["far_measurements"] = sum(r.get("far", 0) for r in rows)
    return out


def evaluate(eng: Engine, policies: list, paths: list[str], budgets: list[int], seed: int = 0, rounds: int = 3,
             torch: bool = True, on_row: Callable[[int, int, dict], None] | None = None,
             rows_file: RowsFile | None = None, only_differing: bool = False) -> tuple[list[dict], dict]:
    """Every program in turn (never two at once: their timings would share the cores); with `rows_file`, the
    programs it has a row for are not measured again and each new row is added to it as it finishes.
    `policies`: one or more (agent.suggest.Policy), measured in the same rounds."""
    from mlir_rl_tui.agent.suggest import set_inference_threads

    set_inference_threads(1)
    rows = []
    for i, path in enumerate(paths):
        row = rows_file.get(path) if rows_file is not None else None
        if row is None:
            row = evaluate_program(eng, policies, path, budgets, seed, rounds, torch, only_differing)
            if rows_file is not None:
                rows_file.add(row)
        rows.append(row)
        if on_row is not None:
            on_row(i + 1, len(paths), rows[-1])
    return rows, summarize(rows, budgets, len(policies))


def _sha(policy) -> str | None:
    return file_sha256(policy.path) if policy.path and os.path.exists(policy.path) else policy.path


def settings(policies: list, budgets: list[int], seed: int, rounds: int, torch: bool,
             only_differing: bool = False) -> dict:
    """What an evaluation's rows depend on besides the programs (a RowsFile's header)."""
    more = {"other_policies_sha256": [_sha(p) for p in policies[1:]]} if len(policies) > 1 else {}
    return {"policy_sha256": _sha(policies[0]), **more, "hill_budgets": sorted(budgets), "seed": seed,
            "rounds": rounds, "torch": torch, **({"only_differing": True} if only_differing else {})}


def evaluation(eng: Engine, policies: list, paths: list[str], budgets: list[int], seed: int = 0, rounds: int = 3,
               torch: bool = True, on_row: Callable[[int, int, dict], None] | None = None,
               rows_file: RowsFile | None = None, only_differing: bool = False) -> dict:
    """`evaluate` with what it was run with: the rows, their geometric means, the settings and the machine;
    each further policy's checkpoint and decision time under its name ("policy_B", "policy_B_ms")."""
    rows, summary = evaluate(eng, policies, paths, budgets, seed, rounds, torch, on_row, rows_file, only_differing)
    more = {}
    for k, pol in list(zip(policy_keys(len(policies)), policies))[1:]:
        more |= {k: pol.path, f"{k}_ms": round(pol.ms_per_decision, 3)}
    return {"programs": rows, "gmean": summary, "hill_budgets": sorted(budgets), "policy": policies[0].path,
            "policy_ms": round(policies[0].ms_per_decision, 3), **more, "threads": len(os.sched_getaffinity(0)),
            "rounds": rounds}
