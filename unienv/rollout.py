"""Roll a policy out on a vector env and collect episode statistics (play.py's loop)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import numpy as np
import torch
from tqdm import tqdm

from unienv.envs import UniEnv
from unienv.errors import ArgumentError
from unienv.wrappers import checkpoint

Policy = Callable[[torch.Tensor], torch.Tensor]


@dataclasses.dataclass
class RolloutStats:
    """Finished episodes' returns and lengths, and how each ended."""

    returns: list[float] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)
    terminated: list[bool] = dataclasses.field(default_factory=list)
    steps: int = 0

    def summary(self) -> dict[str, float]:
        n = len(self.returns)
        return {
            "episodes": n,
            "return_mean": float(np.mean(self.returns)) if n else float("nan"),
            "return_std": float(np.std(self.returns)) if n else float("nan"),
            "length_mean": float(np.mean(self.lengths)) if n else float("nan"),
            "termination_rate": float(np.mean(self.terminated)) if n else float("nan"),
        }


def make_policy(spec: str, env: UniEnv) -> Policy:
    """ "zero", "random" (uniform in the action space), or a path to a saved torch policy.

    A path is a policy file from train.py (unienv.wrappers.checkpoint: refused, naming each
    difference, unless its task, options and observation/action layout match env's), a
    TorchScript module, or a pickled nn.Module.
    """
    low = torch.as_tensor(env.single_action_space.low, device=env.device)
    high = torch.as_tensor(env.single_action_space.high, device=env.device)
    shape = (env.num_envs, *env.single_action_space.shape)
    if spec == "zero":
        return lambda obs: torch.zeros(shape, device=env.device)
    if spec == "random":
        generator = torch.Generator(device=env.device).manual_seed(0)
        return lambda obs: low + (high - low) * torch.rand(shape, generator=generator, device=env.device)
    if not os.path.isfile(str(spec)):
        raise ArgumentError(f"policy: expected 'zero', 'random' or a path to a saved policy, got {spec!r}")
    if checkpoint.is_policy_file(spec):
        module, meta = checkpoint.load_policy(spec, device=env.device)
        checkpoint.check_layout(meta, env, path=spec)
        return _no_grad(module)
    try:
        module = torch.jit.load(spec, map_location=env.device)
    except RuntimeError:
        module = torch.load(spec, map_location=env.device, weights_only=False)
    module.eval()
    return _no_grad(module)


def _no_grad(module: Callable[[torch.Tensor], torch.Tensor]) -> Policy:
    def policy(obs: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return module(obs.float())

    return policy


def rollout(
    env: UniEnv,
    policy: Policy,
    steps: int,
    *,
    seed: int | None = None,
    on_frame: Callable[[tuple[np.ndarray, ...]], None] | None = None,
    on_step: Callable[[torch.Tensor, dict], None] | None = None,
    progress: bool = True,
) -> RolloutStats:
    """Step env `steps` times under policy (SAME_STEP autoreset); frames go to on_frame, and
    each step's observation and info to on_step (e.g. to measure something along the way)."""
    stats = RolloutStats()
    obs, _ = env.reset(seed=seed)
    if on_frame is not None:
        on_frame(env.render())
    for _ in tqdm(range(steps), desc=f"{env.task.name} x{env.num_envs}", disable=not progress, unit="step"):
        obs, _, terminated, _, info = env.step(policy(obs))
        stats.steps += 1
        if on_step is not None:
            on_step(obs, info)
        if "final_info" in info:
            done = info["_final_info"].cpu().numpy()
            episode = info["final_info"]["episode_stats"]
            stats.returns += episode["r"].cpu().numpy()[done].tolist()
            stats.lengths += episode["l"].cpu().numpy()[done].tolist()
            stats.terminated += terminated.cpu().numpy()[done].tolist()
        if on_frame is not None:
            on_frame(env.render())
    return stats
