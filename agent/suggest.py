"""The policy as the app and the CLI use it: a suggestion with its probabilities, or a whole schedule.

    policy = load_policy()            # the shipped agent/checkpoints/default.pt, None if missing
    action, top = policy.suggest(session, k=3)   # Action, or LevelPointer during an interchange
    done = policy.schedule(Session(program))     # greedy, one pass over all ops, no measurement
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import torch

from mlir_rl_tui.agent.policy import KIND, ActorCritic, distribution, load, masks_for, stack_masks
from mlir_rl_tui.engine.actions import to_action
from mlir_rl_tui.engine.config import TRANSFORMATIONS
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.schedule import TILED, Action, Schedule

DEFAULT_CHECKPOINT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints", "default.pt")


@dataclass(frozen=True)
class LevelPointer:
    """One level-pointer sub-step of an interchange: put `loop` at the next position."""

    loop: int
    position: int

    def __str__(self) -> str:
        return f"I: loop {self.loop} -> position {self.position}"


class Policy:
    """A trained ActorCritic used greedily; every decision's inference time is kept in `decision_ms`."""

    def __init__(self, model: ActorCritic, meta: dict | None = None, path: str | None = None,
                 decode: str = "grouped") -> None:
        if decode not in ("grouped", "argmax"):
            raise ValueError(f"decode must be 'grouped' or 'argmax', not {decode!r}")
        self.decode = decode
        self.model = model.eval()
        self.meta = meta or {}
        self.path = path
        self.decision_ms: list[float] = []

    @property
    def ms_per_decision(self) -> float:
        return float(np.mean(self.decision_ms)) if self.decision_ms else 0.0

    @torch.no_grad()
    def suggest(self, session, k: int = 3) -> tuple[Action | LevelPointer, list[tuple[str, float]]]:
        """The suggested action and the top-k transformations with their probabilities.

        The transformation is chosen by `_choose` (grouped decoding: not always the first of the top-k,
        which are ranked by p(transformation), the probability shown), each with its most probable
        parameters (one argmax per tile row, or the best level pointer). Ranking by the joint probability
        instead would favour V and NT, which have no parameters to be unsure about.
        During an interchange only the level pointer is left to choose: the top-k are loops then.
        """
        if session.done:
            raise ScheduleError("every op is already finished")
        t0 = time.perf_counter()
        m = self.model
        ic = m.config.interchange
        masks = stack_masks([masks_for(session, m.limits, ic)])
        logits, _ = m(torch.from_numpy(session.observation())[None], with_value=False)
        logp = {key: v[0] for key, v in distribution(logits, masks).items()}
        n = m.limits.n_loops
        cands: list[tuple[float, np.ndarray]] = []
        for kind in TRANSFORMATIONS:
            if not masks["transformation"][0, KIND[kind]]:
                continue
            v = np.zeros(2 + n, np.int64)
            v[0] = KIND[kind]
            lpk = float(logp["transformation"][KIND[kind]])
            if kind in TILED:
                v[1: 1 + n] = logp[kind].argmax(-1).numpy()
            elif kind == "I" and session.pending:
                for loop in masks["I"][0].nonzero().squeeze(1).tolist():
                    w = v.copy()
                    w[1 + n] = loop
                    cands.append((float(logp["I"][loop]), w))
                continue
            elif kind == "I":
                v[1 + n] = int(logp["I"].argmax())
            cands.append((lpk, v))
        cands.sort(key=lambda c: -c[0])
        top = [(self._label(session, v), float(np.exp(lp))) for lp, v in cands[:k]]
        self.decision_ms.append((time.perf_counter() - t0) * 1e3)
        return self._decode(session, self._choose(cands)), top

    def _choose(self, cands: list[tuple[float, np.ndarray]]) -> np.ndarray:
        """The decoded action among candidates sorted by p(transformation).

        "grouped" (default): first the group with the larger total probability, finishing the op (V, NT)
        or transforming it further (T, TP, TF, I), then the most probable transformation in that group.
        A plain argmax picks NT whenever the policy spreads its belief that the op needs tiling over T,
        TP and TF (e.g. NT 0.44 vs TP 0.22, T 0.20, TF 0.14 on matmul_generic). "argmax": the most
        probable transformation. Level pointers of an interchange are always the argmax."""
        if self.decode == "argmax" or len(cands) < 2:
            return cands[0][1]
        ends = {KIND["V"], KIND["NT"]}
        finish = [c for c in cands if int(c[1][0]) in ends]
        more = [c for c in cands if int(c[1][0]) not in ends]
        if not finish or not more:
            return cands[0][1]
        mass = lambda group: sum(np.exp(lp) for lp, _ in group)  # noqa: E731
        return (more if mass(more) > mass(finish) else finish)[0][1]

    def _decode(self, session, vec) -> Action | LevelPointer:
        what, a = to_action(session, vec, self.model.config.interchange)
        if what == "point":
            return LevelPointer(int(a), len(session.pending))  # type: ignore[arg-type]
        return a  # type: ignore[return-value]

    def _label(self, session, vec) -> str:
        return str(self._decode(session, vec))

    def step(self, session):
        """Apply the suggestion; NT if it is not legal after all (it always should be)."""
        a, _ = self.suggest(session, k=1)
        try:
            return session.point(a.loop) if isinstance(a, LevelPointer) else session.apply(a)
        except ScheduleError:
            return session.apply(Action("NT")) if not session.pending else session.undo()

    def schedule(self, session):
        """Greedy one pass over all remaining ops; returns the finished Session."""
        guard = 0
        while not session.done:
            session = self.step(session)
            guard += 1
            if guard > 1000:  # a policy never needs this many decisions: fall back to NT everywhere
                while not session.done:
                    session = session.apply(Action("NT"))
        return session


def set_inference_threads(n: int) -> None:
    """Threads torch uses for inference in this process (a decision takes a few ms on one thread; while
    parallel kernels are being timed, torch's spinning threads would take their cores)."""
    torch.set_num_threads(n)


def to_measure(schedule: Schedule) -> Schedule:
    """The schedule to measure: NT on every op is the untransformed program, i.e. the baseline (hill
    climbing reports that case as Schedule({}) too). Measuring "op0: NT" separately only adds timing noise
    (+-20% on the 50-100 us programs of the data set, run to run)."""
    if all(a.kind == "NT" for acts in schedule.ops.values() for a in acts):
        return Schedule({})
    return schedule


def load_policy(path: str | None = None) -> Policy | None:
    """The policy at `path` (default: the shipped checkpoint); None when no path is given and none ships."""
    p = path or DEFAULT_CHECKPOINT
    if not os.path.exists(p):
        if path:
            raise EngineError(f"{path}: no such policy checkpoint")
        return None
    torch.set_num_threads(1)
    try:
        model, meta = load(p)  # tensors + JSON only: a file that would run code is refused (agent/checkpoint.py)
    except EngineError:
        raise
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise EngineError(f"{p}: not a policy checkpoint ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]})"
                          ) from None
    with torch.no_grad():  # warm-up: torch's first call allocates and dispatches slowly
        obs = torch.zeros(1, 2 * model.n_features)
        obs[0, 0] = 1.0
        model(obs, with_value=False)
    return Policy(model, meta, p)
