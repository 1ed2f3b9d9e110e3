"""Cartpole: balance the pole upright (default), or swing it up from hanging.

Observation blocks (one column each): x (the cart, m), cos_theta and sin_theta
(the pole's angle; theta = 0 is upright), x_dot, theta_dot.
Action: the cart force in [-1, 1] (x 20 N).
Balance: +1 per step while |theta| < 0.2 rad and |x| < 2.4 m, else the episode
terminates; the best return is max_episode_steps. Swing-up: the pole starts
hanging, the reward is the pole's uprightness (1 + cos theta) / 2 minus a small
control cost, and only leaving the rail terminates.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option, total
from unienv.tasks import ASSETS
from unienv.tasks.common import ctrl_cost

SCENE = os.path.join(ASSETS, "cartpole.xml")


@dataclasses.dataclass
class CartpoleOptions(TaskOptions):
    swingup: bool = option(False, "start hanging and swing up, instead of balancing from upright")
    episode_length_s: float = option(10.0, "s: an episode is truncated after it")
    max_angle: float = option(0.2, "rad: balance ends when |theta| reaches it")
    rail: float = option(2.4, "m: an episode ends when |x| reaches it")


class Cartpole(Task):
    name = "cartpole"
    scene = SCENE
    sim_dt = 0.01
    decimation = 2
    root_body = "cart"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    camera = {"distance": 5.0, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 0.3)}
    arrays = "any"
    Options = CartpoleOptions

    def observation_blocks(self):
        return {"x": 1, "cos_theta": 1, "sin_theta": 1, "x_dot": 1, "theta_dot": 1}

    def setup(self, backend):
        super().setup(backend)
        self.x = backend.joint_qpos_slice("slider").start
        self.theta = backend.joint_qpos_slice("hinge").start
        self.nq, self.nv = backend.nq, backend.nv
        self.cos_max_angle = float(np.cos(self.max_angle))

    def read(self, backend):
        xp, views = self.xp, backend.get_state_views()
        q, v = xp.asarray(views["qpos"]), xp.asarray(views["qvel"])
        x, theta = slice(self.x, self.x + 1), slice(self.theta, self.theta + 1)  # (N, 1) columns
        angle = q[:, theta]
        obs = xp.concat((q[:, x], xp.cos(angle), xp.sin(angle), v[:, x], v[:, theta]), 1)
        off_rail = xp.abs(obs[:, 0]) > self.rail
        fallen = off_rail if self.swingup else off_rail | (obs[:, 1] < self.cos_max_angle)  # |theta| > max
        return {"obs": obs, "out": fallen}

    def observe(self, s, memory):
        return s["obs"]

    def reward(self, s, prev, action, memory):
        if self.swingup:
            terms = {"upright": (1.0 + s["obs"][:, 1]) / 2.0, "ctrl": ctrl_cost(action, 0.01)}
        else:
            terms = {"alive": self.xp.astype(~s["out"], self.dtype)}
        return total(terms), terms

    def terminated(self, s, memory):
        return s["out"]

    def reset_state(self, env_ids, rng):
        state = rng.uniform((self.nq + self.nv,), -0.05, 0.05, dtype=self.dtype)  # qpos, then qvel
        qpos, qvel = state[:, : self.nq], state[:, self.nq :]
        if self.swingup:
            qpos[:, self.theta] += np.pi
        return qpos, qvel
