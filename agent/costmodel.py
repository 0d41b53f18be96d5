"""The learned cost model: a schedule's speedup over the untransformed program, with an error bar, without
measuring it (issue 14; Ansor, MetaSchedule and Tiramisu rank candidates the same way).

```python
from mlir_rl_tui.agent.costmodel import load_cost_model
model = load_cost_model()                      # the shipped one (agent/checkpoints/costmodel.pt), or None
[(speedup, std), ...] = model.predict(program, [schedule, ...])
```

The program's time is the sum of its ops' times, so the model predicts per op: `c` (the op's weight in
the untransformed program, from its static features only) and `s` (the op's own speedup under the
schedule, from all of its features, agent.costmodel_features), and the program's speedup is
`sum(c) / sum(c / s)`. An op the schedule leaves alone keeps s ~ 1; a program of a new size or number of
ops is a new sum of known parts. Each member of the ensemble is trained on a bootstrap draw of the
measurements (agent.costmodel_train); the prediction is the geometric mean of the members, and `std` the
members' spread in log space scaled to the speedup (speedup * std of the log speedups).
"""

from __future__ import annotations

import math
import os

import numpy as np
import torch
from torch import nn

from mlir_rl_tui.agent.checkpoint import CheckpointError, dataclass_from_json, load, save
from mlir_rl_tui.agent.costmodel_features import PER_LOOP, SCALARS, op_vector_size, program_matrix
from mlir_rl_tui.engine.config import ARITH_KINDS, DEFAULT_LIMITS, OP_TYPES, Limits
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.schedule.notation import Schedule

KIND = "cost-model"
DEFAULT_MODEL = os.path.join(os.path.dirname(__file__), "checkpoints", "costmodel.pt")
HIDDEN = 64
MAX_MEMBERS = 64
MAX_HIDDEN = 1024


