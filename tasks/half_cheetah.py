"""HalfCheetah: Gymnasium's HalfCheetah-v5 on its own half_cheetah.xml; run forward along +x.

Observation (17): qpos without the root x (8), then qvel (9). Action (6): joint
torques in [-1, 1]. Reward terms, as in v5: forward (root x velocity over the
env step) and ctrl (-0.1 |a|^2). Never terminates; truncated after 1000 steps.
Reset: qpos0 + U(-0.1, 0.1), qvel N(0, 0.1^2). Needs only qpos and qvel, so it
runs on every backend; on mujoco it matches v5 to float precision.
"""

import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, total
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import ctrl_cost, forward_velocity, noisy_reset, read_state


class HalfCheetah(Task):
    name = "half_cheetah"
    scene = os.path.join(GYM_ASSETS, "half_cheetah.xml")
    sim_dt = 0.01
    decimation = 5
    root_body = "torso"
    arrays = "any"
    reward_threshold = 4800.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (17,), np.float64)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}

    def __init__(
        self,
        episode_length_s: float = 50.0,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
        reset_noise_scale: float = 0.1,
    ):
        self.episode_length_s = episode_length_s
        self.forward_reward_weight = forward_reward_weight
        self.ctrl_cost_weight = ctrl_cost_weight
        self.reset_noise_scale = reset_noise_scale

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        return read_state(self, backend)

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"][:, 1:], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        terms = {
            "forward": self.forward_reward_weight
            * forward_velocity(s["qpos"][:, 0], prev["qpos"][:, 0], self.dt),
            "ctrl": ctrl_cost(action, self.ctrl_cost_weight),
        }
        return total(terms), terms

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale, gaussian_qvel=True)
