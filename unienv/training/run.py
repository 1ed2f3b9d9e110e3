"""train.py's run (`train(cfg)`): build the envs, train with rsl_rl's PPO (`runner`), write the
metrics, the learning curve and the policy file, then evaluate that file on fresh envs. A preset
with `train.learner` trains with the off-policy learner instead (unienv.training.offpolicy.run),
which needs no rsl_rl: this module imports rsl_rl only for PPO."""

from __future__ import annotations

import os
import sys
import time

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

import unienv
from unienv.errors import ArgumentError
from unienv.training.checkpoint import load_checkpoint
from unienv.training.config import checked_minutes, env_options, process_group, write_json
from unienv.training.distributed import check_timeout
from unienv.training.evaluation import evaluate
from unienv.training.policy import save_policy
from unienv.training.signals import StopSignal
from unienv.utils import files, plots
from unienv.utils.numbers import finite_or_none as _number


def train(cfg: DictConfig, on_env=None) -> None:
    """train.py's run: the envs, the runner, resume, learning, then the files and the evaluation.
    on_env(env), where given, is called once the envs are built and returns the viewer's watcher
    (train.py's viewer=web: unienv.viewer.live.Watch), closed when training ends."""
    if cfg.train.get("learner") is not None:
        from unienv.training.offpolicy.run import train_offpolicy

        return train_offpolicy(cfg, on_env)
    from unienv.training import runner as runner_module
    from unienv.wrappers.rsl_rl import RslRlVecEnv, exportable_actor

    rank, local_rank, world = process_group()
    max_seconds, resume = cfg.train.max_seconds, cfg.train.resume
    timeout_s = check_timeout(cfg.distributed.timeout_s)
    minutes = checked_minutes(cfg.train.checkpoint_minutes)
    checkpoint = load_checkpoint(hydra.utils.to_absolute_path(resume)) if resume is not None else None
    task, backend, task_options, backend_options = env_options(cfg)
    device = cfg.device
    if world > 1 and device is not None and torch.device(device).type == "cuda":
        device = f"cuda:{local_rank}"
    if cfg.torch_threads is not None:
        torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed + rank)
    env = unienv.make(
        task,
        backend=backend,
        num_envs=cfg.num_envs,
        device=device,
        seed=cfg.seed + rank * cfg.num_envs,
        dr=cfg.dr,
        task_options=task_options,
        backend_options=backend_options,
    )
    vec_env = RslRlVecEnv(env)
    run_dir = hydra.core.hydra_config.HydraConfig.get().runtime.output_dir
    if rank == 0:  # held until the process ends: a second run into this folder is refused
        files.take_folder(run_dir)
    runner_cfg = OmegaConf.to_container(cfg.train.runner, resolve=True)
    # a checkpoint at least every run's length, so that no run ends with only its first one
    runner_cfg["save_interval"] = max(1, min(runner_cfg["save_interval"], cfg.train.iterations))
    metrics_path = hydra.utils.to_absolute_path(
        cfg.train.metrics_path or os.path.join(run_dir, "metrics.json")
    )
    if rank == 0:
        os.makedirs(os.path.dirname(metrics_path), exist_ok=True)
    metrics = {
        "task": task,
        "backend": backend,
        "device": vec_env.device,
        "num_envs": cfg.num_envs,
        "processes": world,
        "seed": cfg.seed,
        "num_steps_per_env": runner_cfg["num_steps_per_env"],
        "iterations": cfg.train.iterations,
        "max_seconds": max_seconds,
    }
    stop = StopSignal()
    runner = runner_module.Runner(
        vec_env,
        runner_cfg,
        log_dir=run_dir if rank == 0 else None,
        device=vec_env.device,
        max_seconds=max_seconds,
        on_iteration=(lambda: after_iteration()) if rank == 0 else None,
        checkpoint_seconds=None if minutes is None else 60.0 * minutes,
        stop=stop,
        timeout_s=timeout_s,
    )
    runner.run_identity = run_identity(cfg, task, backend, world)
    metrics["curve"] = runner.curve  # the runner appends a row per iteration
    remaining = cfg.train.iterations
    if checkpoint is not None:
        path, state = checkpoint
        how = runner.restore(path, state)
        remaining -= state["iterations"]
        if remaining <= 0:
            raise ArgumentError(
                f"train.resume: {path} has done {state['iterations']} of the run's {cfg.train.iterations} "
                "iterations; raise train.iterations to train on"
            )
        if max_seconds is not None and state["seconds"] >= max_seconds:
            raise ArgumentError(
                f"train.max_seconds: the run has trained {state['seconds']:.0f} s, its budget is "
                f"{max_seconds} s (it counts the whole run, resumes included); raise it to train on"
            )
        was = state["run"].get("processes", 1)
        metrics["resumed"] = {
            "checkpoint": path,
            "iterations": state["iterations"],
            "processes": was,
            "envs": how,
        }
        if rank == 0:
            print(
                f"resumed {path}: {state['iterations']} iterations done, {remaining} to go; "
                f"{was} -> {world} processes, envs {'restored' if how == 'exact' else 're-seeded'}",
                flush=True,
            )

    watcher = on_env(env) if on_env is not None else None
    viewer_policy = os.path.join(run_dir, "viewer_policy.safetensors")

    def after_iteration() -> None:
        """metrics.json rewritten; and where the viewer's page asked for it, the policy as it is now
        written and played there (unienv.viewer.live.Watch)."""
        write_json(metrics_path, metrics)
        if watcher is not None and watcher.wants_policy():
            iteration = runner.curve[-1]["iteration"] if runner.curve else 0
            save_policy(viewer_policy, exportable_actor(runner), env, backend=backend)
            watcher.play(viewer_policy, f"iteration {iteration}")

    start = time.perf_counter()
    try:
        runner.learn(remaining, init_at_random_ep_len=cfg.train.init_at_random_ep_len and checkpoint is None)
    except RuntimeError as e:  # gloo and nccl raise RuntimeErrors (some DistErrors)
        if runner.group is None or not runner.group.is_collective_failure(e):
            raise
        print(runner.group.timeout_error(e), file=sys.stderr, flush=True)
        sys.exit(1)
    finally:
        stop.restore()
        if watcher is not None:
            watcher.close()
    seconds = time.perf_counter() - start
    env.close()
    finish(cfg, runner, metrics, metrics_path, run_dir, env, seconds, rank, world)
    if runner.stop.received is not None:
        sys.exit(128 + runner.stop.received)


