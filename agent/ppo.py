"""PPO for the MLIR scheduling agent, in one file that reads top to bottom (after cleanrl's ppo.py).

One episode schedules every op of one program; its reward is the log speedup of the whole schedule,
measured once at the end through the engine's worker pool and SQLite cache (paper Sec. IV-C, final
reward; Pearl's memoization). With `cost_model` (a learned cost model, agent/costmodel.py) only a seeded
`measured_fraction` of the episodes is measured; the others are rewarded with the model's predicted speedup
(cheap rollouts), and the CSV log shows how far the predictions were from the measurements on the measured
ones. With `ray_address` the episodes of an iteration run in Ray tasks, each with its own Engine, through
the same `collect` function.

    mlir-rl-tui train --programs DIR --iterations 20 --out runs/ppo [--init bc.pt] [--resume]

(one option per field of `Args`, mlir_rl_tui/commands/train.py).
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn, optim

from mlir_rl_tui.agent import checkpoint as ck
from mlir_rl_tui.agent.evaluate import gmean
from mlir_rl_tui.agent.policy import (
    ActorCritic,
    act,
    config_json,
    distribution,
    evaluate_actions,
    load,
    load_weights,
    model_from_config,
    save,
)
from mlir_rl_tui.agent.ppo_args import Args
from mlir_rl_tui.engine import Engine, Program, Session, units
from mlir_rl_tui.engine import load as load_program
from mlir_rl_tui.engine.rl.actions import apply_vector


# ----------------------------------------------------------------------------------------------
@dataclass
class Rollout:
    """One program scheduled to the end: per decision the inputs the update needs, then the reward."""

    program: int
    obs: list[torch.Tensor] = field(default_factory=list)
    masks: list[dict[str, torch.Tensor]] = field(default_factory=list)
    actions: list[torch.Tensor] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    schedule: str = ""
    reward: float = 0.0
    speedup: float | None = None
    status: str = ""
    cached: bool = False
    measured: bool = True
    predicted: float | None = None
    """the cost model's predicted speedup (with a cost model)"""


def collect(model: ActorCritic, programs: list[Program], indices: list[int], engine: Engine, seed: int,
            penalty: float = -1.0, cost_model=None, measured_fraction: float = 1.0) -> list[Rollout]:
    """Run one episode per index (all in lock step, batched inference), then measure the schedules (with a
    cost model: predict every schedule, measure a seeded `measured_fraction` of them, reward the others with
    the prediction)."""
    g = torch.Generator().manual_seed(seed)
    eps = [Rollout(i) for i in indices]
    sessions = [Session(programs[i], limits=model.limits, openmp=engine.openmp) for i in indices]
    live = [j for j, s in enumerate(sessions) if not s.done]
    while live:
        obs, masks, vec, lp, value = act(model, [sessions[j] for j in live], generator=g)
        for r, j in enumerate(live):
            e = eps[j]
            e.obs.append(obs[r])
            e.masks.append({k: v[r] for k, v in masks.items()})
            e.actions.append(vec[r])
            e.logprobs.append(float(lp[r]))
            e.values.append(float(value[r]))
            sessions[j] = apply_vector(sessions[j], vec[r].tolist(), model.config.interchange)
        live = [j for j in live if not sessions[j].done]
    if cost_model is not None:
        pick = np.random.default_rng(seed).random(len(eps)) < measured_fraction
        for j, e in enumerate(eps):
            (sp, _), = cost_model.predict(programs[e.program], [sessions[j].schedule])
            e.predicted, e.measured = float(sp), bool(pick[j])
            if not e.measured:
                e.schedule, e.status, e.speedup = str(sessions[j].schedule), "predicted", e.predicted
                e.reward = math.log(max(e.predicted, 1e-6))

    def measure(j: int) -> None:
        m = engine.measure(programs[eps[j].program], sessions[j].schedule)
        e = eps[j]
        e.schedule, e.status, e.cached, e.speedup = m.schedule, m.status, m.cached, m.speedup
        e.reward = m.log_speedup(penalty)

    with ThreadPoolExecutor(engine.pool.size) as ex:
        list(ex.map(measure, [j for j, e in enumerate(eps) if e.measured]))
    return eps


