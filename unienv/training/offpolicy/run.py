"""train.py's run with the off-policy learner (a preset with `train.learner`): build the env,
learn (unienv.training.offpolicy.loop), write metrics.json, the learning curve and the policy
file, then evaluate that file on fresh envs as the PPO run does.

One process: the learner is meant for few cores and few samples (a laptop), or one GPU at
thousands of envs; under torchrun it is refused (rsl_rl's PPO is the data-parallel learner)."""

from __future__ import annotations

import dataclasses
import os
import sys

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

import unienv
from unienv.errors import ArgumentError
from unienv.training.checkpoint import load_checkpoint
from unienv.training.config import checked_minutes, env_options, process_group, write_json
from unienv.training.evaluation import evaluate
from unienv.training.offpolicy.learner import LearnerConfig
from unienv.training.offpolicy.loop import LoopConfig, OffPolicyRun
from unienv.training.offpolicy.networks import exportable_actor
from unienv.training.policy import save_policy
from unienv.training.signals import StopSignal
from unienv.utils import files, plots


def configs(cfg: DictConfig) -> tuple[LearnerConfig, LoopConfig]:
    """train.learner and train.loop as their dataclasses; an unknown key is refused by name."""
    out = []
    for key, cls in (("learner", LearnerConfig), ("loop", LoopConfig)):
        given = OmegaConf.to_container(cfg.train.get(key) or {}, resolve=True)
        known = {f.name for f in dataclasses.fields(cls)}
        for name in given:
            if name not in known:
                from unienv.errors import unknown_name

                raise unknown_name(f"option of train.{key}", name, known)
        out.append(cls(**given))
    return out[0], out[1]


def train_offpolicy(cfg: DictConfig, on_env=None) -> None:
    """The run: envs, learner, resume, learning, then the files and the evaluation."""
    rank, _, world = process_group()
    if world > 1:
        raise ArgumentError(
            f"train.learner: the off-policy learner runs in one process, got {world} under torchrun "
            "(use a PPO preset for data-parallel training)"
        )
    learner_cfg, loop_cfg = configs(cfg)
    minutes = checked_minutes(cfg.train.checkpoint_minutes)
    checkpoint = load_checkpoint(hydra.utils.to_absolute_path(cfg.train.resume)) if cfg.train.resume else None
    task, backend, task_options, backend_options = env_options(cfg)
    if cfg.torch_threads is not None:
        torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    env = unienv.make(
        task,
        backend=backend,
        num_envs=cfg.num_envs,
        device=cfg.device,
        seed=cfg.seed,
        dr=cfg.dr,
        task_options=task_options,
        backend_options=backend_options,
    )
    run_dir = hydra.core.hydra_config.HydraConfig.get().runtime.output_dir
    files.take_folder(run_dir)  # held until the process ends: a second run into this folder is refused
    metrics_path = hydra.utils.to_absolute_path(
        cfg.train.metrics_path or os.path.join(run_dir, "metrics.json")
    )
    os.makedirs(os.path.dirname(metrics_path), exist_ok=True)
    metrics = {
        "task": task, "backend": backend, "device": str(env.device), "num_envs": cfg.num_envs,
        "processes": 1, "seed": cfg.seed, "learner": dataclasses.asdict(learner_cfg),
        "loop": dataclasses.asdict(loop_cfg), "max_seconds": cfg.train.max_seconds,
    }  # fmt: skip
    watcher = on_env(env) if on_env is not None else None
    viewer_policy = os.path.join(run_dir, "viewer_policy.safetensors")
    stop = StopSignal()

    def after_row() -> None:
        """metrics.json rewritten; where the viewer's page asked for it, the policy as it is now."""
        write_json(metrics_path, metrics)
        if watcher is not None and watcher.wants_policy():
            save_policy(viewer_policy, exportable_actor(run.learner.actor), env, backend=backend)
            watcher.play(viewer_policy, f"{run.env_steps:,} env steps")

    run = OffPolicyRun(
        env, loop_cfg, learner_cfg, cfg.seed, run_dir, max_seconds=cfg.train.max_seconds,
        checkpoint_seconds=None if minutes is None else 60.0 * minutes, on_row=after_row, stop=stop,
    )  # fmt: skip
    run.run_identity = {
        "task": task, "task_options": OmegaConf.to_container(cfg.task, resolve=True), "backend": backend,
        "dr": OmegaConf.to_container(cfg.dr, resolve=True) if cfg.dr is not None else None,
        "num_envs": cfg.num_envs, "seed": cfg.seed, "learner": dataclasses.asdict(learner_cfg),
        "buffer_size": loop_cfg.buffer_size,
    }  # fmt: skip
    metrics["curve"] = run.curve
    if checkpoint is not None:
        path, state = checkpoint
        run.restore(path, state)
        metrics["resumed"] = {"checkpoint": path, "env_steps": run.env_steps, "seconds": run._seconds_before}
        left = (
            ""
            if cfg.train.max_seconds is None
            else f", {cfg.train.max_seconds - run._seconds_before:.0f} s of train.max_seconds left"
        )
        print(f"resumed {path}: {run.env_steps:,} of {loop_cfg.env_steps:,} env steps done{left}", flush=True)
        if cfg.train.max_seconds is not None and run._seconds_before >= cfg.train.max_seconds:
            raise ArgumentError(
                f"train.max_seconds: the run has trained {run._seconds_before:.0f} s, its budget is "
                f"{cfg.train.max_seconds} s (it counts the whole run); raise it to train on"
            )
    try:
        run.learn()
    finally:
        stop.restore()
        if watcher is not None:
            watcher.close()
    env.close()
    finish(cfg, run, metrics, metrics_path, run_dir, env, learner_cfg)
    if stop.received is not None:
        sys.exit(128 + stop.received)


