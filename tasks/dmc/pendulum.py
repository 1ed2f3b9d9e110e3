"""dm_control's pendulum swingup: swing a torque-limited pendulum up and hold it.

Model: dm_control's pendulum.xml (0.02 s), one env step per physics step, 1000 steps.
Action (1): the hinge motor. Observation (3): orientation = the pole's xmat [zz, xz]
(cos and sin of its angle from upright), velocity = the hinge's angular velocity.
Reward: 1 while the pole is within 8 degrees of upright (tolerance of xmat zz in
[cos 8 deg, 1], no margin), else 0. Reset: hinge angle ~ U(-pi, pi), at rest.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {"orientation": 2, "velocity": 1}
COSINE_BOUND = float(np.cos(np.deg2rad(8.0)))


class PendulumSwingup(DMCTask):
    name = "dmc_pendulum_swingup"
    domain = "pendulum"
    sim_dt = 0.02
    decimation = 1
    time_limit = 20.0
    root_body = "pole"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    camera = {"distance": 2.5, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 0.6)}

    def resolve(self, backend):
        self.pole = backend.find("body", ["pole"])

    def read(self, backend):
        s = self.read_state(backend)
        xmat = self.xmat(backend, self.pole)[:, 0]
        s["orientation"] = self.xp.stack((xmat[:, XMAT["zz"]], xmat[:, XMAT["xz"]]), 1)
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["orientation"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        r = tolerance(self.xp, s["orientation"][:, 0], (COSINE_BOUND, 1.0))
        return r, {"upright": r}
