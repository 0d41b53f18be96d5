"""The policy as the app and the CLI use it: a suggestion with its probabilities, or a whole schedule.

    policy = load_policy()            # the shipped agent/checkpoints/default.pt, None if missing
    action, top = policy.suggest(session, k=3)   # Action, or LevelPointer during an interchange
    why = policy.explain(session, k=5, cost_model=load_cost_model())  # agent.costmodel; the rule, top k, value
    done = policy.schedule(Session(program))     # greedy, one pass over all ops, no measurement
    sched = policy.one_pass(program)             # that pass's schedule, as measured (NT everywhere: the baseline)
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from mlir_rl_tui.agent.explain import DECODES, MEMBER_DECODES, CostModel, Explanation, LevelPointer, decide, explain
from mlir_rl_tui.agent.policy import ActorCritic, Ensemble, distribution, load, masks_for
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.rl.actions import to_action
from mlir_rl_tui.engine.schedule.notation import Action, Schedule

DEFAULT_CHECKPOINT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checkpoints", "default.pt")


class Policy:
    """A trained ActorCritic (or Ensemble) used greedily; every decision's inference time is kept in
    `decision_ms`. `decode`: agent.explain's rule; "consensus" and "vote" need an Ensemble."""

    def __init__(self, model: ActorCritic | Ensemble, meta: dict | None = None, path: str | None = None,
                 decode: str = "grouped") -> None:
        if decode not in DECODES:
            raise ValueError(f"decode must be one of {', '.join(DECODES)}, not {decode!r}")
        if decode in MEMBER_DECODES and not isinstance(model, Ensemble):
            raise ValueError(f"{decode} decoding chooses among an ensemble's members: this is one policy")
        self.decode = decode
        self.model = model.eval()
        self.meta = meta or {}
        self.path = path
        self.decision_ms: list[float] = []

    @property
    def ms_per_decision(self) -> float:
        return float(np.mean(self.decision_ms)) if self.decision_ms else 0.0

    @torch.no_grad()
    def _heads(self, session, with_value: bool = False
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], float | None, list | None]:
        """One forward pass: masked log-probabilities and masks per head (numpy), the critic's value, and
        with decode "consensus" or "vote" each member's masked log-probabilities."""
        if session.done:
            raise ScheduleError("every op is already finished")
        m = self.model
        masks = masks_for(session, m.limits, m.config.interchange)
        obs = torch.from_numpy(session.observation())[None]
        t_masks = {k: torch.from_numpy(v)[None] for k, v in masks.items()}

        def masked(logits: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
            return {k: v[0].numpy() for k, v in distribution(logits, t_masks).items()}

        members = None
        if self.decode in MEMBER_DECODES:
            outs = m.member_outputs(obs, with_value)
            members = [masked(lg) for lg, _ in outs]
            logits, value = Ensemble.mix(outs)
        else:
            logits, value = m(obs, with_value=with_value)
        return masked(logits), masks, None if value is None else float(value[0]), members

    def decide(self, session) -> Action | LevelPointer:
        """The policy's action for the current op (agent.explain.decide's rule); its time is kept."""
        t0 = time.perf_counter()
        logp, masks, _, members = self._heads(session)
        vec = decide(logp, masks, self.decode, bool(session.pending), members).vector
        self.decision_ms.append((time.perf_counter() - t0) * 1e3)
        return self._decode(session, vec)

    def explain(self, session, k: int = 5, cost_model: CostModel | None = None) -> Explanation:
        """The decision with its reasons: the rule in words, the k most probable actions (joint
        probability) with the cost model's predicted speedups, and the critic's value (agent/explain.py)."""
        logp, masks, value, members = self._heads(session, with_value=True)
        return explain(session, logp, masks, value, self.decode, self.model.config.interchange, k, cost_model,
                       members)

    def suggest(self, session, k: int = 3) -> tuple[Action | LevelPointer, list[tuple[str, float]]]:
        """The suggested action and the k most probable complete actions with their joint probabilities
        (p(transformation) x p(parameters)), most probable first, the suggestion among them: it is chosen
        by the rule of `agent.explain.decide` (group, then transformation, then parameters), which is not
        always the most probable single action (`explain` says why)."""
        e = self.explain(session, k)
        action = self.action_of(session, e)
        return action, [(c.action, c.joint) for c in sorted(e.top, key=lambda c: -c.joint)]

    def action_of(self, session, why: Explanation) -> Action | LevelPointer:
        """The action an explanation of this session's state proposes."""
        return self._decode(session, why.decision.vector)

    def _decode(self, session, vec) -> Action | LevelPointer:
        what, a = to_action(session, vec, self.model.config.interchange)
        if what == "point":
            return LevelPointer(int(a), len(session.pending))  # type: ignore[arg-type]
        return a  # type: ignore[return-value]

    def step(self, session):
        """Apply the suggestion; NT if it is not legal after all (it always should be)."""
        a = self.decide(session)
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

    def one_pass(self, program, openmp: bool = True) -> Schedule:
        """The policy's schedule of a program, as it is measured (`to_measure`): the one pass `optimize`,
        `evaluate`, `tune` and the benchmarks all start from."""
        from mlir_rl_tui.engine import Session

        return to_measure(self.schedule(Session(program, openmp=openmp)).schedule)


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


def load_policy(path: str | None = None, *, required: bool = False) -> Policy | None:
    """The policy at `path` (default: the shipped checkpoint); None when no path is given and none ships, or
    with `required`, an EngineError saying how to get one."""
    p = path or DEFAULT_CHECKPOINT
    if not os.path.exists(p):
        if path:
            raise EngineError(f"{path}: no such policy checkpoint")
        if required:
            raise EngineError("no shipped policy (agent/checkpoints/default.pt); train one with `mlir-rl-tui train` "
                              "and pass --policy")
        return None
    torch.set_num_threads(1)
    try:
        model, meta = load(p, ensemble=True)  # tensors + JSON only: a file that would run code is refused (agent/checkpoint.py)
    except EngineError:
        raise
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise EngineError(f"{p}: not a policy checkpoint ({type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]})"
                          ) from None
    with torch.no_grad():  # warm-up: torch's first call allocates and dispatches slowly
        obs = torch.zeros(1, 2 * model.n_features)
        obs[0, 0] = 1.0
        model(obs, with_value=False)
    try:  # the decode rule's checks are Policy's
        return Policy(model, meta, p, meta.get("decode", "grouped"))
    except ValueError as e:
        raise EngineError(f"{p}: its metadata asks for a decoding it cannot use ({e})") from None
