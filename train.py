"""Train a policy with rsl_rl's PPO on a unienv task, and write a policy file play.py replays.

    python train.py                                        # cartpole balance, 64 envs, CPU
    python train.py train.iterations=100 seed=1            # any config value from the command line
    python train.py train=ppo_ant backend=mjwarp num_envs=4096 device=cuda
    torchrun --nproc_per_node=4 train.py train=ppo_ant backend=mjwarp device=cuda
    python play.py policy=outputs/<date>/<time>/policy.pt2 # replay and record it

Configuration lives in cfg/train.yaml and the cfg/train/ presets (Hydra; `--help` lists it). Each
process builds its own backend and its own num_envs envs on its device; under torchrun, process r
seeds its envs with seed + r * num_envs (so no two envs anywhere share a stream) and torch with
seed + r, and rsl_rl averages the gradients of all processes (nccl on GPUs, gloo on CPUs).

Process 0 logs to the Hydra run dir: rsl_rl's per-iteration report on stdout, TensorBoard events
(`tensorboard --logdir outputs`), rsl_rl's resumable checkpoints (model_<it>.pt), and at the end
`policy.pt2` (see unienv.wrappers.checkpoint), then a deterministic evaluation of that file.
"""

from __future__ import annotations

import os
import time

import hydra
import torch
from omegaconf import DictConfig, OmegaConf
from rsl_rl.runners import OnPolicyRunner

import unienv
from unienv.rollout import make_policy, rollout
from unienv.wrappers.checkpoint import save_policy
from unienv.wrappers.rsl_rl import RslRlVecEnv


class Runner(OnPolicyRunner):
    """rsl_rl's OnPolicyRunner whose multi-process mode also runs CPU processes (gloo).

    rsl_rl's own multi-GPU set-up insists on nccl and cuda:<LOCAL_RANK>; on CUDA devices this
    defers to it, on the CPU it does the same with gloo (how the mechanism is tested without GPUs).
    """

    def _configure_multi_gpu(self) -> None:
        if torch.device(self.device).type != "cpu" or int(os.getenv("WORLD_SIZE", "1")) == 1:
            return super()._configure_multi_gpu()
        self.gpu_world_size = int(os.environ["WORLD_SIZE"])
        self.gpu_global_rank = int(os.environ["RANK"])
        self.gpu_local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.is_distributed = True
        self.cfg["multi_gpu"] = {
            "global_rank": self.gpu_global_rank,
            "local_rank": self.gpu_local_rank,
            "world_size": self.gpu_world_size,
        }
        torch.distributed.init_process_group(
            "gloo", rank=self.gpu_global_rank, world_size=self.gpu_world_size
        )


def process_group() -> tuple[int, int, int]:
    """(rank, local rank, world size) from torchrun's environment; (0, 0, 1) without torchrun."""
    return int(os.getenv("RANK", "0")), int(os.getenv("LOCAL_RANK", "0")), int(os.getenv("WORLD_SIZE", "1"))


@hydra.main(version_base="1.3", config_path="cfg", config_name="train")
def main(cfg: DictConfig) -> None:
    rank, local_rank, world = process_group()
    task_options = OmegaConf.to_container(cfg.task)
    backend_options = OmegaConf.to_container(cfg.backend)
    task, backend = task_options.pop("name"), backend_options.pop("name")
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
        backend_options={k: v for k, v in backend_options.items() if v is not None},
    )
    vec_env = RslRlVecEnv(env)
    run_dir = hydra.core.hydra_config.HydraConfig.get().runtime.output_dir
    runner_cfg = OmegaConf.to_container(cfg.train.runner, resolve=True)
    runner = Runner(vec_env, runner_cfg, log_dir=run_dir if rank == 0 else None, device=vec_env.device)

    start = time.perf_counter()
    runner.learn(cfg.train.iterations, init_at_random_ep_len=cfg.train.init_at_random_ep_len)
    seconds = time.perf_counter() - start
    env_steps = cfg.train.iterations * runner_cfg["num_steps_per_env"] * cfg.num_envs * world
    env.close()
    if world > 1:  # one line per process: its env seeds, and a digest of its policy (equal on all ranks)
        params = torch.cat([p.detach().flatten().cpu() for p in runner.alg.get_policy().parameters()])
        print(
            f"rank {rank}/{world}: envs seeded {cfg.seed + rank * cfg.num_envs}..{cfg.seed + (rank + 1) * cfg.num_envs - 1}"
            f" on {vec_env.device}, policy digest {float(params.double().sum()):.10e}",
            flush=True,
        )
        torch.distributed.barrier()  # every process has finished its last update
    if rank != 0:
        return
    rewards = list(runner.logger.rewbuffer)
    mean_return = sum(rewards) / len(rewards) if rewards else float("nan")
    print(
        f"trained {task} on {backend} x{cfg.num_envs} envs x{world} processes: {env_steps} env steps in "
        f"{seconds:.1f} s ({env_steps / seconds:.0f} steps/s); mean return of the last {len(rewards)} "
        f"training episodes {mean_return:.2f}"
    )

    path = hydra.utils.to_absolute_path(cfg.train.policy_path or os.path.join(run_dir, "policy.pt2"))
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    actor = runner.get_inference_policy(device="cpu").as_jit()
    info = {
        "library": "rsl_rl",
        "iterations": cfg.train.iterations,
        "env_steps": env_steps,
        "num_envs": cfg.num_envs,
        "processes": world,
        "seed": cfg.seed,
        "train_seconds": round(seconds, 1),
        "train_mean_return": mean_return,
    }
    save_policy(path, actor, env, backend=backend, info=info)
    print(f"policy: {path}")
    evaluate(cfg, task, backend, device, task_options, backend_options, path)


def evaluate(cfg, task, backend, device, task_options, backend_options, path) -> None:
    """Roll the saved policy file out deterministically on fresh envs and print its episode returns."""
    steps = cfg.train.eval_steps
    if steps == 0:
        return
    env = unienv.make(
        task,
        backend=backend,
        num_envs=cfg.num_envs,
        device=device,
        seed=cfg.seed + 10_000,
        dr=cfg.dr,
        task_options=task_options,
        backend_options={k: v for k, v in backend_options.items() if v is not None},
    )
    try:
        stats = rollout(env, make_policy(path, env), steps or env.max_episode_steps, progress=False)
    finally:
        env.close()
    s = stats.summary()
    print(
        f"eval: {s['episodes']} episodes, return {s['return_mean']:.2f} +- {s['return_std']:.2f}, "
        f"length {s['length_mean']:.1f}, termination rate {s['termination_rate']:.2f}"
    )


if __name__ == "__main__":
    main()
