"""The Pixels page's picture of both camera looks, and each look's cost per frame.

    python scripts/pixel_looks.py                     # the six tasks below
    python scripts/pixel_looks.py dmc_hopper_hop --frames 50

For each task: one pixel env (`obs="pixels"`, 84 x 84, camera 0) per look on the mujoco backend,
seed 0, 20 agent steps of the same random actions (the look changes no physics), then the newest
frame: docs/pixels_looks.png has the "scene" look's frames on the top row and the "learning"
look's below, each pixel drawn 3 x 3 so that an 84 x 84 frame can be seen. It prints one table
line per task: each look's milliseconds per frame (the env's camera drawing that state again,
one render thread, the best of 3 rounds of `--frames` frames) and their ratio.
"""

from __future__ import annotations

import argparse
import os
import time

import imageio.v3 as iio
import numpy as np
import torch

import unienv
from unienv.render.cameras import LOOKS

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
TASKS = ["dmc_cheetah_run", "dmc_walker_walk", "dmc_humanoid_walk", "dmc_cartpole_swingup", "dmc_finger_spin", "dmc_reacher_easy"]  # fmt: skip
ENLARGE = 3


def frame_and_cost(task: str, look: str, frames: int) -> tuple[np.ndarray, float]:
    """The newest (84, 84, 3) frame of `task` after 20 random steps in `look`, and the seconds a
    frame of that state costs (one render thread, best of 3 rounds of `frames`)."""
    env = unienv.make(task, obs="pixels", seed=0, pixels={"look": look, "render_threads": 1})
    obs, _ = env.reset(seed=0)
    rng = torch.Generator().manual_seed(0)
    for _ in range(20):
        obs = env.step(torch.rand(env.action_space.shape, generator=rng) * 2 - 1)[0]
    sensor = env.unwrapped._observer.sensor
    out = sensor.empty(1)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(frames):
            sensor.render(out)
        best = min(best, (time.perf_counter() - start) / frames)
    env.close()
    return obs[0, -3:].permute(1, 2, 0).numpy(), best


def main(argv: list[str] | None = None) -> np.ndarray:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tasks", nargs="*", default=TASKS)
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--out", default=os.path.join(DOCS, "pixels_looks.png"))
    args = p.parse_args(argv)
    print(f"| task | {' | '.join(f'{look} ms per frame' for look in LOOKS)} | {LOOKS[0]} / {LOOKS[1]} |")
    print("|---" * (len(LOOKS) + 2) + "|")
    rows = {look: [] for look in LOOKS}
    for task in args.tasks:
        cost = {}
        for look in LOOKS:
            frame, cost[look] = frame_and_cost(task, look, args.frames)
            rows[look].append(frame)
        costs = " | ".join(f"{1000 * cost[look]:.1f}" for look in LOOKS)
        print(f"| {task} | {costs} | {cost[LOOKS[0]] / cost[LOOKS[1]]:.1f}x |")
    grid = np.concatenate([np.concatenate(rows[look], 1) for look in LOOKS], 0)
    grid = grid.repeat(ENLARGE, 0).repeat(ENLARGE, 1)
    iio.imwrite(args.out, grid)
    return grid


if __name__ == "__main__":
    main()
