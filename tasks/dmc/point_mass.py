"""dm_control's point_mass easy: drive a point mass in a walled plane to the target at the centre.

Model: dm_control's point_mass.xml (0.02 s), one env step per physics step, 1000 steps.
Action (2): the two tendon motors (x and y; the easy task keeps the model's gains).
Observation (4): position = qpos (2), velocity = qvel (2). Reward: near_target x
small_control, with near_target = tolerance(|target - mass|, (0, r), margin r) for the
target's radius r = 0.015 and small_control = (4 + mean tolerance(ctrl, margin 1,
quadratic)) / 5. Reset: x, y ~ U(joint range), at rest.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, tolerance

BLOCKS = {"position": 2, "velocity": 2}
TARGET = (0.0, 0.0, 0.01)  # the target geom's position (fixed to the world)
TARGET_SIZE = 0.015  # its radius


class PointMassEasy(DMCTask):
    name = "dmc_point_mass_easy"
    domain = "point_mass"
    sim_dt = 0.02
    decimation = 1
    time_limit = 20.0
    root_body = "pointmass"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    camera = {"distance": 1.0, "azimuth": 90.0, "elevation": -89.0, "lookat": (0.0, 0.0, 0.0)}

    def resolve(self, backend):
        self.mass = backend.find("body", ["pointmass"])  # its geom sits at the body's origin
        self.target = self.array(TARGET)

    def read(self, backend):
        s = self.read_state(backend)
        s["distance"] = self.xp.norm(
            self.target - self.xp.asarray(backend.get_body_views(self.mass).pos)[:, 0]
        )
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        xp = self.xp
        near = tolerance(xp, s["distance"], (0.0, TARGET_SIZE), margin=TARGET_SIZE)
        control = tolerance(xp, s["ctrl"], margin=1.0, value_at_margin=0.0, sigmoid="quadratic").mean(1)
        r = near * (control + 4.0) / 5.0
        return r, {"near_target": r}
