"""The env's other forms: NumPy in and out for NumPy-based RL code, and one env as a
plain `gymnasium.Env` (what `gymnasium.make("unienv/<Task>-v0")` returns)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorWrapper

from unienv.errors import ArgumentError
from unienv.utils.arrays import to_numpy


class NumpyEnv(VectorWrapper):
    """A UniEnv with NumPy inputs and outputs (arrays on the host), infos included."""

    def step(self, actions):
        return tuple(to_numpy(x) for x in self.env.step(torch.as_tensor(np.asarray(actions))))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return tuple(to_numpy(x) for x in self.env.reset(seed=seed, options=options))


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
        self._step = vector_env._step_one if vector_env._steps_as_one else vector_env._step_arrays

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
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


def _host(x) -> np.ndarray:
    """x as a NumPy array on the host (as it is if it is one)."""
    return x if x.__class__ is np.ndarray else x.cpu().numpy()
