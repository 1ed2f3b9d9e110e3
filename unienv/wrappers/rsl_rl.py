"""rsl_rl's VecEnv over a unienv VectorEnv (torch tensors on the env's device).

    vec = RslRlVecEnv(unienv.make("cartpole", num_envs=64, seed=0))
    runner = rsl_rl.runners.OnPolicyRunner(vec, train_cfg, log_dir, device=vec.device)

What rsl_rl sees:
- `get_observations()` and `step()` give a TensorDict with one group, "policy" (num_envs, obs_dim),
  float32; the runner's `obs_groups` maps "actor" and "critic" to it.
- `step(actions) -> (obs, rewards, dones, extras)`: rewards float32 (num_envs,), dones
  terminated | truncated (num_envs,), `extras["time_outs"]` the envs truncated by the time limit
  (and not terminated), so PPO bootstraps them; the env resets itself (SAME_STEP autoreset), so
  the returned obs of a done env is its new episode's first.
- `extras["episode"]` holds, for the envs whose episode ended in this step, one value per env:
  "Episode/return", "Episode/length" (steps), "Episode/time_out" (1 if truncated) and
  "Episode_Reward/<term>" (the episode's sum of each of the task's reward terms). rsl_rl's
  logger averages them over the episodes of an iteration and writes them to TensorBoard.
- Actions are clipped to the action space's bounds before they reach the env (`clip_actions`),
  since rsl_rl's Gaussian policy samples unbounded actions.
- `episode_length_buf` is the env's per-env step counter; rsl_rl writes it once when asked to
  start episodes at random lengths (`learn(init_at_random_ep_len=True)`).

Invariant: the adapter adds no state of its own to the trajectory; it reads the env's outputs and
converts them, so a seeded run gives the same transitions as the env driven directly.
"""

from __future__ import annotations

import torch
from gymnasium.vector import AutoresetMode
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from unienv.errors import ArgumentError
from unienv.wrappers.normalize import Normalize


class RslRlVecEnv(VecEnv):
    """rsl_rl's VecEnv over a unienv VectorEnv with SAME_STEP autoreset; see the module docstring."""

    def __init__(self, env, clip_actions: bool = True, seed: int | None = None):
        """env: a unienv VectorEnv (or a wrapper of one) with torch outputs and SAME_STEP autoreset.

        clip_actions: clip actions to the action space's bounds; seed: seed of the first reset.
        """
        mode = env.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ArgumentError(
                f"env: expected autoreset_mode SAME_STEP (rsl_rl needs the env to reset itself), got {mode}"
            )
        space = env.single_action_space
        if len(space.shape) != 1 or len(env.single_observation_space.shape) != 1:
            raise ArgumentError(
                f"env: expected flat observation and action spaces, got {env.single_observation_space} and {space}"
            )
        self.env = env
        self.unwrapped = env.unwrapped
        self.num_envs = env.num_envs
        self.num_actions = int(space.shape[0])
        self.device = str(self.unwrapped.device)
        self.max_episode_length = int(self.unwrapped.max_episode_steps)
        self.cfg = {"task": self.unwrapped.task.name, "num_envs": self.num_envs}
        self.clip_actions = bool(clip_actions)
        self._low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
        self._high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)
        self._term_sums: dict[str, torch.Tensor] = {}
        obs, _ = env.reset(seed=seed)
        self._obs = self._wrap(obs)

    @property
    def episode_length_buf(self) -> torch.Tensor:
        """Steps taken in each env's current episode (num_envs,) int64; writable."""
        return self.unwrapped.episode_length

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        length = self.unwrapped.episode_length
        length.copy_(
            torch.as_tensor(value, device=length.device)
            .to(length.dtype)
            .clamp_(0, self.max_episode_length - 1)
        )

    def get_observations(self) -> TensorDict:
        """The current observations: a TensorDict with the group "policy" (num_envs, obs_dim)."""
        return self._obs

    def reset(self) -> TensorDict:
        """Reset every env (the runner never needs this: the env resets itself)."""
        obs, _ = self.env.reset()
        self._obs = self._wrap(obs)
        self._term_sums.clear()
        return self._obs

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """Step every env with actions (num_envs, num_actions); returns (obs, rewards, dones, extras)."""
        if self.clip_actions:
            actions = torch.clamp(actions.to(self.device), self._low, self._high)
        obs, reward, terminated, truncated, info = self.env.step(actions)
        done = terminated | truncated
        terms = info.get("reward_terms", {})
        for name, value in terms.items():
            total = self._term_sums.get(name)
            self._term_sums[name] = value.double() if total is None else total + value
        extras = {"time_outs": truncated & ~terminated, "episode": {}}
        if "final_info" in info:
            extras["episode"] = self._episode_extras(
                info["final_info"]["episode_stats"], done, truncated & ~terminated
            )
        for total in self._term_sums.values():
            total.masked_fill_(done, 0.0)
        self._obs = self._wrap(obs)
        return self._obs, reward.to(torch.float32), done, extras

    def close(self) -> None:
        """Close the wrapped env."""
        self.env.close()

    def _episode_extras(self, episode: dict, done: torch.Tensor, time_out: torch.Tensor) -> dict:
        """One value per ended episode for rsl_rl's logger (it concatenates and averages them)."""
        extras = {
            "Episode/return": episode["r"][done].float(),
            "Episode/length": episode["l"][done].float(),
            "Episode/time_out": time_out[done].float(),
        }
        for name, total in self._term_sums.items():
            extras[f"Episode_Reward/{name}"] = total[done].float()
        curriculum = getattr(self.unwrapped.task, "curriculum", None)
        if curriculum is not None:  # a terrain task: the levels the ended episodes' envs move to
            levels = torch.as_tensor(curriculum.levels, device=done.device)  # NumPy on the CPU engine
            extras["Curriculum/terrain_level"] = levels[done].float()
        return extras

    def _wrap(self, obs: torch.Tensor) -> TensorDict:
        return TensorDict({"policy": obs.to(torch.float32)}, batch_size=[self.num_envs], device=self.device)


def exportable_actor(runner) -> torch.nn.Sequential:
    """The runner's deterministic actor (observation normalizer, MLP, Gaussian mean) as a plain
    torch.nn.Sequential that unienv.training.policy.save_policy can write as tensors and JSON."""
    model = runner.get_inference_policy(device="cpu").as_jit()
    if type(model.deterministic_output).__name__ != "_IdentityDeterministicOutput":
        raise ArgumentError(
            f"runner: expected a Gaussian actor (its mean is the action), got {type(model.deterministic_output).__name__}"
        )
    layers = list(model.mlp)
    norm = model.obs_normalizer
    if not isinstance(norm, torch.nn.Identity):  # rsl_rl's EmpiricalNormalization: (x - mean) / (std + eps)
        frozen = Normalize(norm._mean.numel())
        frozen.mean.copy_(norm._mean.flatten())
        frozen.std.copy_(norm._std.flatten() + norm.eps)
        layers.insert(0, frozen)
    return torch.nn.Sequential(*layers)
