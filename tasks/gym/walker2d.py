"""Walker2d: Gymnasium's Walker2d-v5 on its own walker2d_v5.xml; walk forward along +x.

Observation blocks, as v5 names them: qpos (8, without the root x), qvel (9,
clipped to [-10, 10]). Action (6): hip, knee and foot torques of both legs in [-1, 1]. Reward
terms, as in v5: forward (root x velocity over the env step), healthy (1 while
healthy) and ctrl (-1e-3 |a|^2). Healthy: torso height z in (0.8, 2.0) and
torso angle in (-1, 1); the episode terminates when unhealthy, and is truncated
after 1000 steps. Reset: qpos0 and zero qvel plus U(-5e-3, 5e-3). Runs on
every backend; on mujoco it matches v5 to float precision.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import locomotion_terms, noisy_reset, read_state, unhealthy, v5_total

NQ, NV = 9, 9  # walker2d_v5.xml: root x, z, angle and 6 hinges


@dataclasses.dataclass
class Walker2dOptions(TaskOptions):
    episode_length_s: float = option(8.0, "s: an episode is truncated after it (1000 steps)")
    forward_reward_weight: float = option(1.0, "weight of the root's x velocity")
    ctrl_cost_weight: float = option(1e-3, "weight of -|action|^2")
    healthy_reward: float = option(1.0, "reward per step while healthy")
    terminate_when_unhealthy: bool = option(True, "end the episode when unhealthy")
    healthy_z_range: tuple[float, float] = option((0.8, 2.0), "m: healthy while the torso's z is in it")
    healthy_angle_range: tuple[float, float] = option(
        (-1.0, 1.0), "rad: healthy while the torso's angle is in it"
    )
    reset_noise_scale: float = option(5e-3, "reset: qpos0 + U(-s, s), qvel U(-s, s)")


class Walker2d(Task):
    name = "walker2d"
    scene = os.path.join(GYM_ASSETS, "walker2d_v5.xml")
    sim_dt = 0.002
    decimation = 4
    root_body = "torso"
    arrays = "any"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    Options = Walker2dOptions

    def observation_blocks(self):
        return {"qpos": NQ - 1, "qvel": NV}

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv
        # the healthy ranges of (z, angle), qpos[1:3], as columns
        self.healthy_low, self.healthy_high = self.array((self.healthy_z_range, self.healthy_angle_range)).T

    def read(self, backend):
        s = read_state(self, backend)
        z_angle = s["qpos"][:, 1:3]
        s["healthy"] = ((z_angle > self.healthy_low) & (z_angle < self.healthy_high)).all(1)
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"][:, 1:], self.xp.clip(s["qvel"], -10.0, 10.0)), 1)

    def reward(self, s, prev, action, memory):
        terms = locomotion_terms(self, s, prev, action)
        return v5_total(terms), terms

    def terminated(self, s, memory):
        return unhealthy(self, s)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale)
