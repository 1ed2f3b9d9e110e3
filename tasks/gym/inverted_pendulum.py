"""InvertedPendulum: Gymnasium's InvertedPendulum-v5 on its own inverted_pendulum.xml.

Balance a pole on a cart. Observation blocks, as v5 names them: qpos (2: cart
x, hinge angle), qvel (2). Action (1): cart force in [-3, 3]. Reward: alive, 1 per step while the
pole stays within 0.2 rad of upright; the episode terminates when it leaves
(or the state is not finite), and is truncated after 1000 steps. Reset: qpos0
and zero qvel plus U(-0.01, 0.01). Runs on every backend; on mujoco it matches
v5 to float precision.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import noisy_reset

NQ, NV = 2, 2  # inverted_pendulum.xml: the cart's slider and the hinge


@dataclasses.dataclass
class InvertedPendulumOptions(TaskOptions):
    episode_length_s: float = option(40.0, "s: an episode is truncated after it (1000 steps)")
    reset_noise_scale: float = option(0.01, "reset: qpos0 + U(-s, s), qvel U(-s, s)")


class InvertedPendulum(Task):
    name = "inverted_pendulum"
    scene = os.path.join(GYM_ASSETS, "inverted_pendulum.xml")
    sim_dt = 0.02
    decimation = 2
    root_body = "cart"
    arrays = "any"
    reward_threshold = 950.0  # v5's
    single_action_space = gym.spaces.Box(-3.0, 3.0, (1,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 3.0, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 0.3)}
    Options = InvertedPendulumOptions

    def observation_blocks(self):
        return {"qpos": NQ, "qvel": NV}

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, views = self.xp, backend.get_state_views()
        obs = xp.concat((xp.asarray(views["qpos"]), xp.asarray(views["qvel"])), 1)  # a copy
        return {"obs": obs, "fallen": ~xp.isfinite(obs).all(1) | (xp.abs(obs[:, 1]) > 0.2)}

    def observe(self, s, memory):
        return s["obs"]

    def reward(self, s, prev, action, memory):
        terms = {"alive": self.xp.astype(~s["fallen"], self.dtype)}
        return terms["alive"], terms

    def terminated(self, s, memory):
        return s["fallen"]

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale)