def _collect_remote(state_dict: dict, limits: dict, policy: dict, texts: list[str], indices: list[int],
                    seed: int, penalty: float, runs: int, cost_model: str | None = None,
                    measured_fraction: float = 1.0) -> tuple[list[Rollout], int, int]:
    """Body of a Ray task: rebuild the policy and an Engine in the worker, then the same `collect`."""
    from mlir_rl_tui.agent.policy import PolicyConfig
    from mlir_rl_tui.engine.config import Limits, MeasureConfig

    torch.set_num_threads(1)
    lim = Limits(**{k: tuple(v) if isinstance(v, list) else v for k, v in limits.items()})
    model = ActorCritic(lim, PolicyConfig(**policy))
    model.load_state_dict(state_dict)
    progs = [load_program(t) for t in texts]
    with Engine(lim, MeasureConfig(runs=runs), workers=1) as eng:
        eps = collect(model, progs, indices, eng, seed, penalty, _cost_model(cost_model), measured_fraction)
        hits, misses = (eng.cache.hits, eng.cache.misses) if eng.cache else (0, 0)
    return eps, hits, misses


def _cost_model(path: str | None):
    """The cost model of `--cost-model` ("shipped": the one beside the shipped policy), or None."""
    if path is None:
        return None
    from mlir_rl_tui.agent.costmodel import load_cost_model
    from mlir_rl_tui.engine.errors import EngineError

    model = load_cost_model(None if path == "shipped" else path)
    if model is None:
        raise EngineError("--cost-model shipped: no shipped cost model (agent/checkpoints/costmodel.pt)")
    return model


# ----------------------------------------------------------------------------------------------
def gae(ep: Rollout, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Advantages and returns of one episode; the only reward is on its last step."""
    T = len(ep.values)
    rewards = np.zeros(T, np.float32)
    rewards[-1] = ep.reward
    values = np.array(ep.values, np.float32)
    adv = np.zeros(T, np.float32)
    last = 0.0
    for t in reversed(range(T)):
        next_value = values[t + 1] if t + 1 < T else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + values


def clipped_losses(newlogprob: torch.Tensor, oldlogprob: torch.Tensor, adv: torch.Tensor, value: torch.Tensor,
                   returns: torch.Tensor, clip_coef: float, norm_adv: bool
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A minibatch's PPO-clip policy loss and value loss (paper Sec. V, cleanrl's ppo.py), with the
    approximate KL between the old and new policies and the fraction of ratios outside the clip range."""
    logratio = newlogprob - oldlogprob
    ratio = logratio.exp()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean()
    if norm_adv and len(adv) > 1:
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip_coef, 1 + clip_coef)).mean()
    v_loss = 0.5 * ((value - returns) ** 2).mean()
    return pg_loss, v_loss, approx_kl, clipfrac


def update(model: ActorCritic, optimizer: optim.Optimizer, eps: list[Rollout], args: Args,
           rng: np.random.Generator) -> dict[str, float]:
    """PPO-clip epochs over the batch's decisions, reusing the masks stored with the rollout."""
    b_obs = torch.stack([o for e in eps for o in e.obs])
    b_masks = {k: torch.stack([m[k] for e in eps for m in e.masks]) for k in eps[0].masks[0]}
    b_actions = torch.stack([a for e in eps for a in e.actions])
    b_logprobs = torch.tensor([x for e in eps for x in e.logprobs])
    b_values = torch.tensor([x for e in eps for x in e.values])
    adv_ret = [gae(e, args.gamma, args.gae_lambda) for e in eps]
    b_adv = torch.from_numpy(np.concatenate([a for a, _ in adv_ret]))
    b_returns = torch.from_numpy(np.concatenate([r for _, r in adv_ret]))
    n = len(b_obs)
    stats: dict[str, list[float]] = {k: [] for k in ("policy", "value", "entropy", "approx_kl", "clipfrac")}
    for _ in range(args.update_epochs):
        if args.target_kl is not None and stats["approx_kl"] and stats["approx_kl"][-1] > args.target_kl:
            break
        order = rng.permutation(n)
        for start in range(0, n, args.minibatch_size):
            mb = torch.from_numpy(order[start: start + args.minibatch_size])
            logits, value = model(b_obs[mb])
            masks = {k: v[mb] for k, v in b_masks.items()}
            newlogprob, entropy = evaluate_actions(distribution(logits, masks), masks, b_actions[mb])
            pg_loss, v_loss, approx_kl, clipfrac = clipped_losses(
                newlogprob, b_logprobs[mb], b_adv[mb], value, b_returns[mb], args.clip_coef, args.norm_adv)
            ent = entropy.mean()
            loss = pg_loss - args.ent_coef * ent + args.vf_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            for k, v in (("policy", pg_loss), ("value", v_loss), ("entropy", ent), ("approx_kl", approx_kl),
                         ("clipfrac", clipfrac)):
                stats[k].append(float(v.detach()))
    y_pred, y_true = b_values.numpy(), b_returns.numpy()
    var_y = np.var(y_true)
    out = {k: float(np.mean(v)) for k, v in stats.items()}
    out["explained_variance"] = float("nan") if var_y == 0 else float(1 - np.var(y_true - y_pred) / var_y)
    return out


