"""Train a policy with rsl_rl's PPO on a unienv task, and write a policy file play.py replays.

    python train.py                                        # cartpole balance, 256 envs, CPU
    python train.py train.iterations=100 seed=1            # any config value from the command line
    python train.py train=ppo_ant backend=mjwarp num_envs=4096 device=cuda
    torchrun --nproc_per_node=4 train.py train=ppo_ant backend=mjwarp device=cuda
    python train.py train.resume=outputs/<date>/<time>     # continue a stopped run (same options)
    python play.py policy=outputs/<date>/<time>/policy.safetensors # replay and record it

Configuration lives in cfg/train.yaml and the cfg/train/ presets (Hydra; `--help` lists it). Each
process builds its own backend and its own num_envs envs on its device; under torchrun, process r
seeds its envs with seed + r * num_envs (so no two envs anywhere share a stream) and torch with
seed + r, and rsl_rl averages the gradients of all processes (nccl on GPUs, gloo on CPUs).

Process 0 logs to the Hydra run dir: rsl_rl's per-iteration report on stdout, TensorBoard events
(`tensorboard --logdir outputs`), checkpoints (model_<it>.pt, it the index of the last iteration
done), and at the end `policy.safetensors` (see unienv.wrappers.checkpoint), then a deterministic
evaluation of that file. It also writes `metrics.json` (train.metrics_path), rewritten after every
iteration so that a run cut short keeps its curve: per iteration the env steps, seconds, steps/s,
the mean return and length of the last 100 episodes, the means of rsl_rl's episode terms and
PPO's losses; then a summary and the evaluation (for the quadruped, its mean velocity-tracking
error). Beside it, `learning_curve.png` draws the mean return and episode length over env steps
(unienv.plots; needs matplotlib, the `plot` extra). train.max_seconds stops training after the
iteration that passes that many seconds (a fixed time budget; one process only).

Checkpoints and resume. A checkpoint is the run's whole state after an iteration (unienv.resume):
the actor and critic with their observation normalizers, the optimizer, the adaptive learning
rate, the iteration count, torch's random state, the logger's episode buffers, the curve so far,
and the env's state (physics with solver state, per-env random streams, episode counters, task
memory, curriculum, DR). It is written atomically every train.runner.save_interval iterations
(at most the run's length), every train.checkpoint_minutes of wall time, at the end, and on SIGTERM
or SIGINT: the iteration under way finishes, the checkpoint, metrics.json and the policy file are
written, and train.py exits with status 128 + the signal's number (a second signal stops at once).
`train.resume=<run dir or model_<it>.pt>` continues that run with the same options: train.iterations
is the run's total, the curve continues in metrics.json, and on the CPU the resumed iterations give
the same losses and returns, bit for bit, as the uninterrupted run. Resuming needs one process.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time

import hydra
import torch
from omegaconf import DictConfig, OmegaConf

from unienv import cli

cli.require_extra("rsl_rl", extra="rsl-rl")
from rsl_rl.runners import OnPolicyRunner  # noqa: E402

import unienv  # noqa: E402
from unienv import files, plots  # noqa: E402
from unienv.errors import ArgumentError  # noqa: E402
from unienv.resume import env_state, load_checkpoint, load_env_state, save_checkpoint  # noqa: E402
from unienv.rollout import make_policy, rollout  # noqa: E402
from unienv.wrappers.checkpoint import save_policy  # noqa: E402
from unienv.wrappers.rsl_rl import RslRlVecEnv, exportable_actor  # noqa: E402


class OutOfTime(Exception):
    """Raised after the iteration that passes the time budget, to leave rsl_rl's learn loop."""


class Interrupted(Exception):
    """Raised after the iteration under way when SIGTERM or SIGINT arrived, to leave the learn loop."""


