"""skrl's env Wrapper over a unienv VectorEnv (torch tensors on the env's device, no NumPy).

    env = SkrlVecEnv(unienv.make("inverted_pendulum", num_envs=32, seed=0))
    agent = skrl.agents.torch.ppo.PPO(models=..., memory=..., observation_space=env.observation_space,
                                      action_space=env.action_space, device=env.device, cfg=...)
    skrl.trainers.torch.SequentialTrainer(env=env, agents=agent, cfg=...).train()

skrl's own `wrap_env(env, wrapper="gymnasium")` also takes a vector env, but converts every step's
actions to NumPy and the outputs back to tensors; this adapter hands the env's tensors through.

What skrl sees:
- `observation_space` / `action_space`: one env's spaces; `num_envs`, `device`: the env's.
- `step(actions)` -> observations float32 (num_envs, obs_dim), rewards float32 (num_envs, 1),
  terminated and truncated bool (num_envs, 1), and the env's info dict (unienv's episode stats in
  info["final_info"]["episode_stats"]). The env resets itself (SAME_STEP autoreset): skrl's
  trainers carry on from the returned observations, which for a done env are its next episode's first.
- `reset()` resets every env the first time (seeded with `seed`) and afterwards returns the current
  observations, as skrl's own vector-env wrappers do.
- Actions are clipped to the action space's bounds before they reach the env (`clip_actions`),
  since skrl's Gaussian models sample unbounded actions unless told otherwise.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from gymnasium.vector import AutoresetMode
from skrl.envs.wrappers.torch.base import Wrapper

from unienv.errors import ArgumentError


class SkrlVecEnv(Wrapper):
    """skrl's Wrapper over a unienv VectorEnv with SAME_STEP autoreset; see the module docstring."""

    def __init__(self, env, clip_actions: bool = True, seed: int | None = None):
        """env: a unienv VectorEnv (or a Gymnasium VectorWrapper of one), torch outputs, SAME_STEP."""
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ArgumentError(
                f"env: expected autoreset_mode SAME_STEP (skrl's trainers need the env to reset itself), got {mode}"
            )
        super().__init__(env)
        self.clip_actions = bool(clip_actions)
        space = env.single_action_space
        self._low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
        self._high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)
        self._seed = seed
        self._observations: torch.Tensor | None = None
        self._info: dict[str, Any] = {}

    @property
    def observation_space(self) -> gym.Space:
        """One env's observation space (skrl batches it itself)."""
        return self._env.single_observation_space

    @property
    def action_space(self) -> gym.Space:
        """One env's action space."""
        return self._env.single_action_space

    def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
        """Reset every env the first time; afterwards the current observations (the env resets itself)."""
        if self._observations is None:
            observations, self._info = self._env.reset(seed=self._seed)
            self._observations = observations.to(torch.float32)
        return self._observations, self._info

    def step(self, actions: torch.Tensor):
        """Step every env with actions (num_envs, act_dim); returns obs, rewards, terminated, truncated, info."""
        if self.clip_actions:
            actions = torch.clamp(actions.to(self.device), self._low, self._high)
        observations, reward, terminated, truncated, self._info = self._env.step(actions)
        self._observations = observations.to(torch.float32)
        return (
            self._observations,
            reward.to(torch.float32).view(-1, 1),
            terminated.view(-1, 1),
            truncated.view(-1, 1),
            self._info,
        )

    def state(self) -> None:
        """No separate state space: the critic sees the observations."""
        return None

    def render(self, *args, **kwargs):
        return self._env.render()

    def close(self) -> None:
        self._env.close()
