"""Roll a policy out on a vector env and collect episode statistics (play.py's loop)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable

import numpy as np
import torch
from tqdm import tqdm

from unienv.deploy.contract import differences_from_env
from unienv.env import UniEnv
from unienv.errors import ArgumentError
from unienv.training import policy as checkpoint

Policy = Callable[[torch.Tensor], torch.Tensor]


@dataclasses.dataclass
class RolloutStats:
    """Finished episodes' returns and lengths, how each ended, and their means of the task's
    metrics (`Task.metrics`, the episode stats beyond r, l, t)."""

    returns: list[float] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)
    terminated: list[bool] = dataclasses.field(default_factory=list)
    metrics: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    steps: int = 0

    def summary(self) -> dict[str, float]:
        """Episodes ended, mean and std of their returns, mean length, share terminated, and each
        metric's mean over the episodes as "<name>_mean" (nan: none ended)."""
        n = len(self.returns)
        return {
            "episodes": n,
            "return_mean": float(np.mean(self.returns)) if n else float("nan"),
            "return_std": float(np.std(self.returns)) if n else float("nan"),
            "length_mean": float(np.mean(self.lengths)) if n else float("nan"),
            "termination_rate": float(np.mean(self.terminated)) if n else float("nan"),
            **{f"{k}_mean": float(np.mean(v)) if n else float("nan") for k, v in self.metrics.items()},
        }

    def metrics_text(self) -> str:
        """ ", name mean" for each task metric, to end a summary line ("" for a task with none)."""
        return "".join(f", {k} {np.mean(v):.3f}" for k, v in self.metrics.items() if v)


def make_policy(spec: str, env: UniEnv) -> Policy:
    """ "zero", "random" (uniform in the action space), or a path to a policy file.

    A policy file comes from train.py or unienv.training.policy.save_policy: tensors and JSON,
    never unpickled (a pickle, TorchScript or torch.export file is refused, since loading one can
    run code). A `.onnx` file written by `unienv export` runs in onnxruntime, with no torch model
    involved (unienv.training.export). Either is refused, naming each difference, unless its task, options and
    observation/action layout match env's, and then, naming the first, unless its deployment
    contract (unienv.deploy.contract) does.
    """
    low = torch.as_tensor(env.single_action_space.low, device=env.device)
    high = torch.as_tensor(env.single_action_space.high, device=env.device)
    shape = (env.num_envs, *env.single_action_space.shape)
    if spec == "zero":
        return lambda obs: torch.zeros(shape, device=env.device)
    if spec == "random":
        generator = torch.Generator(device=env.device).manual_seed(0)
        return lambda obs: low + (high - low) * torch.rand(shape, generator=generator, device=env.device)
    if not isinstance(spec, (str, os.PathLike)) or not os.path.isfile(spec):
        raise ArgumentError(
            f"policy: expected 'zero', 'random' or the path of a policy file, got {spec!r} (file not found)"
        )
    if str(spec).endswith(".onnx"):
        from unienv.training.export import load_onnx_policy

        policy, meta = load_onnx_policy(str(spec), device=env.device)
        _check(meta, env, str(spec))
        return policy
    module, meta = checkpoint.load_policy(str(spec), device=env.device)
    _check(meta, env, str(spec))
    return _no_grad(module)


def _check(meta: dict, env: UniEnv, path: str) -> None:
    """The layout, then the deployment contract (robot, gains, timing, observation blocks):
    a policy that differs is refused, naming the first difference."""
    checkpoint.check_layout(meta, env, path=path)
    found = differences_from_env(meta, env)
    if found:
        raise ArgumentError(
            f"policy: {path}: its deployment contract differs from this env's ({len(found)} "
            f"difference{'s' if len(found) > 1 else ''}), first {found[0]}"
        )


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
    frame_every: int = 1,
    on_step: Callable[[torch.Tensor, dict, torch.Tensor], None] | None = None,
    progress: bool = True,
) -> RolloutStats:
    """Step env `steps` times under policy (SAME_STEP autoreset). The frames of the reset and of
    every frame_every-th step go to on_frame; each step's observation, info and terminated flags
    to on_step (e.g. to measure something along the way)."""
    if isinstance(frame_every, bool) or not isinstance(frame_every, int) or frame_every < 1:
        raise ArgumentError(f"frame_every: expected an int >= 1, got {frame_every!r}")
    stats = RolloutStats()
    obs, _ = env.reset(seed=seed)
    if on_frame is not None:
        on_frame(env.render())
    # tqdm's bar on stderr; where that is not a terminal (a log, CI, a sweep's workers) it is
    # redrawn at most once a minute, so that a run writes a few lines rather than one per step
    interval = 0.1 if sys.stderr.isatty() else 60.0
    desc = f"{env.task.name} x{env.num_envs}"
    for step in tqdm(range(steps), desc, unit="step", disable=not progress, mininterval=interval):
        obs, _, terminated, _, info = env.step(policy(obs))
        stats.steps += 1
        if on_step is not None:
            on_step(obs, info, terminated)
        if "final_info" in info:
            done = info["_final_info"].cpu().numpy()
            episode = info["final_info"]["episode_stats"]
            stats.returns += episode["r"].cpu().numpy()[done].tolist()
            stats.lengths += episode["l"].cpu().numpy()[done].tolist()
            stats.terminated += terminated.cpu().numpy()[done].tolist()
            for name in episode.keys() - {"r", "l", "t"}:
                stats.metrics.setdefault(name, []).extend(episode[name].cpu().numpy()[done].tolist())
        if on_frame is not None and (step + 1) % frame_every == 0:
            on_frame(env.render())
    return stats
