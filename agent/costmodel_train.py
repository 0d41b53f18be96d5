"""Training and evaluating the cost model (agent.costmodel) on the measurement cache.

Every ok row of the cache (engine.store.cache.Cache.entries) whose program is among the given ones is a sample
`(program, schedule) -> log speedup`; rows of several machines for one schedule are averaged. Programs are
split, never samples: the eval split of a data set folder and the files named as held out are only
evaluated on, so the figures say how the model ranks schedules of programs it has not seen.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from mlir_rl_tui.agent.costmodel import HIDDEN, CostModel, OpSum, batch, static_mask
from mlir_rl_tui.agent.costmodel_features import op_vector_size, program_matrix
from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.ir.program import Program, load_file
from mlir_rl_tui.engine.schedule.notation import Schedule, parse
from mlir_rl_tui.engine.store.cache import Cache


@dataclass
class Sample:
    """One measured schedule: its features, and the log of its measured speedup."""

    program: str  # sha256
    schedule: str
    log_speedup: float
    x: np.ndarray  # (ops, features)
    x0: np.ndarray  # the untransformed program's (ops, features)


@dataclass
class Programs:
    """Programs by sha256, their names, and which are held out."""

    by_sha: dict[str, Program] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    held_out: set[str] = field(default_factory=set)

    def add(self, path: str, held_out: bool) -> None:
        prog = load_file(path)
        if prog.sha256 in self.by_sha:  # one program in two places: held out if either says so
            if held_out:
                self.held_out.add(prog.sha256)
            return
        self.by_sha[prog.sha256] = prog
        self.names[prog.sha256] = os.path.splitext(os.path.basename(path))[0]
        if held_out:
            self.held_out.add(prog.sha256)


def read_programs(items: list[str], held_out: list[str] = ()) -> Programs:
    """Programs of `items` (engine.corpus.programs.program_paths: samples, data sets, folders, files; a data set's
    eval split is held out) and of `held_out` (all held out)."""
    from mlir_rl_tui.engine.corpus.generator import read_manifest
    from mlir_rl_tui.engine.corpus.programs import program_paths

    out = Programs()
    for group, all_held in ((items, False), (held_out, True)):
        for item in group:
            manifest = os.path.join(item, "manifest.json") if os.path.isdir(item) else item
            held = {e["abspath"] for e in read_manifest(manifest)["programs"] if e.get("split") == "eval"} \
                if manifest.endswith(".json") and os.path.isfile(manifest) else set()
            for path in program_paths(item):
                out.add(path, all_held or path in held)
    return out


def read_samples(cache: Cache, programs: Programs, limits: Limits = DEFAULT_LIMITS,
                 machine: str | None = None) -> list[Sample]:
    """The ok measurements of these programs in the cache (all machines unless `machine`), one per schedule."""
    logs: dict[tuple[str, str], list[float]] = {}
    for sha, text, _mach, rec in cache.entries(machine, set(programs.by_sha)):
        s = rec.get("speedup")
        if rec.get("status") == "ok" and isinstance(s, int | float) and s > 0 and math.isfinite(s):
            logs.setdefault((sha, text), []).append(math.log(s))
    bases: dict[str, np.ndarray] = {}
    out = []
    for (sha, text), vals in sorted(logs.items()):
        prog = programs.by_sha[sha]
        try:
            x = program_matrix(prog, parse(text), limits)
        except (ScheduleError, KeyError, IndexError, ValueError):
            continue  # a schedule of an older notation or action space: not describable now
        if sha not in bases:
            bases[sha] = program_matrix(prog, Schedule({}), limits)
        out.append(Sample(sha, text, float(np.mean(vals)), x, bases[sha]))
    return out


@dataclass
class TrainConfig:
    """How the ensemble is fitted."""

    members: int = 5
    """ensemble size (each on its own bootstrap draw of the samples): the error bar is their spread"""
    epochs: int = 400
    """full-batch Adam steps per member"""
    lr: float = 3e-3
    weight_decay: float = 1e-4
    hidden: int = HIDDEN
    rank_weight: float = 1.0
    """weight of the pairwise ranking loss (pairs of schedules of one program, logistic on the difference
    of their predictions) next to the Huber loss on the log speedups: search needs the order most"""
    seed: int = 0


def train(samples: list[Sample], cfg: TrainConfig | None = None, limits: Limits = DEFAULT_LIMITS,
          on_progress: Callable[[int, int, float], None] | None = None) -> CostModel:
    """Fit the ensemble on `samples` (Huber loss on log speedups: a few pathological schedules at 0.01x
    must not drown the ranking of the rest)."""
    if not samples:
        raise EngineError("no measurements to train on: measure some first (`mlir-rl-tui dataset measure DIR`)")
    cfg = cfg or TrainConfig()
    torch.set_num_threads(1)  # small tensors: a second thread only competes with the measurements
    torch.manual_seed(cfg.seed)
    rows = np.concatenate([s.x for s in samples] + [s.x0 for s in samples])
    mean = rows.mean(axis=0)
    scale = rows.std(axis=0)
    scale[scale < 1e-6] = 1.0
    x, x0, valid = batch([s.x for s in samples], [s.x0 for s in samples], mean, scale)
    y = torch.tensor([s.log_speedup for s in samples], dtype=torch.float32)
    static = torch.from_numpy(static_mask(limits))
    progs = {sha: i for i, sha in enumerate(sorted({s.program for s in samples}))}
    group = torch.tensor([progs[s.program] for s in samples])
    rng = np.random.default_rng(cfg.seed)
    members = []
    for k in range(cfg.members):
        idx = torch.from_numpy(rng.integers(0, len(samples), len(samples))) if cfg.members > 1 \
            else torch.arange(len(samples))
        net = OpSum(op_vector_size(limits), cfg.hidden)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        for epoch in range(cfg.epochs):
            opt.zero_grad()
            pred = net(x[idx], x0[idx], valid[idx], static)
            loss = torch.nn.functional.huber_loss(pred, y[idx], delta=0.5)
            if cfg.rank_weight:
                loss = loss + cfg.rank_weight * rank_loss(pred, y[idx], group[idx])
            loss.backward()
            opt.step()
            if on_progress is not None and epoch % 50 == 0:
                on_progress(k, cfg.members, float(loss.detach()))
        members.append(net)
    info = {"samples": len(samples), "programs": len({s.program for s in samples}), "config": cfg.__dict__}
    return CostModel(members, mean, scale, limits, info)


def rank_loss(pred: torch.Tensor, y: torch.Tensor, group: torch.Tensor, margin: float = 0.05) -> torch.Tensor:
    """Mean logistic loss over the ordered pairs of one program whose measured log speedups differ by more
    than `margin` (closer ones are within the noise: no order to learn)."""
    dy = y[:, None] - y[None, :]
    pairs = (group[:, None] == group[None, :]) & (dy > margin)
    if not bool(pairs.any()):
        return pred.sum() * 0.0
    dp = pred[:, None] - pred[None, :]
    return torch.nn.functional.softplus(-dp[pairs]).mean()


# ----------------------------------------------------------------------------------------------
def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); nan for fewer than 3 points or a constant side."""
    if len(a) < 3:
        return float("nan")
    ra, rb = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(v: np.ndarray) -> np.ndarray:
    order = np.argsort(v, kind="stable")
    r = np.empty(len(v))
    r[order] = np.arange(len(v))
    for val in np.unique(v):  # ties share their mean rank
        same = v == val
        if same.sum() > 1:
            r[same] = r[same].mean()
    return r