# ----------------------------------------------------------------------------------------------
CSV_FIELDS = ["iteration", "global_step", "episodes", "time_s", "charts/reward", "charts/speedup_gmean",
              "charts/valid_rate", "charts/cache_hit_rate", "charts/evaluated", "charts/measured_episodes",
              "charts/model_abs_log_error", "losses/policy", "losses/value",
              "losses/entropy", "losses/approx_kl", "losses/clipfrac", "losses/explained_variance"]


# ----------------------------------------------------------------------------------------------
# Resume state (OUT/last.pt): weights, Adam's moments and the torch RNG as tensors; iteration, Adam's
# hyper-parameters, the numpy RNG and the arguments as JSON (agent/checkpoint.py: nothing is unpickled)
def save_state(path: str, model: ActorCritic, optimizer: optim.Optimizer, rng: np.random.Generator,
               iteration: int, global_step: int, time_s: float, args: Args) -> None:
    opt_tensors, opt_info = ck.optimizer_to_tensors(optimizer.state_dict())
    tensors = {**{f"model/{k}": v for k, v in model.state_dict().items()}, **opt_tensors,
               "torch_rng": torch.get_rng_state()}
    ck.save(path, "ppo-state", tensors, {
        "iteration": iteration, "global_step": global_step, "time_s": time_s, "rng": rng.bit_generator.state,
        "optimizer": opt_info, "args": asdict(args), **config_json(model)})


@dataclass
class ResumeState:
    """A read and checked OUT/last.pt; `model` is None for states converted from the older format (the
    run's --init or default model is rebuilt, as before)."""

    path: str
    tensors: dict[str, torch.Tensor]
    info: dict
    model: ActorCritic | None

    def restore(self, model: ActorCritic, optimizer: optim.Optimizer, rng: np.random.Generator
                ) -> tuple[int, int, float]:
        """Weights, optimizer and RNG into place; (iteration, global step, seconds so far)."""
        path, info = self.path, self.info

        def bad(what: str) -> ck.CheckpointError:
            return ck.CheckpointError(f"{path}: bad {what} in the PPO resume state; delete it to start over")

        weights = {k[len("model/"):]: v for k, v in self.tensors.items() if k.startswith("model/")}
        if self.model is None:
            model_from_config(config_json(model), path, weights)  # same names and shapes as the model being resumed
            load_weights(model, weights)
        counters = [info.get("iteration"), info.get("global_step")]
        if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in counters):
            raise bad("iteration counters")
        time_s = info.get("time_s", 0.0)
        if not isinstance(time_s, int | float) or not math.isfinite(time_s):
            raise bad("elapsed time")
        sd = ck.optimizer_from_tensors(self.tensors, info.get("optimizer"), path)
        params = [p for g in optimizer.param_groups for p in g["params"]]
        for pid, st in sd["state"].items():
            for key, v in st.items():
                if pid >= len(params) or (isinstance(v, torch.Tensor) and v.dim() and v.shape != params[pid].shape):
                    raise bad(f"optimizer state ({pid}/{key})")
        try:
            optimizer.load_state_dict(sd)
        except (ValueError, KeyError, TypeError, RuntimeError) as e:
            raise bad(f"optimizer state ({str(e).splitlines()[0][:80]})") from None
        try:
            rng.bit_generator.state = info.get("rng")
            if "torch_rng" in self.tensors:
                torch.set_rng_state(self.tensors["torch_rng"])
        except (ValueError, KeyError, TypeError, RuntimeError):
            raise bad("random generator state") from None
        return counters[0], counters[1], float(time_s)


def load_state(path: str) -> ResumeState:
    tensors, info = ck.load(path, "ppo-state")
    model = None
    if "limits" in info or "policy" in info:
        weights = {k[len("model/"):]: v for k, v in tensors.items() if k.startswith("model/")}
        model = load_weights(model_from_config(info, path, weights), weights)
    return ResumeState(path, tensors, info, model)


