"""The Task contract: what a task declares and the batched functions it implements.

A task is written once for every backend. It names its scene (MJCF), its
timing (`sim_dt`, `decimation` physics steps per env step, episode length) and
its single-env spaces, and implements over batched torch tensors:

    setup(backend)                 resolve ids and cache constants, once
    action_to_ctrl(action)         (N, act_dim) -> (N, nu) actuator inputs
    observe(backend)               -> (N, obs_dim)
    reward(backend, action)        -> (total (N,), {term name: (N,)})
    terminated(backend)            -> (N,) bool
    reset_state(env_ids, rng)      -> qpos (n, nq), qvel (n, nv) for those envs

`rng` is a `unienv.random.Sampler` bound to the envs being reset: what env i
samples depends only on its own seed and draws. A task never imports an engine.
"""

from __future__ import annotations

import abc
from typing import Any

import gymnasium as gym
import torch

from unienv.backends.base import SimBackend
from unienv.random import Sampler


class Task(abc.ABC):
    """Base class of tasks; subclasses set the class attributes and implement the methods."""

    name: str  # lower-case, as on the command line
    scene: str  # MJCF path
    sim_dt: float
    decimation: int
    episode_length_s: float
    single_action_space: gym.spaces.Box
    single_observation_space: gym.spaces.Box
    # backend capabilities the task needs (Capabilities field names); UniEnv checks them
    # before setup, so a task fails at construction on a backend that lacks one
    requires: tuple[str, ...] = ()
    # free camera for videos: lookat (or a body to track), distance, azimuth, elevation
    camera: dict[str, Any] = {"distance": 4.0, "azimuth": 90.0, "elevation": -20.0, "lookat": (0.0, 0.0, 0.5)}

    @property
    def dt(self) -> float:
        """Seconds of simulated time per env step."""
        return self.sim_dt * self.decimation

    @property
    def max_episode_steps(self) -> int:
        return round(self.episode_length_s / self.dt)

    @abc.abstractmethod
    def setup(self, backend: SimBackend) -> None: ...

    @abc.abstractmethod
    def action_to_ctrl(self, action: torch.Tensor) -> torch.Tensor: ...

    @abc.abstractmethod
    def observe(self, backend: SimBackend) -> torch.Tensor: ...

    @abc.abstractmethod
    def reward(
        self, backend: SimBackend, action: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]: ...

    @abc.abstractmethod
    def terminated(self, backend: SimBackend) -> torch.Tensor: ...

    @abc.abstractmethod
    def reset_state(self, env_ids: torch.Tensor, rng: Sampler) -> tuple[torch.Tensor, torch.Tensor]: ...
