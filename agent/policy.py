"""Policy and value networks of the paper (MLIR RL 2025, Sec. V) and masked multi-discrete sampling.

Network: the consumer and producer feature vectors go through an LSTM (512) one after the other; its
last hidden state is the producer-consumer embedding. A 3x512 ReLU backbone feeds the heads:
transformation (6), one N x M head per tiled transformation (T, TP, TF; one softmax per loop row) and an
interchange head (N level pointers, or 3N-6 enumerated swap candidates). The value network has its own
3x512 backbone on the same embedding and one output.

One change from the paper, to keep the shipped checkpoint small: the LSTM's input weights are factored
through a 512-wide linear layer (the raw feature vector has ~4200 entries, most of them the sparse
access-matrix and history blocks). Raw counts (loop bounds, op counts) are scaled with log1p / 4, and the
embedding goes through a LayerNorm: without both, the LSTM gates saturate and states that differ only
in the action history (e.g. level-pointer sub-steps) collapse to the same output.

Sampling follows vwxyzjn/invalid-action-masking: masked logits are pushed to a large negative value,
their entropy is zero, and the log-probability of an action sums the heads the chosen transformation
uses (transformation + its tile head, or transformation + interchange).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from mlir_rl_tui.agent import checkpoint as ck
from mlir_rl_tui.agent.explain import DECODES
from mlir_rl_tui.engine.config import DEFAULT_LIMITS, TRANSFORMATIONS, Limits
from mlir_rl_tui.engine.rl.actions import enumerated_candidates, head_masks
from mlir_rl_tui.engine.rl.features import blocks, feature_size
from mlir_rl_tui.engine.schedule.notation import TILED

NEG = -1e8  # masked logit
KIND = {k: i for i, k in enumerate(TRANSFORMATIONS)}


@dataclass(frozen=True)
class PolicyConfig:
    hidden: int = 512
    """width of the LSTM embedding, the backbone layers and the value network"""
    layers: int = 3
    """fully connected ReLU layers of the backbone"""
    interchange: str = "pointers"
    """"pointers" (N level pointers, paper default) or "enumerated" (3N-6 swap candidates)"""


def _count_columns(limits: Limits) -> np.ndarray:
    """Which feature columns hold raw counts (bounds, op counts) that need log1p scaling."""
    cols = np.zeros(feature_size(limits), bool)
    pos = 0
    for name, size in blocks(limits):
        if name in ("bounds", "op_counts", "access"):
            cols[pos: pos + size] = True
        pos += size
    return cols


class ActorCritic(nn.Module):
    def __init__(self, limits: Limits = DEFAULT_LIMITS, config: PolicyConfig = PolicyConfig()) -> None:
        super().__init__()
        self.limits, self.config = limits, config
        n, m, h = limits.n_loops, limits.n_tile_sizes, config.hidden
        self.n_features = feature_size(limits)
        self.register_buffer("count_cols", torch.from_numpy(_count_columns(limits)), persistent=False)
        self.project = nn.Linear(self.n_features, h)
        self.lstm = nn.LSTM(h, h, batch_first=True)
        self.norm = nn.LayerNorm(h)

        def backbone() -> nn.Sequential:
            mods: list[nn.Module] = []
            for _ in range(config.layers):
                mods += [nn.Linear(h, h), nn.ReLU()]
            return nn.Sequential(*mods)

        self.actor = backbone()
        self.critic = backbone()
        self.transformation = nn.Linear(h, len(TRANSFORMATIONS))
        self.tile = nn.ModuleDict({k: nn.Linear(h, n * m) for k in TILED})
        self.n_interchange = n if config.interchange == "pointers" else 3 * n - 6
        self.interchange = nn.Linear(h, self.n_interchange)
        self.value = nn.Linear(h, 1)
        for lin in [self.transformation, self.interchange, *self.tile.values()]:
            nn.init.orthogonal_(lin.weight, 0.01)  # near-uniform initial policy (cleanrl)
            nn.init.zeros_(lin.bias)

    # ------------------------------------------------------------------------------------------
    def embed(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [B, 2F] (consumer ++ producer) -> producer-consumer embedding [B, H]."""
        x = obs.view(obs.shape[0], 2, self.n_features)
        x = torch.where(self.count_cols, torch.sign(x) * torch.log1p(x.abs()) / 4, x)
        if torch.is_grad_enabled():
            x = torch.relu(self.project(x))
        else:  # inference: only the non-zero columns of the sparse feature vector (keeps a decision < 10 ms)
            cols = (x != 0).flatten(0, 1).any(0).nonzero().squeeze(1)
            x = torch.relu(nn.functional.linear(x[..., cols], self.project.weight[:, cols], self.project.bias))
        return self.norm(self._lstm(x))

    def _lstm(self, x: torch.Tensor) -> torch.Tensor:
        """The LSTM's last hidden state, unrolled by hand over the 2 steps (nn.LSTM's CPU kernel is ~10x
        slower for one short sequence); same parameters and equations as nn.LSTM."""
        lstm = self.lstm
        gx = nn.functional.linear(x, lstm.weight_ih_l0, lstm.bias_ih_l0)
        h = c = torch.zeros(x.shape[0], lstm.hidden_size)
        for t in range(x.shape[1]):
            # h = 0 at t = 0: its recurrent term is just the bias (saves a quarter of the work)
            rec = lstm.bias_hh_l0 if t == 0 else nn.functional.linear(h, lstm.weight_hh_l0, lstm.bias_hh_l0)
            i, f, g, o = (gx[:, t] + rec).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return h

    def forward(self, obs: torch.Tensor, with_value: bool = True
                ) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
        """Logits per head ("transformation" [B,6], "T"/"TP"/"TF" [B,N,M], "I" [B,N|3N-6]) and value [B]."""
        e = self.embed(obs)
        a = self.actor(e)
        n, m = self.limits.n_loops, self.limits.n_tile_sizes
        logits = {"transformation": self.transformation(a), "I": self.interchange(a)}
        for k in TILED:
            logits[k] = self.tile[k](a).view(-1, n, m)
        return logits, self.value(self.critic(e)).squeeze(-1) if with_value else None