def evaluate(model: CostModel, samples: list[Sample], names: dict[str, str] | None = None,
             min_per_program: int = 5) -> dict:
    """Accuracy on `samples`: rank correlation pooled and per program, mean errors, error-bar coverage."""
    if not samples:
        raise EngineError("no measurements of the evaluated programs in the cache: measure some first "
                          "(`mlir-rl-tui dataset measure DIR --split eval`)")
    logs = model.log_predict([s.x for s in samples], [s.x0 for s in samples])
    mu, sd = logs.mean(axis=0), logs.std(axis=0)
    y = np.array([s.log_speedup for s in samples])
    per = {}
    for sha in sorted({s.program for s in samples}):
        i = np.array([s.program == sha for s in samples])
        if i.sum() >= min_per_program:
            best = int(np.argmax(mu[i]))
            per[(names or {}).get(sha, sha[:12])] = {
                "samples": int(i.sum()), "spearman": spearman(mu[i], y[i]),
                # the measured speedup of the model's first choice, as a fraction of the best measured
                "top1": float(math.exp(y[i][best] - y[i].max()))}
    rho = [p["spearman"] for p in per.values() if not math.isnan(p["spearman"])]
    return {
        "samples": len(samples), "programs": len({s.program for s in samples}),
        "spearman": spearman(mu, y),
        "spearman_per_program": float(np.mean(rho)) if rho else float("nan"),
        "mean_abs_log_error": float(np.mean(np.abs(mu - y))),
        "mean_rel_error": float(np.mean(np.abs(np.exp(mu - y) - 1))),
        "median_rel_error": float(np.median(np.abs(np.exp(mu - y) - 1))),
        "within_2_std": float(np.mean(np.abs(mu - y) <= 2 * sd)),
        **({"within_interval": float(np.mean(_inside(model, mu, sd, y))), "interval_level": model.calibration["level"]}
           if model.calibration is not None else {}),
        "top1_gmean": float(math.exp(np.mean([math.log(p["top1"]) for p in per.values()]))) if per else float("nan"),
        "per_program": per,
    }


