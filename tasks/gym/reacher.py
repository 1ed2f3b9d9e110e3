"""Reacher: Gymnasium's Reacher-v5 on its own reacher.xml; touch the target with the fingertip.

A two-link planar arm. Observation blocks, after v5's terms: cos_arm and sin_arm
(2 each, of the two arm angles), target (2, its x, y: qpos[2:4]), arm_qvel (2,
the arm's joint speeds) and fingertip_to_target (2, the fingertip minus the
target, x and y). Action (2): joint torques in [-1, 1]. Reward
terms, as in v5, after the step: dist (-|fingertip - target|) and ctrl
(-|a|^2). Never terminates; truncated after 50 steps. Reset: arm qpos0 +
U(-0.1, 0.1), target uniform in the disk of radius 0.2 (v5 draws it by
rejection from the square; same distribution), arm qvel U(-5e-3, 5e-3),
target qvel 0. Needs body views only, read as v5 reads the body positions:
where mj_step leaves them, from its last RK4 stage (`substep_reads`).
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import read_state, v5_ctrl_cost, v5_total

ARM_JOINTS = 2  # reacher.xml: two arm hinges, then the target's two slides


@dataclasses.dataclass
class ReacherOptions(TaskOptions):
    episode_length_s: float = option(1.0, "s: an episode is truncated after it (50 steps)")
    reward_dist_weight: float = option(1.0, "weight of -|fingertip - target|")
    reward_control_weight: float = option(1.0, "weight of -|action|^2")


class Reacher(Task):
    name = "reacher"
    scene = os.path.join(GYM_ASSETS, "reacher.xml")
    sim_dt = 0.01
    decimation = 2
    root_body = "body0"
    arrays = "any"
    reward_threshold = -3.75  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 0.9, "azimuth": 90.0, "elevation": -90.0, "lookat": (0.0, 0.0, 0.0)}
    requires = ("body_views",)
    substep_reads = ("body_views",)
    Options = ReacherOptions

    def observation_blocks(self):
        n = ARM_JOINTS
        return {"cos_arm": n, "sin_arm": n, "target": 2, "arm_qvel": n, "fingertip_to_target": 2}

    def setup(self, backend):
        super().setup(backend)
        self.bodies = backend.find("body", ["fingertip", "target"])
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        pos = xp.asarray(backend.get_body_views(self.bodies).pos)
        s["to_target"] = pos[:, 0] - pos[:, 1]  # fingertip minus target
        return s

    def observe(self, s, memory):
        xp, q, arm = self.xp, s["qpos"], ARM_JOINTS
        theta = q[:, :arm]
        return xp.concat(
            (xp.cos(theta), xp.sin(theta), q[:, arm:], s["qvel"][:, :arm], s["to_target"][:, :2]), 1
        )

    def reward(self, s, prev, action, memory):
        terms = {
            "dist": -self.reward_dist_weight * self.xp.norm(s["to_target"]),
            "ctrl": v5_ctrl_cost(self, action, self.reward_control_weight),
        }
        return v5_total(terms), terms

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    def reset_state(self, env_ids, rng):
        xp = self.xp
        qpos = self.qpos0 + rng.uniform(tuple(self.qpos0.shape), -0.1, 0.1, dtype=self.dtype)
        radius = 0.2 * xp.sqrt(rng.uniform((1,), dtype=self.dtype))
        angle = rng.uniform((1,), 0.0, 2 * np.pi, dtype=self.dtype)
        qpos[:, 2:] = xp.concat((radius * xp.cos(angle), radius * xp.sin(angle)), 1)
        qvel = rng.uniform((self.nv,), -0.005, 0.005, dtype=self.dtype)
        qvel[:, 2:] = 0.0
        return qpos, qvel