class StopSignal:
    """SIGTERM and SIGINT noted, not acted on at once: the runner stops after the iteration under way
    (its checkpoint needs the state between two iterations). A second SIGINT (Ctrl-C) acts as usual;
    a repeated SIGTERM is noted again (torchrun forwards one more than once; a scheduler's next
    step is SIGKILL)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        self.received: int | None = None
        self._previous = {s: signal.signal(s, self._note) for s in self.SIGNALS}

    def _note(self, signum, frame) -> None:
        if self.received is None:
            print(
                f"{signal.Signals(signum).name}: stopping after this iteration", file=sys.stderr, flush=True
            )
        self.received = signum
        if signum == signal.SIGINT:
            signal.signal(signum, self._previous[signum])

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)


class Runner(OnPolicyRunner):
    """rsl_rl's OnPolicyRunner that records each iteration's metrics (`curve`), writes complete,
    atomic checkpoints and restores them, stops at a time budget or a signal, and whose
    multi-process mode also runs CPU processes (gloo).

    rsl_rl's learn loop has no hook per iteration, so the runner wraps its logger's `log` call,
    made once per iteration, to read the iteration's figures before the logger clears them.
    rsl_rl's own multi-GPU set-up insists on nccl and cuda:<LOCAL_RANK>; on CUDA devices this
    defers to it, on the CPU it does the same with gloo (how the mechanism is tested without GPUs).
    """

    def __init__(
        self,
        env,
        train_cfg,
        log_dir=None,
        device="cpu",
        max_seconds=None,
        on_iteration=None,
        checkpoint_seconds=None,
        stop=None,
    ):
        """max_seconds: stop after the iteration that passes it; on_iteration: called after each;
        checkpoint_seconds: write a checkpoint after the iteration that passes this many seconds
        since the last; stop: a StopSignal, checked after each iteration."""
        super().__init__(env, train_cfg, log_dir=log_dir, device=device)
        self.curve: list[dict] = []
        self.max_seconds, self.on_iteration = max_seconds, on_iteration
        self.checkpoint_seconds, self.stop = checkpoint_seconds, stop
        self.stopped_by = "iterations"
        self.run_identity: dict = {}  # what a checkpoint must match to be resumed here
        self._start = self._saved_at = time.perf_counter()
        self._seconds_before = 0.0  # of the run this one resumes
        log = self.logger.log

        def log_and_record(**kwargs) -> None:
            row = self._iteration_metrics(kwargs["it"], kwargs["collect_time"], kwargs["learn_time"])
            row["losses"] = {k: _number(v) for k, v in kwargs["loss_dict"].items()}
            log(**kwargs)
            self.curve.append(row)
            if self.on_iteration is not None:
                self.on_iteration()
            if self._signalled():
                self.stopped_by = signal.Signals(self.stop.received).name
                self._save_now(kwargs["it"])
                raise Interrupted
            if (
                self.checkpoint_seconds is not None
                and time.perf_counter() - self._saved_at >= self.checkpoint_seconds
            ):
                self._save_now(kwargs["it"])
            if self.max_seconds is not None and row["seconds"] >= self.max_seconds:
                raise OutOfTime

        self.logger.log = log_and_record

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        self._start = self._saved_at = time.perf_counter()
        try:
            super().learn(num_learning_iterations, init_at_random_ep_len=init_at_random_ep_len)
        except (OutOfTime, Interrupted) as e:
            if isinstance(e, OutOfTime):
                self.stopped_by = "max_seconds"
                self._save_now(self.current_learning_iteration)
            if self.logger.writer is not None:  # what rsl_rl does after its last iteration
                self.logger.stop_logging_writer()

    def _signalled(self) -> bool:
        """Whether a stop signal arrived (on any process: all stop after the same iteration)."""
        if self.stop is None:
            return False
        if not self.is_distributed:
            return self.stop.received is not None
        flag = torch.tensor([self.stop.received or 0], device=self.device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        received = int(flag.item())  # one read per iteration
        if received:
            self.stop.received = received
        return received != 0

    def _save_now(self, it: int) -> None:
        if self.logger.writer is not None:  # process 0 logs and saves
            self.save(os.path.join(self.logger.log_dir, f"model_{it}.pt"))

    def save(self, path: str, infos: dict | None = None) -> None:
        """Write the run's whole state after the last iteration to path, atomically (rsl_rl's learn
        loop calls this every save_interval iterations and at the end)."""
        logger = self.logger
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
        state = {
            "run": self.run_identity,
            "iterations": len(self.curve),
            "seconds": self.curve[-1]["seconds"] if self.curve else 0.0,
            "algorithm": self.alg.save(),
            "env": env_state(self.env.env),
            "adapter": {
                "obs": self.env.get_observations()["policy"].cpu(),
                "term_sums": {k: v.cpu() for k, v in self.env._term_sums.items()},
            },
            "logger": {
                "rewbuffer": list(logger.rewbuffer),
                "lenbuffer": list(logger.lenbuffer),
                "cur_reward_sum": logger.cur_reward_sum.cpu(),
                "cur_episode_length": logger.cur_episode_length.cpu(),
                "tot_timesteps": logger.tot_timesteps,
                "tot_time": logger.tot_time,
            },
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": cuda,
            "curve": self.curve,
            "infos": infos,
        }
        save_checkpoint(path, state)
        self._saved_at = time.perf_counter()
        logger.save_model(path, self.current_learning_iteration)

    def restore(self, path: str, state: dict) -> None:
        """Continue the run a checkpoint (see save) was written from; refuses one of another run."""
        theirs, ours = state["run"], self.run_identity
        differences = [
            f"{key}: the checkpoint has {theirs.get(key)!r}, this run {ours.get(key)!r}"
            for key in sorted(set(theirs) | set(ours))
            if theirs.get(key) != ours.get(key)
        ]
        if differences:
            raise ArgumentError(
                f"train.resume: {path} is a checkpoint of another run; resume it with its options:\n  "
                + "\n  ".join(differences)
            )
        self.alg.load(state["algorithm"], None, strict=True)  # also the adaptive learning rate
        load_env_state(self.env.env, state["env"])
        adapter = self.env
        adapter._obs["policy"].copy_(state["adapter"]["obs"].to(adapter.device))
        adapter._term_sums = {k: v.to(adapter.device) for k, v in state["adapter"]["term_sums"].items()}
        logger, saved = self.logger, state["logger"]
        logger.rewbuffer.extend(saved["rewbuffer"])
        logger.lenbuffer.extend(saved["lenbuffer"])
        logger.cur_reward_sum.copy_(saved["cur_reward_sum"])
        logger.cur_episode_length.copy_(saved["cur_episode_length"])
        logger.tot_timesteps, logger.tot_time = saved["tot_timesteps"], saved["tot_time"]
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.curve[:] = state["curve"]
        self.current_learning_iteration = state["iterations"]  # the next iteration's index
        self._seconds_before = state["seconds"]

    def _iteration_metrics(self, it: int, collect_time: float, learn_time: float) -> dict:
        """This iteration's figures (rsl_rl's, as its report prints them; process 0's episodes)."""
        logger, size = self.logger, self.cfg["num_steps_per_env"] * self.env.num_envs * self.gpu_world_size
        episode = {}
        for key in dict.fromkeys(k for extras in logger.ep_extras for k in extras):
            values = [
                torch.as_tensor(e[key], device=logger.device).float().flatten()
                for e in logger.ep_extras
                if key in e
            ]
            episode[key] = _number(torch.cat(values).mean())  # one device read per key
        return {
            "iteration": it + 1,  # iterations done
            "env_steps": (it + 1) * size,
            "seconds": self._seconds_before + time.perf_counter() - self._start,
            "steps_per_s": size / (collect_time + learn_time),  # collection + learning, rsl_rl's figure
            "collect_steps_per_s": size / collect_time,  # env steps and policy inference only
            "mean_return": _mean(logger.rewbuffer),  # of the last 100 episodes, as rsl_rl prints it
            "mean_episode_length": _mean(logger.lenbuffer),
            "episode": episode,  # means over this iteration's ended episodes: return, length, reward terms
        }

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