def finish(cfg, run, metrics, metrics_path, run_dir, env, learner_cfg) -> None:
    """After training: the summary, metrics.json, the learning curve, the policy file and (unless a
    signal stopped the run) its evaluation."""
    task, backend = metrics["task"], metrics["backend"]
    last = {
        "env_steps": run.env_steps,
        "seconds": run.seconds,
        "mean_return": run.curve[-1]["mean_return"] if run.curve else None,
    }
    done = last["env_steps"] - metrics.get("resumed", {}).get("env_steps", 0)
    this = last["seconds"] - metrics.get("resumed", {}).get("seconds", 0.0)
    here = f" ({done:,} of the env steps in this process)" if "resumed" in metrics else ""
    print(
        f"trained {task} on {backend} x{cfg.num_envs} envs with {learner_cfg.algorithm}: {last['env_steps']:,} env "
        f"steps and {run.learner.updates:,} updates in all{here}, {this:.1f} s in this process "
        f"({done / max(this, 1e-9):.0f} steps/s)"
    )
    metrics["summary"] = {
        "env_steps": last["env_steps"], "updates": run.learner.updates, "train_seconds": last["seconds"],
        "stopped_by": run.stopped_by, "mean_return": last["mean_return"],
    }  # fmt: skip
    write_json(metrics_path, metrics)
    curve = os.path.join(os.path.dirname(metrics_path), "learning_curve.png")
    title = f"{learner_cfg.algorithm} on {task} ({backend}, {cfg.num_envs} envs)"
    if plots.learning_curve(run.curve, curve, title) is not None:
        print(f"learning curve: {curve}")
    path = hydra.utils.to_absolute_path(cfg.train.policy_path or os.path.join(run_dir, "policy.safetensors"))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    info = {
        "library": f"unienv {learner_cfg.algorithm}", "env_steps": last["env_steps"], "updates": run.learner.updates,
        "num_envs": cfg.num_envs, "seed": cfg.seed, "train_seconds": round(last["seconds"], 1),
    }  # fmt: skip
    save_policy(path, exportable_actor(run.learner.actor), env, backend=backend, info=info)
    print(f"policy: {path}")
    metrics["policy"] = path
    if run.stopped_by != "signal":
        metrics["eval"] = evaluate(cfg, str(env.device), path)
    write_json(metrics_path, metrics)
    print(f"metrics: {metrics_path}")
    if run.stopped_by != "env_steps":
        print(f"resume with: python train.py train.resume={run_dir} (and this run's other options)")
