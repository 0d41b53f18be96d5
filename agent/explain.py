"""Why the policy proposes what it proposes: its decision rule in words, its most probable actions, the critic's
value and the cost model's prediction for each action.

The policy's distribution is hierarchical (paper Sec. V): a transformation head, then the parameters of the
chosen transformation (one tile size per loop row for T, TP and TF; a level pointer for I). The decoding rule
is `decide` (one place, used by `Policy.suggest`, `Policy.step` and `explain`), so what the panel says is what
the policy did:

1. group (decode "grouped"): finish the op (V, NT) or transform it further (T, TP, TF, I), whichever has the
   larger total probability; then the most probable transformation of that group;
2. its parameters: the most probable tile size per loop row, or the most probable level pointer. With decode
   "consensus" (an ensemble whose checkpoint says so), the tile sizes are instead the members' own: each member's
   most probable size per row is one tile vector, and the vector proposed is the one the ensemble finds most
   probable (the mean over members of the product of its rows' probabilities). Row by row, the mean of members
   that disagree builds vectors none of them proposed: on a 16-to-64-channel 28x28 convolution, three members
   proposed TP(1,32,4,4,...), TF(1,16,1,0,...) and TF(1,16,4,4,...), and the mean TF(1,32,4,0,...).
   With decode "vote", the transformation too is the members' own: each member decides it by rule 1 on its own
   distribution, and one that more than half of them chose is taken (else rule 1 on the mixture decides); the
   tile sizes are then chosen as with "consensus". The mixture can take what most members rejected: on a
   stride-1 8-channel pooling, three members chose TF, TF and T (p(T) 0.48, 0.43, 0.69), the mixture T (0.53).

The proposal need not be the most probable single action: NT (no parameters) at 48% beats T at 29% x its tile
sizes, yet T is proposed when T, TP, TF and I together hold 52%. `Explanation.notes` says so in that case.

No torch here: the inputs are the masked log-probabilities per head as numpy arrays, so this is tested without
a network (agent/suggest.py runs the network and calls `explain`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Protocol

import numpy as np

from mlir_rl_tui.engine.config import TRANSFORMATIONS
from mlir_rl_tui.engine.errors import ScheduleError
from mlir_rl_tui.engine.rl.actions import to_action
from mlir_rl_tui.engine.schedule.notation import TILED, Schedule

FINISH = ("V", "NT")
"""the group that ends the op"""
MORE = ("T", "TP", "TF", "I")
"""the group that transforms the op further"""
GROUP_NAMES = {"finish": "finish the op (V, NT)", "more": "transform it further (T, TP, TF, I)"}
DECODES = ("grouped", "argmax", "consensus", "vote")
"""decoding rules (module docstring): "consensus" is "grouped" with the tile sizes of one member, "vote" is
"consensus" with the transformation most members chose"""
MEMBER_DECODES = ("consensus", "vote")
"""the rules that need each ensemble member's distribution"""


@dataclass(frozen=True)
class LevelPointer:
    """One level-pointer sub-step of an interchange: put `loop` at the next position."""

    loop: int
    position: int

    def __str__(self) -> str:
        return f"I: loop {self.loop} -> position {self.position}"


class CostModel(Protocol):
    """What `explain` needs of agent.costmodel's model: a predicted speedup and its calibrated interval per
    schedule, or None where the model does not know (agent.costmodel.CostModel.predict_interval)."""

    def predict_interval(self, program, schedules: list[Schedule]) -> list[tuple[float, float, float] | None]: ...


@dataclass(frozen=True)
class Candidate:
    """One complete action and its probability under the policy: p(transformation) x p(its parameters)."""

    action: str
    kind: str
    p_kind: float
    p_params: float
    predicted: tuple[float, float, float] | None = None
    """the cost model's (speedup, low, high) of the schedule with this action applied, the interval calibrated
    on held-out programs; None: no prediction (no model, not calibrated, or an op kind it does not know)"""

    @property
    def joint(self) -> float:
        return self.p_kind * self.p_params


@dataclass(frozen=True)
class Parameter:
    """One parameter choice of the proposed transformation: a loop's tile size, or a level pointer."""

    name: str
    choice: str
    p: float


@dataclass(frozen=True)
class Decision:
    """The outcome of the decoding rule for one state."""

    vector: np.ndarray
    kind: str
    group: str | None
    """"finish" or "more" when the group decided, None when one group was possible or decode is "argmax"."""
    masses: dict[str, float]
    """total probability of each group ("finish", "more")"""
    member: int | None = None
    """with decode "consensus" or "vote": the member (from 0) whose tile sizes were proposed, and how many
    members proposed the same vector"""
    agreeing: int = 0
    votes: tuple[int, int] | None = None
    """with decode "vote", when the members' majority chose the transformation: (members that chose it,
    members)"""