class TrackingError:
    """The quadruped's mean velocity-tracking error along a rollout, from its observations.

    tasks/quadruped.py observes the base-frame linear velocity at 0:3 and angular velocity at 3:6,
    and the command (vx, vy, yaw rate) at 9:12, each scaled. Called with each step's (obs, info), it
    sums |command_xy - v_xy| (m/s) and |command_yaw - w_z| (rad/s) over every env and step, taking an
    ended episode's last observation (info["final_obs"]) rather than its successor's first. With
    observation noise (DR) the errors include the noise.
    """

    def __init__(self, task):
        self.scale = torch.cat((task.base_obs_scale[[0, 1, 5]], task.command_scale))
        self.lin = self.yaw = 0.0
        self.count = 0

    def __call__(self, obs: torch.Tensor, info: dict) -> None:
        if "final_obs" in info:
            obs = torch.where(info["_final_obs"][:, None], info["final_obs"], obs)
        unscaled = obs[:, [0, 1, 5, 9, 10, 11]] / self.scale
        error = unscaled[:, 3:] - unscaled[:, :3]
        self.lin = self.lin + error[:, :2].norm(dim=1).sum()  # stays on the device until result()
        self.yaw = self.yaw + error[:, 2].abs().sum()
        self.count += len(obs)

    def result(self) -> dict:
        return {
            "lin_vel_error": _number(self.lin / self.count),
            "yaw_rate_error": _number(self.yaw / self.count),
        }


def _mean(values) -> float | None:
    return _number(sum(values) / len(values)) if values else None


def _number(x) -> float | None:
    """A float for JSON; None where it is not finite (JSON has no NaN)."""
    x = float(x)
    return x if math.isfinite(x) else None