# ----------------------------------------------------------------------------------------------
def _inside(model: CostModel, mu: np.ndarray, sd: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether each measured log speedup is inside the model's calibrated interval."""
    c = model.calibration
    return np.abs(y - mu) <= c["q"] * (sd + c["floor"])


def conformal_q(scores: np.ndarray, level: float) -> float:
    """The split-conformal quantile: the ceil((n + 1) level)-th smallest score (the largest when that is
    past n), so that a new score falls under it with probability >= level."""
    xs = np.sort(np.asarray(scores, float))
    k = math.ceil((len(xs) + 1) * level)
    return float(xs[min(k, len(xs)) - 1])


def calibrate(model: CostModel, samples: list[Sample], op_types: list[str], level: float = 0.9) -> dict:
    """Calibrate the model's interval on `samples` of programs it was not trained on (split conformal
    prediction, scores |log measured - log predicted| / (members' spread + floor), the floor the median
    spread): the interval record for `model.info["interval"]`. Its `coverage` is honest: the programs are
    split in two halves, each half's measured speedups checked against the interval calibrated on the other."""
    if len({s.program for s in samples}) < 2:
        raise EngineError("calibrating the cost model's interval needs measurements of at least 2 held-out programs")
    logs = model.log_predict([s.x for s in samples], [s.x0 for s in samples])
    mu, sd = logs.mean(axis=0), logs.std(axis=0)
    y = np.array([s.log_speedup for s in samples])
    floor = float(np.median(sd))
    scores = np.abs(y - mu) / (sd + floor)
    progs = sorted({s.program for s in samples})
    half = np.array([progs.index(s.program) % 2 for s in samples])
    covered = 0.0
    for a in (0, 1):
        q = conformal_q(scores[half == a], level)
        covered += float(np.sum(scores[half != a] <= q))
    return {"level": level, "q": conformal_q(scores, level), "floor": floor, "coverage": covered / len(samples),
            "samples": len(samples), "programs": len(progs), "op_types": sorted(op_types)}


# -- programs held out: what `mlir-rl-tui costmodel train|eval|calibrate` trains on, checks and calibrates on --
def trained_op_types(programs: Programs) -> list[str]:
    """The op kinds of the programs trained on (those not held out): the calibrated interval is for programs
    of these kinds only."""
    return sorted({op.op_type for sha, p in programs.by_sha.items() if sha not in programs.held_out for op in p.ops})


def held_out_samples(programs: Programs, samples: list[Sample]) -> list[Sample]:
    """The samples of the held-out programs (never trained on)."""
    return [s for s in samples if s.program in programs.held_out]


def train_held_out(programs: Programs, samples: list[Sample], cfg: TrainConfig | None = None, level: float = 0.9,
                   on_progress: Callable[[int, int, float], None] | None = None
                   ) -> tuple[CostModel, list[Sample], list[Sample]]:
    """Train on the samples of the programs not held out (`train`); the model's info names the programs on
    each side, and its interval is calibrated on the held-out ones when there are two or more (`calibrate`,
    at `level`). Returns the model, the samples trained on and the held-out samples."""
    fit = [s for s in samples if s.program not in programs.held_out]
    held = held_out_samples(programs, samples)
    model = train(fit, cfg, on_progress=on_progress)
    model.info.update(trained_on=sorted(programs.names[s] for s in {x.program for x in fit}),
                      held_out=sorted(programs.names[s] for s in {x.program for x in held}))
    if len({s.program for s in held}) >= 2:
        model.info["interval"] = calibrate(model, held, trained_op_types(programs), level)
    return model, fit, held


def fit_report(model: CostModel, fit: list[Sample], held: list[Sample], names: dict[str, str]) -> dict:
    """The model's accuracy (`evaluate`) on the samples it was trained on ("train", without the per-program
    figures) and on the held-out ones ("held_out", when there are some)."""
    report = {"train": {k: v for k, v in evaluate(model, fit, names).items() if k != "per_program"}}
    if held:
        report["held_out"] = evaluate(model, held, names)
    return report


def recalibrate(model: CostModel, programs: Programs, held: list[Sample], level: float = 0.9) -> dict:
    """Calibrate `model`'s interval again on the held-out samples (`calibrate`): the interval record, also
    set as model.info["interval"]. An EngineError (one line) with fewer than 2 held-out programs."""
    model.info["interval"] = calibrate(model, held, trained_op_types(programs), level)
    return model.info["interval"]