@dataclass(frozen=True)
class Explanation:
    """Everything the suggestion panel shows; `rule()` puts it in words."""

    action: str
    op: str
    decode: str
    decision: Decision
    kinds: list[tuple[str, float]]
    """allowed transformations with p(transformation), most probable first"""
    masked: list[tuple[str, str]]
    """masked transformations with the mask's reason"""
    params: list[Parameter]
    proposal: Candidate
    top: list[Candidate]
    """the most probable complete actions (joint probability), the proposal among them"""
    value: float | None = None
    """the critic's estimate of the episode's return: the final log speedup of the whole program"""
    pending: list[int] = field(default_factory=list)

    @property
    def most_probable(self) -> Candidate:
        return max(self.top, key=lambda c: c.joint)

    def heading(self) -> str:
        """How the decision was made, in one line (the panel's heading for `rule`)."""
        if self.decision.votes is not None:
            return "why: the members' vote on the transformation, then its parameters"
        return "why: the group, then the transformation, then its parameters"

    def rule(self) -> list[str]:
        """The decision in words, one sentence per step: group, transformation, parameters, the proposal."""
        d, out = self.decision, []
        if self.pending:
            placed = ", ".join(f"d{loop}" for loop in self.pending)
            out.append(f"interchange in progress ({placed} placed): only the level pointer is left to choose")
        elif d.votes is not None:
            kinds = ", ".join(f"{k} {p:.0%}" for k, p in self.kinds)
            out.append(f"transformation: {d.kind}, chosen by {d.votes[0]} of {d.votes[1]} members, each by group "
                       f"then transformation (the mixture: {kinds})")
        elif d.group is not None:
            win, lose = ("more", "finish") if d.group == "more" else ("finish", "more")
            out.append(f"group: {GROUP_NAMES[win]} {d.masses[win]:.0%} > {GROUP_NAMES[lose]} {d.masses[lose]:.0%}")
        if not self.pending and d.votes is None:
            how = "the most probable" + (" of its group" if d.group else "")
            kinds = ", ".join(f"{k} {p:.0%}" for k, p in self.kinds)
            out.append(f"transformation: {how}: {d.kind} ({kinds})")
        if self.params:
            what = "level pointer" if d.kind == "I" else "tile size per loop"
            shown = ", ".join(f"{p.name} {p.choice} {p.p:.0%}" for p in self.params)
            if d.member is None:
                out.append(f"then the most probable {what}: {shown}")
            else:
                by = f"{d.agreeing} members" if d.agreeing > 1 else f"member {d.member + 1}"
                out.append(f"then the tile sizes {by} proposed, the members' most probable vector: {shown}")
        c = self.proposal
        out.append(f"proposal {self.action}: p = {c.p_kind:.0%} x {c.p_params:.0%} = {c.joint:.0%}"
                   if self.params else f"proposal {self.action}: p = {c.joint:.0%}")
        return out

    def notes(self) -> list[str]:
        """What else the reader needs: the masked transformations and why, and the most probable single
        action when it is not the proposal."""
        out = []
        if self.masked and not self.pending:
            out.append("masked: " + "; ".join(f"{k} ({why})" if why else k for k, why in self.masked))
        best = self.most_probable
        if best.action != self.action:
            first = "the group" if self.decision.group else "the transformation"
            out.append(f"{best.action} alone is the most probable action ({best.joint:.0%}), but {first} "
                       "decides first")
        return out

    def value_text(self) -> str:
        if self.value is None:
            return "value: -"
        return (f"value {self.value:+.2f}: the critic expects a log speedup of {self.value:.2f} "
                f"(~{math.exp(self.value):.2f}x) for the whole program once this pass ends")

    def to_json(self) -> dict:
        d = asdict(self)
        d["decision"] = {"kind": self.decision.kind, "group": self.decision.group, "masses": self.decision.masses,
                         "member": self.decision.member, "agreeing": self.decision.agreeing,
                         "votes": self.decision.votes}
        d["rule"], d["notes"] = self.rule(), self.notes()
        for c in d["top"] + [d["proposal"]]:
            c["joint"] = c["p_kind"] * c["p_params"]
        return d


