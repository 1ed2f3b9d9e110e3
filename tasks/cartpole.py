"""Cartpole: balance the pole upright (default), or swing it up from hanging.

Observation: [x, cos(theta), sin(theta), x_dot, theta_dot]; theta = 0 is upright.
Action: the cart force in [-1, 1] (x 20 N).
Balance: +1 per step while |theta| < 0.2 rad and |x| < 2.4 m, else the episode
terminates; the best return is max_episode_steps. Swing-up: the pole starts
hanging, the reward is the pole's uprightness (1 + cos theta) / 2 minus a small
control cost, and only leaving the rail terminates.
"""

import os

import gymnasium as gym
import numpy as np
import torch

from unienv.task import Task

SCENE = os.path.join(os.path.dirname(__file__), "assets", "cartpole.xml")


class Cartpole(Task):
    name = "cartpole"
    scene = SCENE
    sim_dt = 0.01
    decimation = 2
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    camera = {"distance": 5.0, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 0.3)}

    def __init__(
        self, swingup: bool = False, episode_length_s: float = 10.0, max_angle: float = 0.2, rail: float = 2.4
    ):
        self.swingup = swingup
        self.episode_length_s = episode_length_s
        self.max_angle = max_angle
        self.rail = rail

    def setup(self, backend):
        self.x = backend.joint_qpos_slice("slider").start
        self.theta = backend.joint_qpos_slice("hinge").start
        self.nq, self.nv = backend.nq, backend.nv

    def action_to_ctrl(self, action):
        return action.to(torch.float64)

    def observe(self, backend):
        s = backend.get_state_views()
        x, theta = s["qpos"][:, self.x], s["qpos"][:, self.theta]
        obs = (x, torch.cos(theta), torch.sin(theta), s["qvel"][:, self.x], s["qvel"][:, self.theta])
        return torch.stack(obs, dim=1).to(torch.float32)

    def reward(self, backend, action):
        theta = backend.get_state_views()["qpos"][:, self.theta]
        if self.swingup:
            terms = {
                "upright": (1.0 + torch.cos(theta)) / 2.0,
                "ctrl": -0.01 * (action.to(torch.float64) ** 2).sum(1),
            }
        else:
            terms = {"alive": (~self.terminated(backend)).to(torch.float64)}
        return sum(terms.values()), terms

    def terminated(self, backend):
        q = backend.get_state_views()["qpos"]
        off_rail = q[:, self.x].abs() > self.rail
        if self.swingup:
            return off_rail
        return off_rail | (torch.remainder(q[:, self.theta] + torch.pi, 2 * torch.pi) - torch.pi).abs().gt(
            self.max_angle
        )

    def reset_state(self, env_ids, rng):
        qpos = rng.uniform((self.nq,), -0.05, 0.05)
        qvel = rng.uniform((self.nv,), -0.05, 0.05)
        if self.swingup:
            qpos[:, self.theta] += torch.pi
        return qpos, qvel
