"""HalfCheetah: Gymnasium's HalfCheetah-v5 on its own half_cheetah.xml; run forward along +x.

Observation blocks, as v5 names them: qpos (8, without the root x), qvel (9).
Action (6): joint
torques in [-1, 1]. Reward terms, as in v5: forward (root x velocity over the
env step) and ctrl (-0.1 |a|^2). Never terminates; truncated after 1000 steps.
Reset: qpos0 + U(-0.1, 0.1), qvel N(0, 0.1^2). Needs only qpos and qvel, so it
runs on every backend; on mujoco it matches v5 to float precision.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import forward_velocity, noisy_reset, read_state, v5_ctrl_cost, v5_total

NQ, NV = 9, 9  # half_cheetah.xml: root x, z, angle and 6 hinges


@dataclasses.dataclass
class HalfCheetahOptions(TaskOptions):
    episode_length_s: float = option(50.0, "s: an episode is truncated after it (1000 steps)")
    forward_reward_weight: float = option(1.0, "weight of the root's x velocity")
    ctrl_cost_weight: float = option(0.1, "weight of -|action|^2")
    reset_noise_scale: float = option(0.1, "reset: qpos0 + U(-s, s), qvel N(0, s^2)")


class HalfCheetah(Task):
    name = "half_cheetah"
    scene = os.path.join(GYM_ASSETS, "half_cheetah.xml")
    sim_dt = 0.01
    decimation = 5
    root_body = "torso"
    arrays = "any"
    reward_threshold = 4800.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    Options = HalfCheetahOptions

    def observation_blocks(self):
        return {"qpos": NQ - 1, "qvel": NV}

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
            "ctrl": v5_ctrl_cost(self, action, self.ctrl_cost_weight),
        }
        return v5_total(terms), terms

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale, gaussian_qvel=True)
