"""The evaluation after training: the saved policy file, deterministic, on fresh envs."""

from __future__ import annotations

import os

import numpy as np

import unienv
from unienv.dr import full_range
from unienv.training.config import env_options
from unienv.training.gait import GaitRecorder, gait_text
from unienv.training.rollout import make_policy, rollout
from unienv.utils import plots
from unienv.utils.numbers import finite_or_none as _number

FOOTFALL_SECONDS = 2.0  # the footfall diagram's span, at the evaluation's end


def evaluate(cfg, device, path) -> dict | None:
    """Roll the saved policy file out deterministically on fresh envs (the run's task, backend and
    DR at its full range, ramps done, seeded seed + 10000); print and return its episode statistics (and, for a velocity task,
    its gait, with a footfall diagram `footfalls.png` beside the policy file)."""
    steps = cfg.train.eval_steps
    if steps == 0:
        return None
    task, backend, task_options, backend_options = env_options(cfg)
    env = unienv.make(
        task,
        backend=backend,
        num_envs=cfg.num_envs,
        device=device,
        seed=cfg.seed + 10_000,
        dr=full_range(cfg.dr),
        task_options=task_options,
        backend_options=backend_options,
    )
    gait = GaitRecorder.of(env)
    try:
        policy = make_policy(path, env)
        stats = rollout(env, policy, steps or env.max_episode_steps, on_step=gait, progress=False)
    finally:
        env.close()
    s = stats.summary()
    print(
        f"eval: {s['episodes']} episodes, return {s['return_mean']:.2f} +- {s['return_std']:.2f}, "
        f"length {s['length_mean']:.1f}, termination rate {s['termination_rate']:.2f}"
        + ("" if gait else stats.metrics_text())
    )
    result = {
        k: v if isinstance(v, int) else _number(v)
        for k, v in s.items()
        if gait is None or k.removesuffix("_mean") not in stats.metrics
    }
    result |= {"steps": stats.steps, "num_envs": env.num_envs}
    if gait is not None:
        result["gait"] = gait.summary()
        print(gait_text(result["gait"]))
        contact = np.stack(gait.contacts)[-int(round(FOOTFALL_SECONDS / gait.dt)) :, 0]  # env 0, the last 2 s
        figure = os.path.join(os.path.dirname(os.path.abspath(path)), "footfalls.png")
        plots.footfalls(contact, gait.feet, gait.dt, figure, f"{task}: env 0's feet on the ground (dark)")
    return result
