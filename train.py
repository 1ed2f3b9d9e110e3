"""Train a policy with rsl_rl's PPO on a unienv task, and write a policy file play.py replays.

    python train.py                                        # cartpole balance, 256 envs, CPU
    python train.py train.iterations=100 seed=1            # any config value from the command line
    python train.py train=ppo_ant backend=mjwarp num_envs=4096 device=cuda
    torchrun --nproc_per_node=4 train.py train=ppo_ant backend=mjwarp device=cuda
    python train.py train.resume=outputs/<date>/<time>     # continue a stopped run (same options)
    python train.py train=ppo_quadruped viewer=web        # watch the envs in a browser as they train
    python play.py policy=outputs/<date>/<time>/policy.safetensors # replay and record it

Configuration lives in cfg/train.yaml and the cfg/train/ presets (Hydra; `--help` lists it). Each
process builds its own backend and its own num_envs envs on its device; under torchrun, process r
seeds its envs with seed + r * num_envs (so no two envs anywhere share a stream) and torch with
seed + r, and rsl_rl averages the gradients of all processes (nccl on GPUs, gloo on CPUs).

Process 0 logs to the Hydra run dir: rsl_rl's per-iteration report on stdout, TensorBoard events
(`tensorboard --logdir outputs`), checkpoints (model_<it>.pt, it the index of the last iteration
done), and at the end `policy.safetensors` (see unienv.training.policy), then a deterministic
evaluation of that file. It also writes `metrics.json` (train.metrics_path), rewritten after every
iteration so that a run cut short keeps its curve: per iteration the env steps, seconds, steps/s,
the mean return and length of the last 100 episodes, the means of rsl_rl's episode terms and
PPO's losses; then a summary and the evaluation (for the quadruped, its mean velocity-tracking
error). Beside it, `learning_curve.png` draws the mean return and episode length over env steps
(unienv.utils.plots; needs matplotlib, the `plot` extra). train.max_seconds stops training after the
iteration that passes that many seconds (a fixed time budget; one process only).

Checkpoints and resume. A checkpoint is the run's whole state after an iteration (unienv.training.checkpoint):
the actor and critic with their observation normalizers, the optimizer, the adaptive learning
rate, the iteration count, torch's random state, the logger's episode buffers, the curve so far,
and the env's state (physics with solver state, per-env random streams, episode counters, task
memory, curriculum, DR). It is written atomically every train.runner.save_interval iterations
(at most the run's length), every train.checkpoint_minutes of wall time, at the end, and on SIGTERM
or SIGINT: the iteration under way finishes, the checkpoint, metrics.json and the policy file are
written, and train.py exits with status 128 + the signal's number (a second signal stops at once).
`train.resume=<run dir or model_<it>.pt>` continues that run with the same options: train.iterations
is the run's total, the curve continues in metrics.json, and on the CPU the resumed iterations give
the same losses and returns, bit for bit, as the uninterrupted run. Under torchrun the checkpoint
holds every rank's state: on as many ranks the run continues exactly; on another number the learner
and the iteration carry over and each rank's envs start fresh (docs/training.md, Distributed).
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from unienv import viewer
from unienv.tools import cli
from unienv.training.run import train


@hydra.main(version_base="1.3", config_path="cfg", config_name="train")
@cli.report
def main(cfg: DictConfig) -> None:
    cli.check_ints(cfg, "num_envs", "seed")
    if cfg.train.get("learner") is None:  # PPO; the off-policy learner needs no rsl_rl
        cli.require_extra("rsl_rl", extra="rsl-rl")
    train(cfg, on_env=viewer.watch(viewer.from_cfg(cfg.viewer, cfg.num_envs)))


if __name__ == "__main__":
    cli.run(main)
