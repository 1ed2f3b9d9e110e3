"""Stable-Baselines3's VecEnv over a unienv VectorEnv (NumPy arrays on the host).

    venv = Sb3VecEnv(unienv.make("cartpole", num_envs=8, seed=0))
    stable_baselines3.PPO("MlpPolicy", venv).learn(10_000)

What SB3 sees, as with its own DummyVecEnv + Monitor:
- observations (num_envs, *obs_shape) in the observation space's dtype; rewards float32
  (num_envs,); dones bool (num_envs,) = terminated | truncated; the env resets itself (SAME_STEP),
  so the observation of a done env is its next episode's first.
- infos, a list of one dict per env. A done env's dict holds `terminal_observation` (its last
  observation), `TimeLimit.truncated` (True when the time limit ended it, not a terminal state)
  and `episode` = {"r", "l", "t"} as SB3's Monitor writes it, so SB3 logs ep_rew_mean and
  ep_len_mean. Other envs' dicts are empty.
- `seed(s)` takes effect at the next `reset()`: env i is seeded s + i, as unienv seeds it.

Invariant: one SB3 step is one env step, with no extra copy of the env's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices

from unienv.env.forms import numpy_step
from unienv.errors import ArgumentError


def _numpy(x) -> np.ndarray:
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


class Sb3VecEnv(VecEnv):
    """SB3's VecEnv over a unienv VectorEnv with SAME_STEP autoreset; see the module docstring."""

    def __init__(self, env):
        """env: a unienv VectorEnv (or a Gymnasium VectorWrapper of one), SAME_STEP autoreset."""
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ArgumentError(
                f"env: expected autoreset_mode SAME_STEP (SB3 needs the env to reset itself), got {mode}"
            )
        self.env = env
        self._obs_dtype = env.single_observation_space.dtype
        self._actions: np.ndarray | None = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

    # ---- the stepping API -------------------------------------------------------------

    def reset(self) -> np.ndarray:
        """Reset every env (seeded by a preceding seed() call, once); returns the observations."""
        seed = self._seeds[0]
        obs, _ = self.env.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return _numpy(obs).astype(self._obs_dtype, copy=False)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        """Step with the actions given to step_async; returns (obs, rewards, dones, infos)."""
        if self._actions is None:
            raise ArgumentError("actions: step_wait() called without a step_async(actions) before it")
        actions = np.asarray(self._actions, dtype=self.action_space.dtype)
        if actions.shape != (self.num_envs, *self.action_space.shape):  # a transposed array too
            raise ArgumentError(
                f"actions: expected shape {(self.num_envs, *self.action_space.shape)}, got {actions.shape}"
            )
        self._actions = None
        obs, reward, terminated, truncated, info = numpy_step(self.env, actions)  # NumPy in and out
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            final_obs = info["final_obs"].astype(self._obs_dtype, copy=False)
            episode = info["final_info"]["episode_stats"]
            for i in np.flatnonzero(dones):
                infos[i] = {
                    "terminal_observation": final_obs[i],
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "episode": {
                        "r": float(episode["r"][i]),
                        "l": int(episode["l"][i]),
                        "t": float(episode["t"][i]),
                    },
                }
        return (
            obs.astype(self._obs_dtype, copy=False),
            reward.astype(np.float32),
            dones,
            infos,
        )

    def close(self) -> None:
        self.env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Frames of the envs the unienv env renders (its render_env_ids), if render_mode is set."""
        frames = self.env.render()
        return [] if frames is None else list(frames)

    # ---- attribute access (one batched env: every index sees the same object) -------------

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self.env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if len(self._indices(indices)) != self.num_envs:
            raise ArgumentError(
                f"indices: the {self.num_envs} envs share one batched env; set an attribute for all"
            )
        setattr(self.env, attr_name, value)

    def env_method(
        self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        if len(self._indices(indices)) != self.num_envs:
            raise ArgumentError(
                f"indices: the {self.num_envs} envs share one batched env; call a method on all"
            )
        return [getattr(self.env, method_name)(*method_args, **method_kwargs)] * self.num_envs

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)
