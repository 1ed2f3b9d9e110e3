"""Reach: move the end effector of a 7-DoF arm (assets/arm7.xml) to a target point.

The arm's joints are driven by the scene's position servos. Action (7): joint
position targets, [-1, 1] mapped onto each servo's control range (0 is the
middle of every range: the arm upright). The target
is sampled per episode, uniformly in a box of the workspace in front of the
arm (`target_box`, metres, world frame). Observation blocks: joint_pos (7),
joint_vel (7), ee_pos (3, the end-effector site "ee"), target_pos (3) and
ee_to_target (3, target minus ee). Reward terms: distance (-|ee - target|), precision
(exp(-|ee - target|^2 / 0.05^2)) and joint speed (-1e-3 |qdot|^2): the reward
is maximal, 1, at the target at rest. Never terminates; truncated after
`episode_length_s`. Reset: the "home" pose plus U(-0.1, 0.1) rad per joint, at
rest. The target shows as the scene's mocap body "target", a green ball that each reset
moves there (where the backend has mocap; renders show it on every backend). Needs body
views only: the ee is link7's frame moved by EE_OFFSET, where arm7.xml puts the site (a
test checks it against MuJoCo's site position).
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option, total
from unienv.tasks import ASSETS
from unienv.tasks.common import read_state, rotate

EE_OFFSET = (0.0, 0.0, 0.045)  # the "ee" site in link7's frame


@dataclasses.dataclass
class ReachOptions(TaskOptions):
    episode_length_s: float = option(4.0, "s: an episode is truncated after it")
    target_box: tuple = option(
        ((0.3, -0.4, 0.2), (0.7, 0.4, 0.8)), "m, world frame: the targets' box, its low and high corners"
    )
    distance_weight: float = option(1.0, "weight of -|ee - target|")
    precision_weight: float = option(1.0, "weight of exp(-(|ee - target| / precision_scale)^2)")
    precision_scale: float = option(0.05, "m: the precision term's width")
    joint_speed_weight: float = option(1e-3, "weight of -|qdot|^2")

    def __post_init__(self):
        super().__post_init__()
        self.target_box = tuple(tuple(float(x) for x in corner) for corner in self.target_box)


class Reach(Task):
    name = "reach"
    scene = os.path.join(ASSETS, "arm7.xml")
    sim_dt = 0.002
    decimation = 10
    root_body = "link1"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (7,), np.float32)
    camera = {"distance": 2.5, "azimuth": 135.0, "elevation": -25.0, "lookat": (0.3, 0.0, 0.5)}
    requires = ("body_views",)
    arrays = "any"
    Options = ReachOptions

    def observation_blocks(self):
        joints = self.single_action_space.shape[0]  # one position servo per joint
        return {"joint_pos": joints, "joint_vel": joints, "ee_pos": 3, "target_pos": 3, "ee_to_target": 3}

    def setup(self, backend):
        super().setup(backend)
        backend.find("site", "ee")  # the scene must have it
        info = backend.info
        self.link7 = backend.find("body", "link7")
        self.home = self.array(info.keyframes["home"])
        low, high = self.array(info.ctrl_range).T
        self.ctrl_mid, self.ctrl_half = (high + low) / 2, (high - low) / 2
        self.offset = self.array(EE_OFFSET)
        self.target_low, self.target_high = self.array(self.target_box)
        self.upright = self.array((1.0, 0.0, 0.0, 0.0))
        self.nv = backend.nv

    def action_to_ctrl(self, action):
        return self.ctrl_mid + self.ctrl_half * action

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        b = backend.get_body_views(self.link7)
        pos, quat = xp.asarray(b.pos)[:, 0], xp.asarray(b.quat)[:, 0]
        s["ee"] = pos + rotate(xp, quat, self.offset)  # a new array: kept past the next step
        return s

    def observe(self, s, memory):
        ee, target = s["ee"], memory["target"]
        return self.xp.concat((s["qpos"], s["qvel"], ee, target, target - ee), 1)

    def reward(self, s, prev, action, memory):
        xp, qvel = self.xp, s["qvel"]
        distance = xp.norm(s["ee"] - memory["target"])
        terms = {
            "distance": -self.distance_weight * distance,
            "precision": self.precision_weight * xp.exp(-((distance / self.precision_scale) ** 2)),
            "joint_speed": -self.joint_speed_weight * (qvel * qvel).sum(1),
        }
        return total(terms), terms

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    def reset_state(self, env_ids, rng):
        qpos = self.home + rng.uniform(tuple(self.home.shape), -0.1, 0.1, dtype=self.dtype)
        return qpos, self.xp.zeros((rng.rows, self.nv), self.dtype)

    def reset_memory(self, rng):
        return {"target": rng.uniform((3,), self.target_low, self.target_high, dtype=self.dtype)}

    def mocap_pose(self, memory):
        target = memory["target"]
        return target[:, None], self.xp.broadcast_to(self.upright, (len(target), 1, 4))
