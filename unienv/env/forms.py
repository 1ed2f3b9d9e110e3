"""The env's other forms: NumPy in and out for NumPy-based RL code, and one env as a
plain `gymnasium.Env` (what `gymnasium.make("unienv/<Task>-v0")` returns)."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorWrapper

from unienv.env.vector import UniEnv, end_diverged, record_success
from unienv.errors import ArgumentError
from unienv.utils.arrays import to_numpy


class NumpyEnv(VectorWrapper):
    """A UniEnv with NumPy inputs and outputs (arrays on the host), infos included."""

    def step(self, actions):
        return numpy_step(self.env, actions)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return tuple(to_numpy(x) for x in self.env.reset(seed=seed, options=options))


def numpy_step(env, actions) -> tuple:
    """`env.step` with NumPy actions and outputs (infos included). A UniEnv steps in its own
    arrays, which on the CPU engine with a NumPy task are NumPy: no torch round trip in or out
    (a third of the step at one env, measured); a wrapper of one steps through torch."""
    actions = np.asarray(actions)
    if isinstance(env, UniEnv):
        return tuple(to_numpy(x) for x in env._step_arrays(actions))
    return tuple(to_numpy(x) for x in env.step(torch.as_tensor(actions)))


def numpy_env(env) -> NumpyEnv:
    """`env` with NumPy in and out, for NumPy RL code and Gymnasium's vector wrappers: actions
    are taken as arrays, observations, rewards, flags and infos come back as host arrays."""
    return NumpyEnv(env)


class SingleEnv(gym.Env):
    """One env of a task as a plain `gymnasium.Env` with NumPy outputs."""

    def __init__(self, vector_env):
        if vector_env.num_envs != 1:
            raise ArgumentError(f"vector_env: expected num_envs=1, got {vector_env.num_envs}")
        if vector_env.metadata["autoreset_mode"] != AutoresetMode.DISABLED:
            raise ArgumentError("vector_env: expected autoreset_mode=DISABLED")
        self.vector_env = vector_env
        self.action_space = vector_env.single_action_space
        self.observation_space = vector_env.single_observation_space
        self.render_mode = vector_env.render_mode
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": vector_env.metadata["render_fps"]}
        # the vector env's outputs in the task's namespace (NumPy on the CPU engine, where a
        # torch round trip would cost more than a small model's physics), by its one-env step
        # where it has one
        self._as_one = steps_as_one(vector_env)
        self._step = functools.partial(step_one, vector_env) if self._as_one else vector_env._step_arrays

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if self._as_one:  # state observations in the task's namespace: no observer, no tensor
            return _host(self.vector_env._reset_arrays(seed, options)[0]), {}
        obs, info = self.vector_env.reset(seed=seed, options=options)
        return obs[0].cpu().numpy(), {}

    def step(self, action):
        action = np.asarray(action, dtype=self.action_space.dtype)[None]
        obs, reward, terminated, truncated, info = self._step(action)  # the vector env's checks
        single = {k: float(v[0]) for k, v in info["reward_terms"].items()}
        if "is_success" in info:
            single["is_success"] = bool(info["is_success"][0])
        return _host(obs[0]), float(reward[0]), bool(terminated[0]), bool(truncated[0]), single

    def render(self):
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def close(self):
        self.vector_env.close()


def steps_as_one(env: UniEnv) -> bool:
    """Whether `step_one` serves this env: one env on the CPU engine with a NumPy task, state
    observations, no DR and no action repeat (what `gymnasium.make` builds)."""
    return (
        env.num_envs == 1
        and env._path.namespace == "numpy"
        and env.dr is None
        and env.action_repeat == 1
        and env._observer.single_observation_space is None
    )


def step_one(env: UniEnv, actions):
    """`UniEnv._step` for the single env (where `steps_as_one`): the same physics and the
    task's same calls in the same order, so the same outputs bit for bit, without what only a
    vector of envs needs: the episode sums and stats (a single env's caller keeps its own) and
    the autoreset (a single env has none). The task's arrays are (1, ...)."""
    path, task, xp = env._path, env.task, env._xp
    actions, info = path.checked_actions(env._checked_actions(actions))
    before, memory = env._reading, env._memory
    ctrl = task.control(actions, before, memory)
    path.physics_step(ctrl, env._pending_reset)
    env._midway = True
    reading = task.read(path.reader)
    reward, terms = task.reward(reading, before, actions, memory)
    terminated = task.terminated(reading, memory)
    env._memory = memory = task.remember(reading, actions, memory)
    env._reading = reading
    record_success(task, reading, memory, info, env._everyone)
    env._length += 1
    truncated = env._length >= env.max_episode_steps
    obs = xp.astype(task.observe(reading, memory), env._obs_dtype)
    obs, reward, terms, truncated = end_diverged(xp, path.diverged(), obs, reward, terms, truncated, info)
    info["reward_terms"] = terms
    env._midway = False
    return obs, reward, terminated, truncated, info


def _host(x) -> np.ndarray:
    """x as a NumPy array on the host (as it is if it is one)."""
    return x if x.__class__ is np.ndarray else x.cpu().numpy()
