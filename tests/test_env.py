"""The Gymnasium environment on real programs: API contract, mask, rewards, traces."""

from __future__ import annotations

import math

import gymnasium
import numpy as np
import pytest
from conftest import SAMPLE_FILES, SAMPLES
from gymnasium.utils.env_checker import check_env

import mlir_rl_tui.engine as _engine  # noqa: F401 - registers mlir_rl/Schedule-v0
from mlir_rl_tui.engine.rl.actions import to_vectors
from mlir_rl_tui.engine.rl.env import RecordTrace, ScheduleEnv
from mlir_rl_tui.engine.rl.trace import read_trace
from mlir_rl_tui.engine.schedule.notation import Action, parse, parse_action


@pytest.mark.parametrize("name", ["matmul.mlir", "matmul_bias_relu.mlir"])
def test_check_env(name, engine):
    env = gymnasium.make("mlir_rl/Schedule-v0", program=str(SAMPLES / name), engine=engine)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.action_space.nvec.tolist() == engine_nvec()
    assert set(info["head_masks"]) == {"transformation", "T", "TP", "TF", "I"}


def vector(env: gymnasium.Env, text: str) -> np.ndarray:
    """The one vector that applies action `text` to the env's current op."""
    (vec,) = to_vectors(env.unwrapped.session, parse_action(text))
    return vec


def engine_nvec():
    from mlir_rl_tui.engine.rl.actions import nvec

    return nvec()


def test_random_masked_agent_never_takes_an_invalid_action():
    """200 episodes over every sample, sampling with the mask (no measurement: mask and features only)."""
    env = gymnasium.make("mlir_rl/Schedule-v0", program=[str(p) for p in SAMPLE_FILES], measure="never")
    env.action_space.seed(0)
    programs, steps = set(), 0
    for ep in range(200):
        obs, info = env.reset(seed=ep)
        programs.add(env.unwrapped.program.path)
        terminated = False
        while not terminated:
            action = env.action_space.sample(mask=info["action_mask"])
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            assert "invalid_action" not in info, info["invalid_action"]
            assert not truncated and reward == 0.0
            assert env.observation_space.contains(obs)
        assert env.unwrapped.session.done
    assert len(programs) == len(SAMPLE_FILES)
    assert steps > 400


def test_final_reward_is_log_speedup_of_a_measured_episode(engine, matmul):
    env = ScheduleEnv(matmul, engine=engine)
    obs, info = env.reset(seed=0)
    rewards = []
    for text in ["TP(32,32,0)", "T(4,32,1)", "V", "NT"]:
        obs, r, terminated, truncated, info = env.step(vector(env, text))
        rewards.append(r)
    assert terminated and rewards[:3] == [0.0, 0.0, 0.0]
    assert info["status"] == "ok" and info["schedule"] == "op0: TP(32,32,0) T(4,32,1) V; op1: NT"
    assert rewards[-1] == pytest.approx(math.log(info["speedup"]))
    assert info["speedup"] > 2


def test_level_pointer_interchange_takes_n_substeps(engine, matmul):
    env = ScheduleEnv(matmul, engine=engine, measure="never")
    env.reset(seed=0)
    vecs = to_vectors(env.session, Action("I", (2, 0, 1)))
    assert len(vecs) == 3
    for i, v in enumerate(vecs):
        obs, r, terminated, truncated, info = env.step(v)
        if i < 2:
            assert info["pending"] == [2, 0, 1][: i + 1] and info["schedule"] == ""
            # only I (the remaining levels) is allowed while an interchange is in progress
            assert info["action_mask"][0].tolist() == [0, 0, 0, 1, 0, 0]
    assert info["schedule"] == "op0: I(2,0,1)" and info["pending"] == []


def test_masked_action_ends_the_episode_with_the_penalty(engine, matmul):
    env = ScheduleEnv(matmul, engine=engine, penalty=-2.0)
    _, info = env.reset(seed=0)
    v = np.zeros(len(env.action_space.nvec), np.int64)
    v[0] = 4  # V: masked (vector too large) on the untiled matmul
    assert info["action_mask"][0][4] == 0
    obs, r, terminated, truncated, info = env.step(v)
    assert terminated and r == -2.0 and "8192" in info["invalid_action"]


def test_immediate_rewards_sum_to_the_final_log_speedup(engine, matmul, tmp_path):
    trace = tmp_path / "env.jsonl"
    env = RecordTrace(ScheduleEnv(matmul, engine=engine, reward="immediate"), str(trace))
    env.reset(seed=0, options={"program": str(SAMPLES / "matmul.mlir")})
    total = 0.0
    for text in ["T(32,32,32)", "NT", "NT"]:
        _, r, terminated, _, info = env.step(vector(env, text))
        total += r
    env.close()
    assert terminated and info["status"] == "ok"
    assert total == pytest.approx(math.log(info["speedup"]))
    tr = read_trace(str(trace))
    assert not tr.truncated and [r["action"] for r in tr.records] == ["T(32,32,32)", "NT", "NT"]
    assert tr.records[-1]["measurement"]["status"] == "ok"
    assert list(tr.schedules().values())[0] == parse("op0: T(32,32,32) NT; op1: NT")


def test_reset_switches_programs(engine):
    env = ScheduleEnv(str(SAMPLES / "matmul.mlir"), engine=engine, measure="never")
    env.reset(seed=0)
    assert len(env.program.ops) == 2
    env.reset(options={"program": str(SAMPLES / "sequence5.mlir")})
    assert len(env.program.ops) == 7
    with pytest.raises(engine_error()):
        ScheduleEnv(None, measure="never").reset()


def engine_error():
    from mlir_rl_tui.engine.errors import EngineError

    return EngineError