def run_identity(cfg: DictConfig, task: str, backend: str, world: int) -> dict:
    """What a checkpoint must share with this run to be resumed by it: the env and the learner."""
    runner = OmegaConf.to_container(cfg.train.runner, resolve=True)
    return {
        "task": task,
        "task_options": OmegaConf.to_container(cfg.task, resolve=True),
        "backend": backend,
        "dr": OmegaConf.to_container(cfg.dr, resolve=True) if cfg.dr is not None else None,
        "num_envs": cfg.num_envs,
        "seed": cfg.seed,
        "processes": world,
        "runner": {
            k: runner[k] for k in ("num_steps_per_env", "algorithm", "actor", "critic") if k in runner
        },
    }


def finish(cfg, runner, metrics, metrics_path, run_dir, env, seconds, rank, world) -> None:
    """After training: the summary, metrics.json, the learning curve, the policy file and (unless
    a signal stopped the run) its evaluation; on process 0."""
    from unienv.wrappers.rsl_rl import exportable_actor

    task, backend = metrics["task"], metrics["backend"]
    done = len(runner.curve)  # every process logs each iteration; a resumed run's rows included
    iterations = done - metrics.get("resumed", {}).get("iterations", 0)
    env_steps = iterations * runner.cfg["num_steps_per_env"] * cfg.num_envs * world
    if world > 1:  # one line per process: its env seeds, and a digest of its policy (equal on all ranks)
        params = torch.cat([p.detach().flatten().cpu() for p in runner.alg.get_policy().parameters()])
        print(
            f"rank {rank}/{world}: envs seeded {cfg.seed + rank * cfg.num_envs}..{cfg.seed + (rank + 1) * cfg.num_envs - 1}"
            f" on {runner.env.device}, policy digest {float(params.double().sum()):.10e}",
            flush=True,
        )
        torch.distributed.barrier()  # every process has finished its last update
        runner.group.stop()  # no collective after this: a rank that exits now is no hang
    if rank != 0:
        return
    rewards = list(runner.logger.rewbuffer)
    mean_return = sum(rewards) / len(rewards) if rewards else float("nan")
    print(
        f"trained {task} on {backend} x{cfg.num_envs} envs x{world} processes: {env_steps} env steps in "
        f"{seconds:.1f} s ({env_steps / seconds:.0f} steps/s); mean return of the last {len(rewards)} "
        f"training episodes {mean_return:.2f}"
    )
    metrics["summary"] = {
        "iterations": done,
        "stopped_by": runner.stopped_by,
        "env_steps": runner.curve[-1]["env_steps"] if runner.curve else 0,
        "train_seconds": runner.curve[-1]["seconds"] if runner.curve else seconds,
        "steps_per_s": env_steps / seconds,
        "mean_return": _number(mean_return),
    }
    write_json(metrics_path, metrics)
    curve = os.path.join(os.path.dirname(metrics_path), "learning_curve.png")
    processes = f" x {world} processes" if world > 1 else ""
    title = f"rsl_rl PPO on {task} ({backend}, {cfg.num_envs} envs{processes})"
    if plots.learning_curve(runner.curve, curve, title) is not None:
        print(f"learning curve: {curve}")

    path = hydra.utils.to_absolute_path(cfg.train.policy_path or os.path.join(run_dir, "policy.safetensors"))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    info = {
        "library": "rsl_rl",
        "iterations": done,
        "env_steps": metrics["summary"]["env_steps"],
        "num_envs": cfg.num_envs,
        "processes": world,
        "seed": cfg.seed,
        "train_seconds": round(metrics["summary"]["train_seconds"], 1),
        "train_mean_return": mean_return,
    }
    save_policy(path, exportable_actor(runner), env, backend=backend, info=info)
    print(f"policy: {path}")
    metrics["policy"] = path
    if runner.stop.received is None:
        metrics["eval"] = evaluate(cfg, str(env.device), path)
    write_json(metrics_path, metrics)
    print(f"metrics: {metrics_path}")
    if runner.stopped_by != "iterations":  # a signal or train.max_seconds: the last checkpoint is kept
        print(f"resume with: python train.py train.resume={run_dir} (and this run's other options)")