def static_mask(limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """1 on the features that do not depend on the schedule (what the untransformed op's weight sees)."""
    n = limits.n_loops
    head = len(OP_TYPES) + 1 + len(ARITH_KINDS)
    mask = np.zeros(op_vector_size(limits), np.float32)
    mask[: len(OP_TYPES)] = 1
    mask[len(OP_TYPES) + 1: head] = 1
    for name in ("bounds", "iterators", "operands", "contiguous"):  # in the current loop order: the
        i = PER_LOOP.index(name)                                    # original order when not interchanged
        mask[head + i * n: head + (i + 1) * n] = 1
    base = head + len(PER_LOOP) * n
    for name in ("log_work", "work_share", "n_loops"):
        mask[base + SCALARS.index(name)] = 1
    return mask


class OpSum(nn.Module):
    """One member: per-op weight and speedup networks, summed over the ops (module docstring)."""

    def __init__(self, n_in: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.weight = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.speed = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                   nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, x0: torch.Tensor, valid: torch.Tensor, static: torch.Tensor) -> torch.Tensor:
        """x: (batch, ops, features) of the schedule, x0 of the untransformed program, both normalized;
        valid: (batch, ops) bool. Returns the log speedups (batch,)."""
        log_c = self.weight(x0 * static).squeeze(-1)
        log_s = self.speed(x).squeeze(-1)
        neg = torch.finfo(x.dtype).min
        base = torch.logsumexp(torch.where(valid, log_c, neg), dim=1)
        sched = torch.logsumexp(torch.where(valid, log_c - log_s, neg), dim=1)
        return base - sched


def batch(mats: list[np.ndarray], bases: list[np.ndarray], mean: np.ndarray, scale: np.ndarray
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded, normalized (batch, ops, features) of the schedules and of their untransformed programs, and
    the (batch, ops) mask of real ops."""
    n_ops = max(1, max(m.shape[0] for m in mats))
    x = np.zeros((len(mats), n_ops, len(mean)), np.float32)
    x0 = np.zeros_like(x)
    valid = np.zeros((len(mats), n_ops), bool)
    for i, (m, b) in enumerate(zip(mats, bases)):
        x[i, : len(m)] = (m - mean) / scale
        x0[i, : len(b)] = (b - mean) / scale
        valid[i, : len(m)] = True
    return torch.from_numpy(x), torch.from_numpy(x0), torch.from_numpy(valid)


class CostModel:
    """An ensemble of `OpSum` members and the feature normalization they were trained with."""

    def __init__(self, members: list[OpSum], mean: np.ndarray, scale: np.ndarray, limits: Limits = DEFAULT_LIMITS,
                 info: dict | None = None) -> None:
        self.members = members
        self.mean, self.scale = mean.astype(np.float32), scale.astype(np.float32)
        self.limits = limits
        self.info = info or {}
        self.static = torch.from_numpy(static_mask(limits))
        for m in members:
            m.eval()

    def log_predict(self, mats: list[np.ndarray], bases: list[np.ndarray]) -> np.ndarray:
        """(members, schedules) log speedups of feature matrices (agent.costmodel_features.program_matrix) of
        schedules and of their untransformed programs."""
        if not mats:
            return np.zeros((len(self.members), 0), np.float32)
        x, x0, valid = batch(mats, bases, self.mean, self.scale)
        with torch.no_grad():
            return torch.stack([m(x, x0, valid, self.static) for m in self.members]).numpy()

    def predict(self, program: Program, schedules: list[Schedule]) -> list[tuple[float, float]]:
        """(predicted speedup, its standard deviation) per schedule, in order."""
        mu, sd = self._log_stats(program, schedules)
        return [(math.exp(float(m)), math.exp(float(m)) * float(d)) for m, d in zip(mu, sd)]

    def _log_stats(self, program: Program, schedules: list[Schedule]) -> tuple[np.ndarray, np.ndarray]:
        base = program_matrix(program, Schedule({}), self.limits)
        logs = self.log_predict([program_matrix(program, s, self.limits) for s in schedules], [base] * len(schedules))
        return logs.mean(axis=0), logs.std(axis=0)

    @property
    def calibration(self) -> dict | None:
        """The interval's calibration (agent.costmodel_train.calibrate): level, q, floor, the op kinds the
        model was trained on and the coverage measured on held-out programs; None: not calibrated."""
        c = self.info.get("interval")
        ok = isinstance(c, dict) and all(isinstance(c.get(k), int | float) and math.isfinite(c[k]) and c[k] >= 0
                                         for k in ("level", "q", "floor"))
        return c if ok else None

    def interval(self, mu: float, sd: float) -> tuple[float, float, float] | None:
        """(speedup, low, high) of a log prediction `mu` with members' spread `sd`: exp(mu -+ q (sd + floor))."""
        c = self.calibration
        if c is None:
            return None
        h = c["q"] * (sd + c["floor"])
        return math.exp(mu), math.exp(mu - h), math.exp(mu + h)

    def knows(self, program: Program) -> bool:
        """Whether the model was trained on every op kind of `program` (a calibrated model records them)."""
        kinds = (self.calibration or {}).get("op_types")
        return not isinstance(kinds, list) or all(op.op_type in kinds for op in program.ops)

    def predict_interval(self, program: Program, schedules: list[Schedule]) -> list[tuple[float, float, float] | None]:
        """(predicted speedup, low, high) per schedule, the calibrated interval (it covered `level` of the
        measured speedups of held-out programs); None for every schedule when the model is not calibrated
        or the program has an op kind it was not trained on: it does not know."""
        if self.calibration is None or not self.knows(program) or not schedules:
            return [None] * len(schedules)
        mu, sd = self._log_stats(program, schedules)
        return [self.interval(float(m), float(d)) for m, d in zip(mu, sd)]

    def save(self, path: str) -> None:
        tensors = {f"m{i}.{k}": v for i, m in enumerate(self.members) for k, v in m.state_dict().items()}
        tensors["mean"], tensors["scale"] = torch.from_numpy(self.mean), torch.from_numpy(self.scale)
        hidden = self.members[0].weight[0].out_features if self.members else HIDDEN
        save(path, KIND, tensors, {"limits": self.limits.__dict__, "members": len(self.members), "hidden": hidden,
                                   "features": op_vector_size(self.limits), **self.info})

    @classmethod
    def load(cls, path: str) -> CostModel:
        tensors, info = load(path, KIND)
        limits = dataclass_from_json(Limits, info.get("limits", {}), path, "limits")
        n, hidden = info.get("members"), info.get("hidden")
        n_in = op_vector_size(limits)
        if not isinstance(n, int) or not 1 <= n <= MAX_MEMBERS or not isinstance(hidden, int) \
                or not 1 <= hidden <= MAX_HIDDEN or info.get("features") != n_in:
            raise CheckpointError(f"{path}: a cost model of another layout (members {n!r}, hidden {hidden!r}, "
                                  f"features {info.get('features')!r}, this version has {n_in}); train it again")
        members = []
        for i in range(n):
            m = OpSum(n_in, hidden)
            state = {k[len(f"m{i}."):]: v for k, v in tensors.items() if k.startswith(f"m{i}.")}
            try:
                m.load_state_dict(state)
            except RuntimeError as e:
                raise CheckpointError(f"{path}: member {i} does not fit the model ({str(e).splitlines()[0][:100]})"
                                      ) from None
            members.append(m)
        mean, scale = tensors.get("mean"), tensors.get("scale")
        if mean is None or scale is None or mean.shape != (n_in,) or scale.shape != (n_in,):
            raise CheckpointError(f"{path}: the cost model's feature normalization is missing or of another size")
        return cls(members, mean.numpy(), scale.numpy(), limits, info)


def load_cost_model(path: str | None = None) -> CostModel | None:
    """The model at `path` (default: the shipped one); None when no path is given and none ships. A file
    that is not a cost model is an EngineError (one line)."""
    p = path or DEFAULT_MODEL
    if not os.path.exists(p):
        if path:
            raise EngineError(f"{path}: no such cost model file")
        return None
    torch.set_num_threads(1)
    return CostModel.load(p)
