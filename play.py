"""Roll a policy out on a unienv task and record a video.

    python play.py                                   # cartpole, mujoco, random policy
    python play.py task=ant num_envs=16 steps=500 policy=zero
    python play.py task=cartpole policy=path/to/policy.safetensors video.envs=1
    python play.py policy=path/to/policy.onnx        # an exported policy, run by onnxruntime
    python play.py policy=go1_trot                   # a policy unienv ships, on the env it was trained for
    python play.py task=quadruped viewer=web        # watch it in a browser instead (unienv.viewer)
    python play.py -m task=ant dr=default dr.friction.range=0.5,1.0,1.5   # a DR sweep (unienv/tools/sweep.py)

Configuration lives in cfg/ (Hydra); `python play.py --help` lists it. A mistake prints one
`error:` line; `--debug` (or HYDRA_FULL_ERROR=1) shows the full traceback.
"""

import contextlib
import math
import os
import signal
import sys

import hydra
import imageio.v2 as imageio
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

import unienv
from unienv.errors import ArgumentError
from unienv.render import tile
from unienv.tools import cli, sweep
from unienv.training.rollout import make_policy, rollout
from unienv.training.shipped import played_env
from unienv.utils.files import written
from unienv.viewer import from_cfg


def policy_name(policy: str) -> str:
    """video.path's name for a policy: a file's stem, and `_onnx` after it for an ONNX file, so that
    policy.safetensors and its export policy.onnx play to videos of their own."""
    stem, ext = os.path.splitext(os.path.basename(str(policy)))
    return stem + ("_onnx" if ext == ".onnx" else "")


OmegaConf.register_new_resolver("policy_name", policy_name, replace=True)


@hydra.main(version_base="1.3", config_path="cfg", config_name="config")
@cli.report
def main(cfg: DictConfig) -> None:
    torch.set_num_threads(1)  # the engine's threads use the cores; torch's small tensors need none
    cli.check_ints(cfg, "num_envs", "steps", "video.envs")
    task_options = OmegaConf.to_container(cfg.task, resolve=True)
    backend_options = OmegaConf.to_container(cfg.backend)
    task, backend = task_options.pop("name"), backend_options.pop("name")
    overrides = list(hydra.core.hydra_config.HydraConfig.get().overrides.task)
    policy, task, task_options = played_env(cfg.policy, task, task_options, overrides)
    with open_dict(cfg):  # video.path names the task played
        cfg.task.name = task
    if isinstance(cfg.video.fps, bool) or not isinstance(cfg.video.fps, int | float) or cfg.video.fps <= 0:
        raise ArgumentError(f"video.fps: expected a number > 0, got {cfg.video.fps!r}")
    sweeping = sweep.is_multirun()  # a sweep records metrics, and a video only if +sweep.video=true
    web = from_cfg(cfg.viewer, cfg.num_envs)  # checked before anything starts; None: no viewer
    recorded = not sweeping or OmegaConf.select(cfg, "sweep.video", default=False)
    video = web is None and cfg.video.enabled and recorded
    env = unienv.make(
        task,
        backend=backend,
        num_envs=cfg.num_envs,
        device=cfg.device,
        seed=cfg.seed,
        dr=cfg.dr,
        task_options=task_options,
        backend_options={k: v for k, v in backend_options.items() if v is not None},
        autoreset_mode=cfg.autoreset_mode,
        render_mode="rgb_array" if video else None,
        render_env_ids=range(min(cfg.video.envs, cfg.num_envs)),
        render_size=(cfg.video.height, cfg.video.width),
    )
    policy = make_policy(policy, env)
    if web is not None:
        from unienv.viewer.live import play

        with contextlib.closing(env), contextlib.suppress(KeyboardInterrupt), _sigterm_as_interrupt():
            play(env, policy, web, seed=cfg.seed)
        return
    frame_every = max(1, math.ceil(env.metadata["render_fps"] / cfg.video.fps))
    path = hydra.utils.to_absolute_path(cfg.video.path) if video else None
    with contextlib.ExitStack() as stack:  # closed in reverse: the writer, the file, the env
        stack.callback(env.close)
        writer = _video_writer(stack, path, fps=1.0 / (env.task.dt * frame_every)) if video else None
        try:
            with _sigterm_as_interrupt():
                on_frame = (lambda f: writer.append_data(tile(f))) if writer else None
                stats = rollout(
                    env, policy, cfg.steps, seed=cfg.seed, on_frame=on_frame, frame_every=frame_every
                )
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the video so far is closed and kept
            stats, status = None, 128 + (signal.SIGTERM if isinstance(stop, _Terminated) else signal.SIGINT)
    if stats is None:
        print(f"stopped{f'; video so far: {path}' if video else ''}", file=sys.stderr)
        sys.exit(status)
    s = stats.summary()
    ran = f"{task} on {backend}: {stats.steps} steps x {cfg.num_envs} envs"
    if s["episodes"]:
        print(
            f"{ran}, {s['episodes']} episodes finished; return {s['return_mean']:.2f} +- "
            f"{s['return_std']:.2f}, length {s['length_mean']:.1f}, termination rate {s['termination_rate']:.2f}"
            + stats.metrics_text()
        )
    else:
        print(f"{ran}; no episode ended within the rollout")
    if video:
        print(f"video: {path}")
    if sweeping:
        ranges = env.dr.ranges() if env.dr is not None else {}
        print(f"metrics: {sweep.record(s, ranges, task=task, backend=backend, steps=stats.steps)}")


def _video_writer(stack: contextlib.ExitStack, path: str, fps: float):
    """An mp4 writer whose file appears under `path` only once it is closed, whole (unienv.utils.files):
    a run killed while it records leaves the previous video or none there, never half of one."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = stack.enter_context(written(path))
    writer = imageio.get_writer(temporary, fps=fps, codec="libx264", quality=7, macro_block_size=8)
    stack.callback(writer.close)
    return writer


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, as Ctrl-C raises KeyboardInterrupt."""


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """While active, SIGTERM (a scheduler's or `kill`'s stop) stops the run as Ctrl-C does."""

    def interrupt(signum, frame):
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    cli.run(main)  # a user's mistake: one line, no traceback (--debug shows it)
