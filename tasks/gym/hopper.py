"""Hopper: Gymnasium's Hopper-v5 on its own hopper.xml; hop forward along +x.

Observation blocks, as v5 names them: qpos (5, without the root x), qvel (6,
clipped to [-10, 10]). Action (3): thigh, leg and foot torques in [-1, 1]. Reward terms, as in
v5: forward (root x velocity over the env step), healthy (1 while healthy) and
ctrl (-1e-3 |a|^2). Healthy: every qpos[2:], qvel entry inside (-100, 100),
torso height z in (0.7, inf), torso angle in (-0.2, 0.2); the episode
terminates when unhealthy, and is truncated after 1000 steps. Reset: qpos0 and
zero qvel plus U(-5e-3, 5e-3). Runs on every backend; on mujoco it matches v5
to float precision.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import locomotion_terms, noisy_reset, read_state, unhealthy, v5_total

NQ, NV = 6, 6  # hopper.xml: root x, z, angle and 3 hinges


@dataclasses.dataclass
class HopperOptions(TaskOptions):
    episode_length_s: float = option(8.0, "s: an episode is truncated after it (1000 steps)")
    forward_reward_weight: float = option(1.0, "weight of the root's x velocity")
    ctrl_cost_weight: float = option(1e-3, "weight of -|action|^2")
    healthy_reward: float = option(1.0, "reward per step while healthy")
    terminate_when_unhealthy: bool = option(True, "end the episode when unhealthy")
    healthy_state_range: tuple[float, float] = option(
        (-100.0, 100.0), "healthy while every qpos[2:] and qvel entry is inside it"
    )
    healthy_z_range: tuple[float, float] = option(
        (0.7, float("inf")), "m: healthy while the torso's z is in it"
    )
    healthy_angle_range: tuple[float, float] = option(
        (-0.2, 0.2), "rad: healthy while the torso's angle is in it"
    )
    reset_noise_scale: float = option(5e-3, "reset: qpos0 + U(-s, s), qvel U(-s, s)")


class Hopper(Task):
    name = "hopper"
    scene = os.path.join(GYM_ASSETS, "hopper.xml")
    sim_dt = 0.002
    decimation = 4
    root_body = "torso"
    arrays = "any"
    reward_threshold = 3800.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    Options = HopperOptions

    def observation_blocks(self):
        return {"qpos": NQ - 1, "qvel": NV}

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv
        # v5's three health ranges as one per-column range over (z, angle, qpos[3:], qvel): the
        # state range covers qpos[2:] (the angle first) and qvel, z and the angle have their own
        (low, high), z, angle = self.healthy_state_range, self.healthy_z_range, self.healthy_angle_range
        rest = backend.nq - 3 + backend.nv
        self.healthy_low = self.array([z[0], max(low, angle[0])] + [low] * rest)
        self.healthy_high = self.array([z[1], min(high, angle[1])] + [high] * rest)

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        z_angle_state = xp.concat((s["qpos"][:, 1:], s["qvel"]), 1)
        s["healthy"] = ((z_angle_state > self.healthy_low) & (z_angle_state < self.healthy_high)).all(1)
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
