"""The gallery page's frames: one per task, as `python play.py` draws it.

    python scripts/gallery.py                    # every task: docs/frames/<task>.jpg
    python scripts/gallery.py go1_velocity hopper   # some tasks

Each task is played as play.py plays it (`python play.py task=<task> num_envs=1 video.width=400
video.height=400`): one env on the mujoco backend, the task's own video
camera (the mobile robots' tracks their base), `policy=<shipped name>` where unienv ships a
policy for the task (the Go1's trot) and the zero action otherwise, for `STEPS` steps with the
seed 0; the frame after them is written as a JPEG (400 x 400, quality 85). Where the task names
its robot (`Task.root_body`), the robot's share of the frame (from the same view's segmentation:
its pixels, and its bounding box) is printed beside it; the docs' test holds each robot's box to
at least a quarter of the frame (tests/docs/test_gallery.py). The gallery page (docs/gallery.md) lists whatever frames are there.
"""

from __future__ import annotations

import os
import sys

import imageio.v2 as imageio
import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "docs", "frames")
SIZE = (400, 400)  # height, width: square, so that a standing humanoid fills its frame as a quadruped does
STEPS = 50  # a second at the robots' 50 Hz: the robot settled on its feet, the pendulums moving
SHIPPED = {"go1_velocity": "go1_trot"}  # tasks played with the policy unienv ships for them


def played(task: str):
    """(env, policy) as `python play.py task=<task> num_envs=1 policy=<...>` builds them."""
    import unienv
    from unienv.training.rollout import make_policy
    from unienv.training.shipped import played_env

    policy, task, options = played_env(SHIPPED.get(task, "zero"), task, {}, [f"task={task}"])
    env = unienv.make(
        task, num_envs=1, seed=0, task_options=options, render_mode="rgb_array", render_size=SIZE
    )
    return env, make_policy(policy, env)


def robot_share(env) -> tuple[float, float] | None:
    """How much of the env's video frame shows its robot (the bodies of the tree that holds
    `Task.root_body`), from a segmentation of the same view: (the fraction of its pixels, the
    fraction of the frame its bounding box covers); None for a task that names no robot."""
    root = env.task.root_body
    if root is None:
        return None
    renderer = env._renderer  # the env's video renderer, made by its first render()
    model = renderer.model
    tree = model.body_rootid[model.body(root).id]
    robot_geoms = np.flatnonzero(model.body_rootid[model.geom_bodyid] == tree)
    qpos = env.backend.get_state_views()["qpos"][:1].cpu().numpy()
    segmentation = np.empty((1, *SIZE), np.int32)
    renderer.pool.render(qpos, [renderer.view], {"segmentation": segmentation})
    robot = np.isin(segmentation[0], robot_geoms)
    if not robot.any():
        return 0.0, 0.0
    rows, columns = np.flatnonzero(robot.any(1)), np.flatnonzero(robot.any(0))
    box = (rows[-1] - rows[0] + 1) * (columns[-1] - columns[0] + 1)
    return float(robot.mean()), float(box / robot.size)


def frame(task: str, steps: int = STEPS) -> tuple[np.ndarray, tuple[float, float] | None]:
    """The task's frame after `steps` steps of its gallery policy, and its robot's share of it."""
    env, policy = played(task)
    try:
        obs, _ = env.reset(seed=0)
        with torch.no_grad():
            for _ in range(steps):
                obs = env.step(policy(obs))[0]
        image = env.render()[0]
        return image, robot_share(env)
    finally:
        env.close()


def main(tasks: list[str]) -> None:
    from unienv.tasks import TASKS

    os.makedirs(OUT, exist_ok=True)
    for task in tasks or list(TASKS):
        image, share = frame(task)
        path = os.path.join(OUT, f"{task}.jpg")
        imageio.imwrite(path, image, quality=85)
        robot = (
            ""
            if share is None
            else f"  robot: {share[0]:.0%} of the pixels, its box {share[1]:.0%} of the frame"
        )
        print(path + robot, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
