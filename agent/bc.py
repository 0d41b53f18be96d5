"""Behaviour cloning from traces: pre-training before PPO (Pearl Sec. 5.2's idea, with schedules as data).

Each episode of a trace (engine.rl.trace: `read_trace(path).episodes()`) is one schedule; its steps are
taken again on a Session in traversal order (`engine.rl.trace.schedule_steps`) and the action vectors
re-derived with engine.rl.actions.to_vectors (an interchange becomes its N level-pointer steps), so the
observation and masks are the ones the policy sees. An op whose recorded actions do not end with V or NT
gets an NT, which leaves the schedule unchanged. When the episode's last measurement succeeded, the value
head is trained towards its log speedup too (actor-critic pre-training).

    python -m mlir_rl_tui.agent.bc TRACE.jsonl ... --out bc.pt [--init policy.pt] [--epochs 100]
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass

import numpy as np
import torch
from torch import optim

from mlir_rl_tui.agent.policy import ActorCritic, distribution, evaluate_actions, load, masks_for, save, stack_masks
from mlir_rl_tui.engine import EngineError, Program, load_file
from mlir_rl_tui.engine import load as load_program
from mlir_rl_tui.engine.rl.actions import apply_vector, to_vectors
from mlir_rl_tui.engine.rl.trace import TraceEpisode, read_trace, schedule_steps
from mlir_rl_tui.engine.schedule.notation import Schedule


@dataclass
class Example:
    obs: np.ndarray
    masks: dict[str, np.ndarray]
    action: np.ndarray
    value: float | None  # log speedup of the whole schedule, if measured
    weight: float = 1.0  # share of this decision in the loss (all 1: plain behaviour cloning)


def _log_speedup(ep: TraceEpisode) -> float | None:
    """Log speedup of the episode's schedule, when its last measurement is a successful one."""
    m = ep.measurement or {}
    sp = m.get("speedup")
    if m.get("status", "ok") == "ok" and isinstance(sp, int | float) and 0 < sp < float("inf"):
        return math.log(sp)
    return None


def examples_from_schedule(program: Program, schedule: Schedule, value: float | None = None,
                           weight: float = 1.0) -> list[Example]:
    """Decisions that build `schedule` on `program`, op by op in traversal order (engine.rl.trace.schedule_steps),
    each with `weight` in the cloning loss."""
    out: list[Example] = []
    for sess, op, a in schedule_steps(program, schedule):
        vecs = to_vectors(sess, a)
        if vecs is None:
            raise EngineError(f"{op}: {a} uses a tile size outside {sess.limits.tile_sizes}")
        for v in vecs:
            out.append(Example(sess.observation(), masks_for(sess), v.astype(np.int64), value, weight))
            sess = apply_vector(sess, v)
    return out


def examples_from_trace(path: str, programs: list[Program] | None = None) -> list[Example]:
    """Examples of every episode in a trace; programs are found among `programs` by sha256, by path, or in
    the program text the trace carries."""
    try:
        trace = read_trace(path)  # records of the wrong shape are counted as bad lines there, never parsed as code
    except OSError as e:
        raise EngineError(f"{path}: cannot read the trace ({e.strerror})") from None
    if not trace.records:
        raise EngineError(f"{path}: no trace record in it (give a JSONL trace written by the app, search or env)")
    by_sha = {p.sha256: p for p in programs or []}
    out: list[Example] = []
    for ep in trace.episodes():
        prog = by_sha.get(ep.program_sha256)
        if prog is None and ep.program_text is not None:
            prog = by_sha[ep.program_sha256] = load_program(ep.program_text, name=ep.program_sha256[:12])
        elif prog is None:
            if not os.path.exists(ep.program):
                raise EngineError(f"{path}: program {ep.program!r} of the trace not found; pass it with --programs")
            prog = by_sha[ep.program_sha256] = load_file(ep.program)
        out += examples_from_schedule(prog, ep.schedule, _log_speedup(ep))
    return out


def _batch(examples: list[Example]) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
    """Observations, masks per head and actions of the examples, stacked."""
    obs = torch.from_numpy(np.stack([e.obs for e in examples]))
    actions = torch.from_numpy(np.stack([e.action for e in examples]))
    return obs, stack_masks([e.masks for e in examples]), actions


def behaviour_cloning(model: ActorCritic, examples: list[Example], epochs: int = 100, lr: float = 1e-3,
                      batch_size: int = 32, vf_coef: float = 0.5, seed: int = 0, log=None,
                      lr_end: float | None = None) -> list[float]:
    """Minimise -log pi(a|s) (summed over the heads the action uses) + vf_coef * value error, each decision
    weighted by its example's weight (weighted means over a mini-batch; all 1: plain behaviour cloning).
    `lr_end`: the learning rate decays from `lr` to it along a cosine over the epochs (None: constant)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    obs, masks, actions = _batch(examples)
    has_v = torch.tensor([e.value is not None for e in examples])
    values = torch.tensor([e.value or 0.0 for e in examples], dtype=torch.float32)
    weights = torch.tensor([e.weight for e in examples], dtype=torch.float32)
    opt = optim.Adam(model.parameters(), lr=lr)
    decay = optim.lr_scheduler.CosineAnnealingLR(opt, epochs, eta_min=lr_end) if lr_end is not None else None
    losses = []
    for ep in range(epochs):
        order = torch.from_numpy(rng.permutation(len(examples)))
        tot = 0.0
        for start in range(0, len(order), batch_size):
            mb = order[start: start + batch_size]
            logits, v = model(obs[mb])
            mbm = {k: m[mb] for k, m in masks.items()}
            lp, _ = evaluate_actions(distribution(logits, mbm), mbm, actions[mb])
            w = weights[mb]
            loss = -(w * lp).sum() / w.sum()
            if has_v[mb].any():
                hv = has_v[mb]
                loss = loss + vf_coef * (w[hv] * (v - values[mb])[hv] ** 2).sum() / w[hv].sum()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            tot += float(loss.detach()) * len(mb)
        losses.append(tot / len(examples))
        if decay is not None:
            decay.step()
        if log:
            log(ep + 1, losses[-1])
    return losses


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description="behaviour cloning from traces")
    p.add_argument("traces", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--programs", nargs="*", default=[], help="programs the traces refer to by hash")
    p.add_argument("--init", help="start from this checkpoint")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from mlir_rl_tui.engine.corpus.programs import load_programs

    progs = load_programs(a.programs) if a.programs else []
    ex = [e for t in a.traces for e in examples_from_trace(t, progs)]
    model = load(a.init)[0] if a.init else ActorCritic()
    torch.set_num_threads(1)
    losses = behaviour_cloning(model, ex, a.epochs, a.lr, seed=a.seed)
    save(model, a.out, {"trained_by": "bc", "traces": a.traces, "examples": len(ex), "epochs": a.epochs,
                        "final_loss": losses[-1]})
    return a.out


if __name__ == "__main__":
    print(main())
