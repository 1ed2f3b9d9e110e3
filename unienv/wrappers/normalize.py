"""Observation and reward normalisation on batched torch tensors, for CleanRL-style loops.

Gymnasium's vector `NormalizeObservation` refuses SAME_STEP autoreset (every vector observation
wrapper does), and its `NormalizeReward` keeps NumPy statistics, so neither serves a unienv env
whose outputs are torch tensors on a GPU. These two wrappers do the same job on the device:

    env = NormalizeReward(NormalizeObservation(unienv.make("ant", num_envs=256)), gamma=0.99)

- `NormalizeObservation`: obs -> (obs - mean) / sqrt(var + eps), with the running mean and
  variance over every observation seen (Chan et al.'s parallel update, in float64). In SAME_STEP
  mode the terminal observations in info["final_obs"] are normalised with the same statistics, so
  a value bootstrapped from them sees what the policy sees. The statistics are updated from the
  returned observations (the new episodes' first ones included), not from terminal ones.
- `NormalizeReward`: reward -> reward / sqrt(var(G) + eps), where G is each env's discounted
  return accumulated so far: G = gamma * G + reward, restarted at 0 after a done step, as
  OpenAI baselines' and SB3's VecNormalize do (Gymnasium's NormalizeReward also zeroes G inside a
  terminating step, so it never counts an ended episode's full return). In NEXT_STEP mode the reset
  step after a done step is left out.
  The returned episode statistics in info are left in the env's units.

Set `update_running_mean = False` to freeze the statistics (evaluation). `Normalize` is the
frozen form that a policy file holds. Both wrappers are
`gymnasium.vector.VectorWrapper`s; `.obs_rms` / `.return_rms` hold the statistics (state_dict-able).
"""

from __future__ import annotations

from typing import Any

import torch
from gymnasium.vector import AutoresetMode, VectorWrapper

from unienv.errors import ArgumentError


class RunningMeanStd(torch.nn.Module):
    """Mean and variance of a stream of batches (batch dimension first), in float64."""

    def __init__(self, shape: tuple[int, ...] = (), device: str | torch.device | None = None):
        super().__init__()
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64, device=device))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64, device=device))
        self.register_buffer("count", torch.tensor(1e-4, dtype=torch.float64, device=device))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Fold a batch (B, *shape) into the statistics."""
        batch = batch.to(torch.float64)
        n = batch.shape[0]
        if n == 0:
            return
        mean, var = batch.mean(0), batch.var(0, unbiased=False)
        delta, total = mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var.copy_((self.var * self.count + var * n + delta.square() * self.count * n / total) / total)
        self.count.fill_(float(total))


class Normalize(torch.nn.Module):
    """(x - mean) / std with fixed statistics: a normalizer frozen for a policy file (the first
    layer of a network that unienv.training.policy saves, e.g. rsl_rl's normalizer at export)."""

    def __init__(self, size: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("std", torch.ones(size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class NormalizeObservation(VectorWrapper):
    """Normalise batched torch observations to zero mean, unit variance; see the module docstring."""

    def __init__(self, env, epsilon: float = 1e-8):
        super().__init__(env)
        if epsilon <= 0:
            raise ArgumentError(f"epsilon: expected a positive float, got {epsilon!r}")
        shape = tuple(env.single_observation_space.shape)
        self.obs_rms = RunningMeanStd(shape, device=env.unwrapped.device)
        self.epsilon = epsilon
        self.update_running_mean = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        if self.update_running_mean:
            self.obs_rms.update(obs)
        return self._normalize(obs), info

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        if self.update_running_mean:
            self.obs_rms.update(obs)
        if "final_obs" in info:  # the same statistics as obs, so a bootstrap sees what the policy sees
            info = dict(info)
            info["final_obs"] = self._normalize(info["final_obs"])
        return self._normalize(obs), reward, terminated, truncated, info

    def _normalize(self, obs: torch.Tensor) -> torch.Tensor:
        scale = torch.sqrt(self.obs_rms.var + self.epsilon)
        return ((obs - self.obs_rms.mean) / scale).to(obs.dtype)


class NormalizeReward(VectorWrapper):
    """Scale batched torch rewards by the std of the discounted return; see the module docstring."""

    def __init__(self, env, gamma: float = 0.99, epsilon: float = 1e-8):
        super().__init__(env)
        if not 0.0 <= gamma <= 1.0:
            raise ArgumentError(f"gamma: expected a float in [0, 1], got {gamma!r}")
        if epsilon <= 0:
            raise ArgumentError(f"epsilon: expected a positive float, got {epsilon!r}")
        device = env.unwrapped.device
        self.return_rms = RunningMeanStd((), device=device)
        self.gamma, self.epsilon = gamma, epsilon
        self.update_running_mean = True
        self._returns = torch.zeros(env.num_envs, dtype=torch.float64, device=device)
        self._prev_done = torch.zeros(env.num_envs, dtype=torch.bool, device=device)
        self._same_step = env.metadata.get("autoreset_mode") == AutoresetMode.SAME_STEP

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._returns.zero_()
        self._prev_done.zero_()
        return self.env.reset(seed=seed, options=options)

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        # SAME_STEP: every step counts (done envs were reset inside their last step). NEXT_STEP /
        # DISABLED: the step after a done step is the reset step (reward 0) and is left out.
        active = torch.ones_like(self._prev_done) if self._same_step else ~self._prev_done
        self._returns = torch.where(
            active, self._returns * self.gamma + reward.to(torch.float64), self._returns
        )
        if self.update_running_mean and bool(active.any()):
            self.return_rms.update(self._returns[active])
        self._prev_done = terminated | truncated
        self._returns.masked_fill_(self._prev_done, 0.0)  # the next return starts from zero
        scale = torch.sqrt(self.return_rms.var + self.epsilon)
        return obs, (reward / scale).to(reward.dtype), terminated, truncated, info