def train(args: Args, on_iteration: Callable[[dict], None] | None = None,
          on_progress: Callable[[str], None] | None = None) -> str:
    """Train; returns the path of the final policy checkpoint (OUT/policy.pt). `on_iteration` gets each
    iteration's CSV row, `on_progress` a line saying what the iteration is doing (a progress line)."""
    from mlir_rl_tui.engine.corpus.programs import load_programs

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)
    programs = load_programs(args.programs, split="train")
    last_path, csv_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "progress.csv")

    state = load_state(last_path) if args.resume and os.path.exists(last_path) else None
    if state and state.model is not None:
        model = state.model
    elif args.init:
        model, _ = load(args.init)
    else:
        model = ActorCritic()
    optimizer = optim.Adam(model.parameters(), lr=args.learning_rate, eps=1e-5)
    cost_model = _cost_model(args.cost_model)
    fraction = args.measured_fraction if cost_model is not None else 1.0
    start, global_step, t_offset = 0, 0, 0.0
    if state:
        start, global_step, t_offset = state.restore(model, optimizer, rng)
    elif os.path.exists(csv_path):
        os.remove(csv_path)

    engine = remote = None
    if args.ray_address:
        import ray

        ray.init(address=args.ray_address, ignore_reinit_error=True,  # "local": always a new one here
                 num_cpus=args.ray_tasks if args.ray_address == "local" else None, log_to_driver=False)
        remote = ray.remote(_collect_remote)
        texts = [p.text for p in programs]
    else:
        from mlir_rl_tui.engine.config import MeasureConfig

        engine = Engine(model.limits, MeasureConfig(runs=args.runs))
    new = not os.path.exists(csv_path)
    f = open(csv_path, "a", newline="")
    writer = csv.DictWriter(f, CSV_FIELDS)
    if new:
        writer.writeheader()
    t0 = time.time() - t_offset

    def progress(it: int, what: str) -> None:
        if on_progress is not None:
            done = it - start  # iterations of this run (a resumed run starts at `start`)
            spent = time.time() - t0 - t_offset
            eta = f", {units.left(spent / done * (args.iterations - it))}" if done else ""
            on_progress(f"PPO iteration {it + 1}/{args.iterations}: {what}{eta}")

    try:
        for it in range(start, args.iterations):
            progress(it, f"collecting {args.programs_per_batch} episodes")
            indices = rng.integers(0, len(programs), args.programs_per_batch).tolist()
            seed = int(rng.integers(1 << 31))
            if remote is not None:
                import ray

                sd = {k: v.clone() for k, v in model.state_dict().items()}
                parts = [indices[j::args.ray_tasks] for j in range(args.ray_tasks)]
                futures = [remote.remote(sd, asdict(model.limits), asdict(model.config), texts, p, seed + j,
                                         args.penalty, args.runs, args.cost_model, fraction)
                           for j, p in enumerate(parts) if p]
                eps, hits, misses = [], 0, 0
                for e, h, m in ray.get(futures):
                    eps += e
                    hits, misses = hits + h, misses + m
                evaluated = misses
            else:
                h0, m0 = (engine.cache.hits, engine.cache.misses) if engine.cache else (0, 0)
                ev0 = engine.evaluated
                eps = collect(model, programs, indices, engine, seed, args.penalty, cost_model, fraction)
                hits = (engine.cache.hits - h0) if engine.cache else 0
                misses = (engine.cache.misses - m0) if engine.cache else 0
                evaluated = engine.evaluated - ev0
            global_step += sum(len(e.actions) for e in eps)
            progress(it, "updating the policy")
            stats = update(model, optimizer, eps, args, rng)
            rewards = [e.reward for e in eps]
            ok = [e.speedup for e in eps if e.status in ("ok", "predicted") and e.speedup]
            checked = [abs(math.log(e.predicted / e.speedup)) for e in eps
                       if e.measured and e.predicted and e.status == "ok" and e.speedup]
            row = {
                "iteration": it + 1, "global_step": global_step, "episodes": (it + 1) * args.programs_per_batch,
                "time_s": round(time.time() - t0, 1), "charts/reward": float(np.mean(rewards)),
                "charts/speedup_gmean": gmean(ok) or 0.0,
                "charts/valid_rate": len(ok) / len(eps),
                "charts/cache_hit_rate": hits / max(hits + misses, 1), "charts/evaluated": evaluated,
                "charts/measured_episodes": sum(e.measured for e in eps),
                "charts/model_abs_log_error": float(np.mean(checked)) if checked else "",
                **{f"losses/{k}": v for k, v in stats.items()},
            }
            writer.writerow(row)
            f.flush()
            save_state(last_path, model, optimizer, rng, it + 1, global_step, time.time() - t0, args)
            save(model, os.path.join(args.out, "policy.pt"), {"trained_by": "ppo", "iterations": it + 1,
                                                            "args": asdict(args)})
            if on_iteration:
                on_iteration(row)
    finally:
        f.close()
        if engine is not None:
            engine.close()
    final = os.path.join(args.out, "policy.pt")
    if not os.path.exists(final):
        save(model, final, {"trained_by": "ppo", "iterations": 0})
    return final
