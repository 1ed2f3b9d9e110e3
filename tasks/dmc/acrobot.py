"""dm_control's acrobot swingup: swing a two-link underactuated pendulum's tip to a target above.

Model: dm_control's acrobot.xml (RK4, 0.01 s), one env step per physics step, 1000 steps.
Action (1): the elbow motor. Observation (6): orientations = xmat xz of the upper and
lower arm, then their xmat zz (4), velocity = qvel (2). Reward: tolerance(|target - tip|,
(0, target radius 0.2), margin 1, gaussian); sparse: margin 0 (1 inside the target, else
0). Reset: shoulder and elbow ~ U(-pi, pi), at rest. Needs `mj_fields` (site positions).
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {"orientations": 4, "velocity": 2}
TARGET_RADIUS = 0.2  # the target site's size


class AcrobotSwingup(DMCTask):
    name = "dmc_acrobot_swingup"
    domain = "acrobot"
    sim_dt = 0.01
    decimation = 1
    time_limit = 10.0
    root_body = "upper_arm"
    requires = ("mj_fields",)
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    camera = {"distance": 6.0, "azimuth": 90.0, "elevation": -5.0, "lookat": (0.0, 0.0, 2.0)}
    sparse = False

    def resolve(self, backend):
        self.arms = backend.find("body", ["upper_arm", "lower_arm"])
        self.sites = backend.find("site", ["target", "tip"])

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        xmat = self.xmat(backend, self.arms)
        s["orientations"] = xp.concat((xmat[:, :, XMAT["xz"]], xmat[:, :, XMAT["zz"]]), 1)
        sites = xp.asarray(backend.get_mj_field("site_xpos"))[:, self.sites]
        s["distance"] = xp.norm(sites[:, 0] - sites[:, 1])
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["orientations"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        r = tolerance(self.xp, s["distance"], (0.0, TARGET_RADIUS), margin=0.0 if self.sparse else 1.0)
        return r, {"at_target": r}


class AcrobotSwingupSparse(AcrobotSwingup):
    name = "dmc_acrobot_swingup_sparse"
    sparse = True
