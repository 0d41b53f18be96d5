"""Gymnasium environment over the engine (paper Sec. IV): one episode schedules every op of a program.

```python
import gymnasium, mlir_rl_tui.engine  # importing the engine registers the id
env = gymnasium.make("mlir_rl/Schedule-v0", program="matmul")  # a .mlir file, or a shipped sample's name
obs, info = env.reset(seed=0, options={"program": "conv2d"})
obs, reward, terminated, truncated, info = env.step(env.action_space.sample(mask=info["action_mask"]))
```

- Action: `MultiDiscrete(engine.rl.actions.nvec(limits))` = [transformation, tile-size index per loop, loop pointer].
  A level-pointer interchange takes N sub-steps (one loop placed per step, paper App. B).
- `info["action_mask"]`: per-dimension int8 masks that `MultiDiscrete.sample(mask=...)` accepts;
  `info["head_masks"]`: per-head boolean masks (transformation, T, TP, TF as N x M, I as N).
- Observation: consumer then producer feature vectors (`Session.observation()`, paper Sec. V-A.1).
- Reward (paper Sec. IV-C): `reward="final"` (default) gives 0 per step and the log speedup when the last op
  is finished; `reward="immediate"` measures after every step that changes the schedule and gives the change in
  log speedup (the rewards still sum to the final log speedup). A failed measurement (transform-error,
  compile-error, crash, timeout, wrong-result) gives `penalty` and ends the episode; so does a masked action
  (`info["invalid_action"]` says why), which a masked agent never takes.
- `measure="never"` skips measuring (reward 0): for fast rollouts of the mask and features.
- Traces: `RecordTrace(env, "t.jsonl")` (or `gymnasium.make(ENV_ID, ..., trace="t.jsonl")`) appends every
  step of every episode to a JSONL trace through `engine.rl.trace.TraceRecorder`, as CompilerGym's loggers
  wrap their env.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from mlir_rl_tui.engine.config import DEFAULT_LIMITS, Limits
from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError, ScheduleError
from mlir_rl_tui.engine.ir.program import Program, load_file
from mlir_rl_tui.engine.measure.measurement import Measurement
from mlir_rl_tui.engine.rl.actions import apply_vector, flat_mask, head_masks, nvec
from mlir_rl_tui.engine.rl.features import feature_size
from mlir_rl_tui.engine.rl.trace import TraceRecorder
from mlir_rl_tui.engine.schedule.notation import parse, to_text
from mlir_rl_tui.engine.session import Session

ENV_ID = "mlir_rl/Schedule-v0"
REWARDS = ("final", "immediate")
MEASURES = ("final", "never")


def _openmp() -> bool:
    """A parallel runtime (OpenMP or MLIR's async runtime) is available, so TP is not masked."""
    from mlir_rl_tui.engine.run.compile import parallel_runtime

    return parallel_runtime() is not None


class ScheduleEnv(gym.Env):
    """Schedule every linalg op of a program, one transformation (or interchange level) per step."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, program: str | Program | list[str | Program] | None = None, *, engine: Engine | None = None,
                 limits: Limits | None = None, reward: str = "final", measure: str = "final",
                 penalty: float = -1.0, render_mode: str | None = None) -> None:
        if reward not in REWARDS:
            raise EngineError(f"reward must be one of {', '.join(REWARDS)}, not {reward!r}")
        if measure not in MEASURES:
            raise EngineError(f"measure must be one of {', '.join(MEASURES)}, not {measure!r}")
        self.limits = limits or (engine.limits if engine is not None else DEFAULT_LIMITS)
        self.reward_mode = reward
        self.measure_mode = measure
        self.penalty = float(penalty)
        self.render_mode = render_mode
        self._engine = engine
        self._own_engine = False
        self._engine_lock = threading.Lock()
        self._programs = [self._load(p) for p in (program if isinstance(program, list) else [program])
                          if p is not None]
        self._openmp = engine.openmp if engine is not None else _openmp()
        self.action_space = spaces.MultiDiscrete(nvec(self.limits))
        size = 2 * feature_size(self.limits)
        big = float(np.finfo(np.float32).max)  # raw loop bounds and counts: the agent scales them
        self.observation_space = spaces.Box(-big, big, (size,), np.float32)
        self.session: Session | None = None
        self.program: Program | None = None
        self.measurement: Measurement | None = None  # the last measurement of this episode
        self._last_log = 0.0

    # ------------------------------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        """The shared engine, or one created on first use (closed by `close()`)."""
        with self._engine_lock:
            if self._engine is None:
                self._engine = Engine(limits=self.limits)
                self._own_engine = True
            return self._engine

    @staticmethod
    def _load(p: str | Program) -> Program:
        if isinstance(p, Program):
            return p
        if isinstance(p, str | os.PathLike):
            from mlir_rl_tui.engine.corpus.samples import program

            return load_file(program(str(p)))  # a file, else a shipped sample of that name
        raise EngineError(f"program must be a path or an engine.Program, not {type(p).__name__}")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if options.get("program") is not None:
            self.program = self._load(options["program"])
        elif self._programs:
            i = int(self.np_random.integers(len(self._programs))) if len(self._programs) > 1 else 0
            self.program = self._programs[i]
        elif self.program is None:
            raise EngineError("no program: pass program= to the env or options={'program': path} to reset")
        self.session = Session(self.program, limits=self.limits, openmp=self._openmp)
        self.measurement = None
        self._last_log = 0.0
        return self.session.observation(), self._info()

    def step(self, action):
        if self.session is None:
            raise EngineError("call reset() before step()")
        sess = self.session
        if sess.done:
            raise EngineError("the episode is over: call reset()")
        vec = np.asarray(action, dtype=np.int64)
        try:
            new = apply_vector(sess, vec)
        except (ScheduleError, IndexError, ValueError) as e:
            info = self._info()
            info["invalid_action"] = str(e)
            return sess.observation(), self.penalty, True, False, info
        self.session = new
        changed = to_text(new.schedule) != to_text(sess.schedule)
        reward, terminated = 0.0, new.done
        if self.measure_mode != "never" and (terminated or (self.reward_mode == "immediate" and changed)):
            m = self.measurement = self.engine.measure(self.program, new.schedule)
            if not m.ok:
                reward, terminated = self.penalty, True
            else:
                log = math.log(m.speedup) if m.speedup else 0.0
                if self.reward_mode == "immediate":
                    reward = log - self._last_log
                else:
                    reward = log
                self._last_log = log
        return new.observation(), float(reward), bool(terminated), False, self._info()

    # ------------------------------------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        sess = self.session
        assert sess is not None
        mask = sess.mask()
        info: dict[str, Any] = {
            "action_mask": flat_mask(mask, self.limits),
            "head_masks": head_masks(mask, self.limits),
            "op": sess.current.op.id if sess.current else None,
            "schedule": to_text(sess.schedule),
            "pending": list(sess.pending),
        }
        if self.measurement is not None:
            info["measurement"] = self.measurement.to_json()
            info["speedup"] = self.measurement.speedup
            info["status"] = self.measurement.status
        return info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.session is None:
            return None
        sess = self.session
        cur = sess.current.op.id if sess.current else "done"
        text = f"{self.program.path or self.program.sha256[:12]} [{cur}] {to_text(sess.schedule) or '(empty)'}"
        if self.measurement is not None:
            m = self.measurement
            text += f" -> {m.status}" + (f" {m.speedup:.2f}x" if m.speedup else "")
        return text

    def close(self) -> None:
        if self._own_engine and self._engine is not None:
            self._engine.close()
            self._engine = None
            self._own_engine = False
        super().close()


class RecordTrace(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Append each step of the wrapped ScheduleEnv to a JSONL trace (engine.rl.trace), one episode per reset.

    A step is recorded when it changes the schedule: an action, or the last level of a level-pointer
    interchange (recorded whole, with the observation and mask from before its first level). A masked
    action changes nothing and is not recorded. A step that measured carries its measurement.
    """

    def __init__(self, env: gym.Env, path: str, source: str = "policy") -> None:
        gym.utils.RecordConstructorArgs.__init__(self, path=path, source=source)  # env.spec can remake it
        gym.Wrapper.__init__(self, env)
        self.recorder = TraceRecorder(path)
        self.source = source
        self._info: dict[str, Any] = {}
        self._before: tuple = (None, None)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        self.recorder.new_episode()
        self._info, self._before = info, (obs, info["action_mask"])
        return obs, info

    def step(self, action):
        prev = self._info
        obs, reward, terminated, truncated, info = self.env.step(action)
        if info["schedule"] != prev["schedule"]:
            op = prev["op"]
            m = info.get("measurement")
            h = self.recorder.step(self.env.unwrapped.program, op, parse(info["schedule"]).actions(op)[-1],
                                   *self._before, self.source)
            self.recorder.measured(h, m if m != prev.get("measurement") else None)  # measured in this step
        if not info["pending"]:  # the next action starts here (not in the middle of an interchange)
            self._before = (obs, info["action_mask"])
        self._info = info
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self.recorder.close()
        super().close()


def make(*, trace: str | None = None, trace_source: str = "policy", **kwargs) -> gym.Env:
    """The env of `gymnasium.make(ENV_ID, **kwargs)`: a ScheduleEnv, wrapped in RecordTrace with `trace`."""
    env = ScheduleEnv(**kwargs)
    return RecordTrace(env, trace, trace_source) if trace else env


def register() -> None:
    """Register `mlir_rl/Schedule-v0` once (importing engine calls this)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="mlir_rl_tui.engine.rl.env:make")