def write_json(path: str, data: dict) -> None:
    """data as JSON at path, replaced whole (a reader never sees half a file)."""
    files.write_json(path, data, indent=1)


def process_group() -> tuple[int, int, int]:
    """(rank, local rank, world size) from torchrun's environment; (0, 0, 1) without torchrun."""
    return int(os.getenv("RANK", "0")), int(os.getenv("LOCAL_RANK", "0")), int(os.getenv("WORLD_SIZE", "1"))


@hydra.main(version_base="1.3", config_path="cfg", config_name="train")
@cli.report
def main(cfg: DictConfig) -> None:
    rank, local_rank, world = process_group()
    cli.check_ints(cfg, "num_envs", "seed")
    max_seconds, resume = cfg.train.max_seconds, cfg.train.resume
    if max_seconds is not None and world > 1:  # processes stopping at different iterations would hang
        raise ValueError("train.max_seconds: a time budget needs one process (got WORLD_SIZE > 1)")
    if resume is not None and world > 1:
        raise ArgumentError("train.resume: resuming needs one process (got WORLD_SIZE > 1)")
    minutes = cfg.train.checkpoint_minutes
    if minutes is not None and (
        isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes <= 0
    ):
        raise ArgumentError(f"train.checkpoint_minutes: expected a number > 0 or null, got {minutes!r}")
    checkpoint = load_checkpoint(hydra.utils.to_absolute_path(resume)) if resume is not None else None
    task_options = OmegaConf.to_container(cfg.task, resolve=True)
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
    runner = Runner(
        vec_env,
        runner_cfg,
        log_dir=run_dir if rank == 0 else None,
        device=vec_env.device,
        max_seconds=max_seconds,
        on_iteration=(lambda: write_json(metrics_path, metrics)) if rank == 0 else None,
        checkpoint_seconds=None if minutes is None else 60.0 * minutes,
        stop=stop,
    )
    runner.run_identity = run_identity(cfg, task, backend, world)
    metrics["curve"] = runner.curve  # the runner appends a row per iteration
    remaining = cfg.train.iterations
    if checkpoint is not None:
        path, state = checkpoint
        runner.restore(path, state)
        remaining -= state["iterations"]
        if remaining <= 0:
            raise ArgumentError(
                f"train.resume: {path} has done {state['iterations']} of the run's {cfg.train.iterations} "
                "iterations; raise train.iterations to train on"
            )
        metrics["resumed"] = {"checkpoint": path, "iterations": state["iterations"]}
        print(f"resumed {path}: {state['iterations']} iterations done, {remaining} to go", flush=True)

    start = time.perf_counter()
    try:
        runner.learn(remaining, init_at_random_ep_len=cfg.train.init_at_random_ep_len and checkpoint is None)
    finally:
        stop.restore()
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
        "env_steps": done * runner.cfg["num_steps_per_env"] * cfg.num_envs * world,
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
        task_options = OmegaConf.to_container(cfg.task, resolve=True)
        task_options.pop("name")
        backend_options = OmegaConf.to_container(cfg.backend)
        backend_options.pop("name")
        metrics["eval"] = evaluate(cfg, task, backend, str(env.device), task_options, backend_options, path)
    write_json(metrics_path, metrics)
    print(f"metrics: {metrics_path}")


def evaluate(cfg, task, backend, device, task_options, backend_options, path) -> dict | None:
    """Roll the saved policy file out deterministically on fresh envs; print and return its episode
    statistics (and, for the quadruped, its mean velocity-tracking error)."""
    steps = cfg.train.eval_steps
    if steps == 0:
        return None
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
    tracking = TrackingError(env.task) if task == "quadruped" else None
    try:
        policy = make_policy(path, env)
        stats = rollout(env, policy, steps or env.max_episode_steps, on_step=tracking, progress=False)
    finally:
        env.close()
    s = stats.summary()
    print(
        f"eval: {s['episodes']} episodes, return {s['return_mean']:.2f} +- {s['return_std']:.2f}, "
        f"length {s['length_mean']:.1f}, termination rate {s['termination_rate']:.2f}"
    )
    result = {k: v if isinstance(v, int) else _number(v) for k, v in s.items()}
    result |= {"steps": stats.steps, "num_envs": env.num_envs}
    if tracking is not None:
        result |= tracking.result()
        print(
            f"eval: velocity tracking error {result['lin_vel_error']:.3f} m/s (planar), "
            f"{result['yaw_rate_error']:.3f} rad/s (yaw rate)"
        )
    return result


if __name__ == "__main__":
    cli.run(main)