# ----------------------------------------------------------------------------------------------
def decide(logp: dict[str, np.ndarray], masks: dict[str, np.ndarray], decode: str = "grouped",
           pending: bool = False, members: list[dict[str, np.ndarray]] | None = None) -> Decision:
    """The decoding rule (module docstring): the transformation (by group first; with "vote" the one most
    members chose that way), then the most probable parameter of each of its heads, or with "consensus" and
    "vote" the members' most probable tile vector. `logp`: masked log-probabilities of one state per head (an
    ensemble's: the mixture's); `members`: each member's, which "consensus" and "vote" need."""
    if decode not in DECODES:
        raise ValueError(f"decode must be one of {', '.join(DECODES)}, not {decode!r}")
    if decode in MEMBER_DECODES and not members:
        raise ValueError(f"{decode} decoding needs the members' log-probabilities")
    allowed = [k for k in TRANSFORMATIONS if masks["transformation"][TRANSFORMATIONS.index(k)]]
    p = {k: float(np.exp(logp["transformation"][TRANSFORMATIONS.index(k)])) for k in allowed}
    masses = {"finish": sum(p[k] for k in allowed if k in FINISH), "more": sum(p[k] for k in allowed if k in MORE)}
    group = None
    pool = allowed
    both = any(k in FINISH for k in allowed) and any(k in MORE for k in allowed)
    if decode != "argmax" and both and not pending:
        group = "more" if masses["more"] > masses["finish"] else "finish"
        pool = [k for k in allowed if k in (MORE if group == "more" else FINISH)]
    kind = max(pool, key=lambda k: (p[k], -TRANSFORMATIONS.index(k)))
    votes = None
    if decode == "vote" and not pending:
        chosen = [decide(m, masks, "grouped", pending).kind for m in members or []]
        top = max(chosen, key=lambda k: (chosen.count(k), k == kind))
        if 2 * chosen.count(top) > len(chosen):
            kind, votes = top, (chosen.count(top), len(chosen))
            group = None if group is None else ("more" if kind in MORE else "finish")
    n = logp["T"].shape[0]
    v = np.zeros(2 + n, np.int64)
    v[0] = TRANSFORMATIONS.index(kind)
    member, agreeing = None, 0
    if kind in TILED and decode in MEMBER_DECODES:
        v[1: 1 + n], member, agreeing = consensus_sizes([m[kind] for m in members or []])
    elif kind in TILED:
        v[1: 1 + n] = logp[kind].argmax(-1)
    elif kind == "I":
        v[1 + n] = int(logp["I"].argmax())
    return Decision(v, kind, group, masses, member, agreeing, votes)


def consensus_sizes(heads: list[np.ndarray]) -> tuple[np.ndarray, int, int]:
    """Among the members' own tile vectors (each member's argmax per row of its masked log-probabilities
    [N, M] of one tiled head), the one of largest mixture probability: the mean over members of
    exp(sum of its rows' log-probabilities). Returns the vector, the first member that proposed it and how
    many members proposed it."""
    props = [h.argmax(-1) for h in heads]
    rows = np.arange(heads[0].shape[0])
    scores = [np.logaddexp.reduce([float(h[rows, v].sum()) for h in heads]) for v in props]
    best = int(np.argmax(scores))  # first of equal scores: the lowest member
    return props[best], best, sum(int(np.array_equal(props[best], v)) for v in props)


def top_sizes(rows: np.ndarray, allowed: np.ndarray, k: int) -> list[tuple[float, list[int]]]:
    """The k most probable allowed tile-size choices of one tiled head (log-probabilities [N, M], rows
    independent): a beam of width k over the rows is exact, as every term is <= 0."""
    beam: list[tuple[float, list[int]]] = [(0.0, [])]
    for row, ok in zip(rows, allowed):
        best = [j for j in np.argsort(-row, kind="stable") if ok[j]][:k] or [0]
        beam = sorted(((lp + float(row[j]), idx + [int(j)]) for lp, idx in beam for j in best),
                      key=lambda b: -b[0])[:k]
    return beam


def _label(session, vec: np.ndarray, interchange: str):
    what, a = to_action(session, vec, interchange)
    if what == "point":
        return LevelPointer(int(a), len(session.pending))  # type: ignore[arg-type]
    return a


def candidates(session, logp: dict[str, np.ndarray], masks: dict[str, np.ndarray], k: int,
               interchange: str = "pointers") -> list[tuple[float, float, object, str]]:
    """The k most probable complete actions: (p(transformation), p(parameters), action, kind), by joint
    probability; vectors that decode to the same action are summed."""
    n = logp["T"].shape[0]
    out: dict[str, list] = {}
    for i, kind in enumerate(TRANSFORMATIONS):
        if not masks["transformation"][i]:
            continue
        pk = float(np.exp(logp["transformation"][i]))
        vecs: list[tuple[float, np.ndarray]] = []
        base = np.zeros(2 + n, np.int64)
        base[0] = i
        if kind in TILED:
            for lp, idx in top_sizes(logp[kind], masks[kind], k):
                w = base.copy()
                w[1: 1 + n] = idx
                vecs.append((math.exp(lp), w))
        elif kind == "I":
            for loop in np.nonzero(masks["I"])[0][np.argsort(-logp["I"][masks["I"]], kind="stable")][:k]:
                w = base.copy()
                w[1 + n] = int(loop)
                vecs.append((float(np.exp(logp["I"][loop])), w))
        else:
            vecs.append((1.0, base))
        for pp, w in vecs:
            a = _label(session, w, interchange)
            key = str(a)
            if key in out:
                out[key][1] += pp
            else:
                out[key] = [pk, pp, a, kind]
    ranked = sorted(out.values(), key=lambda c: -c[0] * c[1])
    return [tuple(c) for c in ranked[:k]]  # type: ignore[misc]