# ----------------------------------------------------------------------------------------------
# Masks and action vectors as tensors
def masks_for(session, limits: Limits = DEFAULT_LIMITS, interchange: str = "pointers") -> dict[str, np.ndarray]:
    """Boolean masks per head for the session's current op (engine.rl.actions.head_masks, plus enumerated I)."""
    h = head_masks(session.mask(), limits)
    if interchange == "enumerated":
        st = session.current
        ok = bool(h["transformation"][KIND["I"]])
        h["I"] = np.array([ok and j < st.n_loops for _, j in enumerated_candidates(limits.n_loops)], bool)
        if not h["I"].any():
            h["transformation"][KIND["I"]] = False
    return h


def stack_masks(masks: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.stack([m[k] for m in masks])) for k in masks[0]}


def _masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, logits, torch.full_like(logits, NEG))


def _entropy(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Entropy over the last axis, allowed choices only (masked ones contribute zero)."""
    p = logp.exp()
    return -torch.where(mask, p * logp, torch.zeros_like(p)).sum(-1)


def distribution(logits: dict[str, torch.Tensor], masks: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Masked log-softmax per head."""
    return {k: torch.log_softmax(_masked(logits[k], masks[k]), -1) for k in logits}


def evaluate_actions(logp: dict[str, torch.Tensor], masks: dict[str, torch.Tensor],
                     actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability and entropy of actions [B, 1+N+1] = (kind, size index per loop, loop/candidate).

    The log-probability sums the heads the chosen transformation uses. The entropy is that of the
    hierarchical distribution: H(kind) + sum_k pi(kind=k) H(parameters of k).
    """
    kind = actions[:, 0]
    lp_kind = logp["transformation"].gather(1, kind[:, None]).squeeze(1)
    n = logp["T"].shape[1]
    sizes = actions[:, 1: 1 + n]
    lp = lp_kind
    p_kind = logp["transformation"].exp()
    ent = _entropy(logp["transformation"], masks["transformation"])
    for k in TILED:
        rows = logp[k].gather(2, sizes[:, :, None]).squeeze(2).sum(1)
        lp = lp + torch.where(kind == KIND[k], rows, torch.zeros_like(rows))
        ent = ent + p_kind[:, KIND[k]] * _entropy(logp[k], masks[k]).sum(1)
    lp_i = logp["I"].gather(1, actions[:, 1 + n][:, None]).squeeze(1)
    lp = lp + torch.where(kind == KIND["I"], lp_i, torch.zeros_like(lp_i))
    ent = ent + p_kind[:, KIND["I"]] * _entropy(logp["I"], masks["I"])
    return lp, ent


def sample(logp: dict[str, torch.Tensor], greedy: bool = False, generator: torch.Generator | None = None
           ) -> torch.Tensor:
    """One action vector per row [B, 1+N+1]; only allowed choices can come out."""

    def draw(lp: torch.Tensor) -> torch.Tensor:
        if greedy:
            return lp.argmax(-1)
        flat = lp.reshape(-1, lp.shape[-1]).exp()
        return torch.multinomial(flat, 1, generator=generator).view(lp.shape[:-1])

    kind = draw(logp["transformation"])
    b, n = kind.shape[0], logp["T"].shape[1]
    sizes = torch.zeros(b, n, dtype=torch.long)
    tiles = {k: draw(logp[k]) for k in TILED}
    for k in TILED:
        sizes = torch.where((kind == KIND[k])[:, None], tiles[k], sizes)
    loop = draw(logp["I"])
    return torch.cat([kind[:, None], sizes, loop[:, None]], 1)


@torch.no_grad()
def act(model: ActorCritic, sessions: list, greedy: bool = False, generator: torch.Generator | None = None,
        with_value: bool = True):
    """One decision for each unfinished session: (obs [B,2F], masks, vectors [B,1+N+1], logp [B], value [B])."""
    ic = model.config.interchange
    obs = torch.from_numpy(np.stack([s.observation() for s in sessions]))
    masks = stack_masks([masks_for(s, model.limits, ic) for s in sessions])
    logits, value = model(obs, with_value)
    logp = distribution(logits, masks)
    vec = sample(logp, greedy, generator)
    lp, _ = evaluate_actions(logp, masks, vec)
    return obs, masks, vec, lp, value


# ----------------------------------------------------------------------------------------------
# Checkpoints (agent/checkpoint.py: tensors + JSON, loaded without running code)
LIMIT_BOUNDS = {"n_loops": 64, "n_tile_sizes": 64, "n_arrays": 64, "max_rank": 64, "tau": 64}
"""largest limits a checkpoint may ask for (the paper's are 12, 8, 14, 12, 5)"""
CONFIG_BOUNDS = {"hidden": 4096, "layers": 16}


def config_json(model: ActorCritic) -> dict:
    """The limits and policy configuration a checkpoint needs to rebuild `model`."""
    return {"limits": asdict(model.limits), "policy": asdict(model.config)}


def model_from_config(info: dict, path: str, tensors: dict[str, torch.Tensor] | None = None) -> ActorCritic:
    """The model described by a checkpoint's JSON (validated, bounded); with `tensors`, their names and
    shapes are checked against it first (on the meta device: nothing is allocated for a bad file)."""
    limits_json = info.get("limits", {})
    if isinstance(limits_json, dict):  # written before the formulation moved to the policy config
        limits_json = {k: v for k, v in limits_json.items() if k != "interchange"}
    limits = ck.dataclass_from_json(Limits, limits_json, path, "limits", LIMIT_BOUNDS)
    config = ck.dataclass_from_json(PolicyConfig, info.get("policy", {}), path, "policy config", CONFIG_BOUNDS)
    if config.interchange not in ("pointers", "enumerated") or min(config.hidden, config.layers) < 1:
        raise ck.CheckpointError(f"{path}: bad policy config in the checkpoint ({config})")
    if tensors is not None:
        with torch.device("meta"):
            expected = {k: tuple(v.shape) for k, v in ActorCritic(limits, config).state_dict().items()}
        got = {k: tuple(v.shape) for k, v in tensors.items()}
        if got != expected:
            diff = sorted(set(got) ^ set(expected)) or [k for k in expected if got[k] != expected[k]]
            k = diff[0]
            raise ck.CheckpointError(
                f"{path}: its weights do not match its limits and policy config ({k}: "
                f"{got.get(k, 'missing')} in the file, {expected.get(k, 'not in the model')} expected)")
    return ActorCritic(limits, config)


def load_weights(model: ActorCritic, tensors: dict[str, torch.Tensor]) -> ActorCritic:
    """Weights into `model` (float16 ones back to float32); names and shapes already checked by `build`."""
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in tensors.items()})
    return model


def save(model: ActorCritic, path: str, meta: dict | None = None, half: bool = True) -> None:
    """A small checkpoint: weights (float16 by default), limits, policy config and free-form JSON metadata."""
    sd = {k: (v.half() if half and v.is_floating_point() else v) for k, v in model.state_dict().items()}
    ck.save(path, "policy", sd, {**config_json(model), "meta": meta or {}})


def load(path: str, ensemble: bool = False) -> tuple[ActorCritic | Ensemble, dict]:
    """The policy of a checkpoint and its metadata; CheckpointError (one line) for any other file. An
    ensemble's file (`save_ensemble`) loads as an `Ensemble` only where `ensemble` says it may (scheduling:
    agent.suggest); training starts from one policy."""
    tensors, info = ck.load(path, "policy")
    meta = info.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    n = info.get("members")
    if n is None:
        return load_weights(model_from_config(info, path, tensors), tensors), meta
    if not isinstance(n, int) or not 2 <= n <= MAX_MEMBERS:
        raise ck.CheckpointError(f"{path}: bad number of ensemble members in the checkpoint ({n!r})")
    if not ensemble:
        raise ck.CheckpointError(f"{path}: an ensemble of {n} policies, which schedules (optimize, evaluate, "
                                 "the app) but does not train: start from one of its members "
                                 f"(`mlir-rl-tui ensemble --member 1 OUT {path}` writes the first)")
    members = []
    for i in range(n):
        part = _member_tensors(tensors, i)
        members.append(load_weights(model_from_config(info, path, part), part))
    return Ensemble(members), meta


def _member_tensors(tensors: dict[str, torch.Tensor], i: int) -> dict[str, torch.Tensor]:
    """The weights of member `i` (from 0) of an ensemble checkpoint's tensors (`m{i}.` + the member's names,
    as `save_ensemble` writes them)."""
    prefix = f"m{i}."
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


# ----------------------------------------------------------------------------------------------
# Ensembles: several cloned policies deciding together
MAX_MEMBERS = 4
"""most members an ensemble checkpoint may have (each adds ~3 ms to a decision on one thread)"""


class Ensemble(nn.Module):
    """Policies of one layout deciding together: each head's distribution is the mean of the members'
    (a mixture: log of the mean of their softmaxes, which `distribution` masks and renormalizes), the
    value the mean of theirs. Each cloning run breaks the near-ties between schedules of overlapping
    timings its own way (docs/agent-experiments.md); together the members keep the choices they share."""

    def __init__(self, members: list[ActorCritic]) -> None:
        super().__init__()
        if not members or any(config_json(m) != config_json(members[0]) for m in members):
            raise ValueError("an ensemble needs members of one layout (limits and policy config)")
        self.members = nn.ModuleList(members)
        self.limits, self.config, self.n_features = members[0].limits, members[0].config, members[0].n_features

    def forward(self, obs: torch.Tensor, with_value: bool = True
                ) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
        return self.mix(self.member_outputs(obs, with_value))

    def member_outputs(self, obs: torch.Tensor, with_value: bool = True
                       ) -> list[tuple[dict[str, torch.Tensor], torch.Tensor | None]]:
        """Each member's (logits, value): what "consensus" and "vote" decoding (agent.explain.decide) chooses among."""
        return [m(obs, with_value) for m in self.members]

    @staticmethod
    def mix(outs: list[tuple[dict[str, torch.Tensor], torch.Tensor | None]]
            ) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
        """The ensemble's (logits, value) from its members': the mean of their distributions and values."""
        n = torch.tensor(float(len(outs))).log()
        logits = {k: torch.logsumexp(torch.stack([torch.log_softmax(o[0][k], -1) for o in outs]), 0) - n
                  for k in outs[0][0]}
        values = [o[1] for o in outs if o[1] is not None]
        return logits, torch.stack(values).mean(0) if values else None


def save_member(path: str, k: int, out: str) -> dict:
    """Member `k` (from 1) of the ensemble checkpoint at `path` as a policy checkpoint of its own at `out`,
    its weights and metadata as they were given to `save_ensemble`; returns that metadata. Training (train
    --init, --bc-init, PPO) starts from one policy: from the shipped ensemble, from one of its members."""
    tensors, info = ck.load(path, "policy")
    n = info.get("members")
    if n is None:
        raise ck.CheckpointError(f"{path}: one policy, not an ensemble: it has no members to take")
    if not isinstance(n, int) or not 1 <= k <= n:
        raise ck.CheckpointError(f"{path}: an ensemble of {n} policies has no member {k} (1 to {n})")
    part = _member_tensors(tensors, k - 1)
    members = (info.get("meta") or {}).get("members")
    meta = members[k - 1].get("meta") if isinstance(members, list) and len(members) == n \
        and isinstance(members[k - 1], dict) else None
    meta = meta if isinstance(meta, dict) else {}
    load_weights(model_from_config(info, path, part), part)  # the member must load as one policy
    ck.save(out, "policy", part, {**{key: v for key, v in info.items() if key not in ("members", "meta")},
                                  "meta": meta})
    return meta


def save_ensemble(paths: list[str], out: str, decode: str = "grouped") -> Ensemble:
    """One checkpoint of the policies at `paths` (each loaded as `load` does), float16 like `save`, that
    decodes with `decode` (agent.explain.decide) when it schedules."""
    if decode not in DECODES:
        raise ValueError(f"decode must be one of {', '.join(DECODES)}, not {decode!r}")
    if not 2 <= len(paths) <= MAX_MEMBERS:
        raise ck.CheckpointError(f"an ensemble has 2 to {MAX_MEMBERS} members, not {len(paths)}")
    loaded = [load(p, ensemble=True) for p in paths]
    for p, (m, _) in zip(paths, loaded):
        if isinstance(m, Ensemble):
            raise ck.CheckpointError(f"{p}: already an ensemble; give the policies it was made of")
    try:
        ens = Ensemble([m for m, _ in loaded])
    except ValueError:
        raise ck.CheckpointError(f"{', '.join(paths)}: policies of different limits or configs cannot "
                                 "decide together") from None
    sd = {f"m{i}.{k}": (v.half() if v.is_floating_point() else v)
          for i, (m, _) in enumerate(loaded) for k, v in m.state_dict().items()}
    meta = {"trained_by": "ensemble", "decode": decode,
            "members": [{"file": os.path.basename(p), "meta": mt} for p, (_, mt) in zip(paths, loaded)]}
    ck.save(out, "policy", sd, {**config_json(loaded[0][0]), "members": len(paths), "meta": meta})
    return ens
