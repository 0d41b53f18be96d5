"""The options of PPO (agent.ppo.train), one per field with its help under it (cleanrl's style): torch-free,
so that `mlir-rl-tui train --help`, built from these fields, answers without loading torch."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Args:
    programs: list[str] = field(default_factory=lambda: ["samples"])
    """folders, data set manifests (train split) or .mlir files"""
    out: str = "runs/ppo"
    """last.pt, policy.pt and progress.csv"""
    seed: int = 0
    iterations: int = 10
    """PPO iterations"""
    programs_per_batch: int = 64
    """episodes per iteration"""
    learning_rate: float = 1e-3
    clip_coef: float = 0.2
    gamma: float = 1.0
    """1: no discounting (the reward comes at the end)"""
    gae_lambda: float = 0.95
    minibatch_size: int = 32
    update_epochs: int = 4
    vf_coef: float = 0.5
    ent_coef: float = 0.01
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    target_kl: float | None = None
    """stop an iteration's epochs when the approximate KL exceeds this"""
    penalty: float = -1.0
    """reward of a schedule that fails"""
    runs: int = 3
    """at least this many timing rounds per measurement (MeasureConfig.runs; 3: cheap rollouts)"""
    init: str | None = None
    """start from these weights"""
    resume: bool = False
    """continue from OUT/last.pt"""
    ray_address: str | None = None
    """run the rollouts as Ray tasks on this cluster ("local": one here)"""
    ray_tasks: int = 2
    """Ray tasks per iteration"""
    threads: int = 1
    """torch threads"""
    cost_model: str | None = None
    """reward episodes with this cost model's prediction ("shipped")"""
    measured_fraction: float = 0.25
    """with --cost-model: the share of episodes measured anyway"""