def _parameters(session, kind: str, vec: np.ndarray, logp: dict[str, np.ndarray]) -> list[Parameter]:
    st = session.current
    n = logp["T"].shape[0]
    if kind == "I":
        loop = int(vec[1 + n])
        return [Parameter(f"position {len(session.pending)}", f"d{loop}", float(np.exp(logp["I"][loop])))]
    if kind not in TILED:
        return []
    sizes = session.limits.tile_sizes
    out = []
    for pos in range(min(st.n_loops, n)):
        d = st.loop_at(pos)
        j = int(vec[1 + pos])
        red = st.op.loops[d].iterator == "reduction"
        choice = "- (reduction)" if kind in ("TP", "TF") and red else str(sizes[j])
        out.append(Parameter(f"d{d}", choice, float(np.exp(logp[kind][pos, j]))))
    return out


def predict(cost_model: CostModel | None, session, actions: list) -> list[tuple[float, float, float] | None]:
    """The cost model's (speedup, low, high) of the schedule each action leads to; None where there is no
    model, the action leaves an interchange unfinished (no schedule to predict yet), the model does not know
    (agent.costmodel.CostModel.predict_interval) or fails."""
    if cost_model is None:
        return [None] * len(actions)
    scheds: list[Schedule | None] = []
    for a in actions:
        try:
            s = session.point(a.loop) if isinstance(a, LevelPointer) else session.apply(a)
        except ScheduleError:
            s = None
        scheds.append(None if s is None or s.pending else s.schedule)
    todo = [s for s in scheds if s is not None]
    try:
        got = iter(cost_model.predict_interval(session.program, todo)) if todo else iter(())
        return [None if s is None else _triple(next(got)) for s in scheds]
    except Exception:  # noqa: BLE001 - a failing cost model shows "-", never breaks the suggestion
        return [None] * len(actions)


def _triple(x) -> tuple[float, float, float] | None:
    if x is None:
        return None
    sp, lo, hi = float(x[0]), float(x[1]), float(x[2])
    return (sp, lo, hi) if all(math.isfinite(v) and v > 0 for v in (sp, lo, hi)) and lo <= sp <= hi else None


def explain(session, logp: dict[str, np.ndarray], masks: dict[str, np.ndarray], value: float | None = None,
            decode: str = "grouped", interchange: str = "pointers", k: int = 5,
            cost_model: CostModel | None = None, members: list[dict[str, np.ndarray]] | None = None
            ) -> Explanation:
    """The explanation of one decision (module docstring). `logp` and `masks`: one state's masked
    log-probabilities and masks per head; `value`: the critic's output for that state; `members`: each
    ensemble member's log-probabilities (decode "consensus" or "vote")."""
    d = decide(logp, masks, decode, bool(session.pending), members)
    proposal_action = _label(session, d.vector, interchange)
    mask = session.mask()
    names = list(TRANSFORMATIONS)
    p = {kd: float(np.exp(logp["transformation"][i])) for i, kd in enumerate(names) if masks["transformation"][i]}
    kinds = sorted(p.items(), key=lambda kv: -kv[1])
    masked = [(kd, mask.transformation[kd].reason if mask is not None else "")
              for i, kd in enumerate(names) if not masks["transformation"][i]]
    params = _parameters(session, d.kind, d.vector, logp)
    p_params = float(np.prod([q.p for q in params])) if params else 1.0
    cands = candidates(session, logp, masks, k, interchange)
    label = str(proposal_action)
    if label not in [str(a) for _, _, a, _ in cands]:
        cands.append((p[d.kind], p_params, proposal_action, d.kind))
    preds = predict(cost_model, session, [a for _, _, a, _ in cands])
    top = [Candidate(str(a), kd, pk, pp, pr) for (pk, pp, a, kd), pr in zip(cands, preds)]
    proposal = next(c for c in top if c.action == label)
    return Explanation(label, session.current.op.id, decode, d, kinds, masked, params, proposal, top, value,
                       list(session.pending))
