"""Ant: make Gymnasium's quadruped ant (its own ant.xml) run forward along +x.

Gymnasium's Ant-v5 with include_cfrc_ext_in_observation=False, on every
backend. Observation (27): qpos without the torso's x, y (13), then qvel (14).
Action (8): hip and ankle torques in [-1, 1]. Reward terms, as in v5:
forward (torso x velocity), healthy (1 while 0.2 <= torso z <= 1), ctrl
(-0.5 |a|^2) and contact (-5e-4 |clip(F, -1, 1)|^2 over the net contact force
F on each body). Deliberate difference: v5's contact term also squares the
contact torques of MuJoCo's cfrc_ext; here it uses forces only, which every
backend reports in the same frame. Terminates when unhealthy.
"""

import os

import gymnasium as gym
import numpy as np
import torch

from unienv.task import Task

SCENE = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", "ant.xml")


class Ant(Task):
    name = "ant"
    scene = SCENE
    sim_dt = 0.01
    decimation = 5
    single_action_space = gym.spaces.Box(-1.0, 1.0, (8,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (27,), np.float64)
    camera = {"distance": 5.0, "azimuth": 90.0, "elevation": -20.0, "track_body": "torso"}

    def __init__(
        self,
        episode_length_s: float = 50.0,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.5,
        contact_cost_weight: float = 5e-4,
        healthy_reward: float = 1.0,
        healthy_z_range: tuple[float, float] = (0.2, 1.0),
        reset_noise_scale: float = 0.1,
    ):
        self.episode_length_s = episode_length_s
        self.forward_reward_weight = forward_reward_weight
        self.ctrl_cost_weight = ctrl_cost_weight
        self.contact_cost_weight = contact_cost_weight
        self.healthy_reward = healthy_reward
        self.healthy_z_range = tuple(healthy_z_range)
        self.reset_noise_scale = reset_noise_scale

    def setup(self, backend):
        self.torso = backend.find("body", "torso")
        self.bodies = np.arange(1, len(backend.names("body")))  # all but the world
        self.qpos0 = torch.as_tensor(backend.info.qpos0, device=backend.device)
        self.nv = backend.nv
        self.x_before = torch.zeros(backend.num_envs, dtype=torch.float64, device=backend.device)

    def action_to_ctrl(self, action):
        return action.to(torch.float64)

    def observe(self, backend):
        s = backend.get_state_views()
        return torch.cat((s["qpos"][:, 2:], s["qvel"]), dim=1)

    def healthy(self, backend):
        s = backend.get_state_views()
        z = s["qpos"][:, 2]
        finite = torch.isfinite(s["qpos"]).all(1) & torch.isfinite(s["qvel"]).all(1)
        return finite & (z >= self.healthy_z_range[0]) & (z <= self.healthy_z_range[1])

    def reward(self, backend, action):
        x = backend.get_body_views(self.torso).pos[:, 0, 0]
        x_velocity = (x - self.x_before) / self.dt
        self.x_before = x.clone()
        contact = backend.get_contact_forces(self.bodies).clamp(-1.0, 1.0)
        terms = {
            "forward": self.forward_reward_weight * x_velocity,
            "healthy": self.healthy_reward * self.healthy(backend).to(torch.float64),
            "ctrl": -self.ctrl_cost_weight * (action.to(torch.float64) ** 2).sum(1),
            "contact": -self.contact_cost_weight * (contact**2).sum((1, 2)),
        }
        return sum(terms.values()), terms

    def terminated(self, backend):
        return ~self.healthy(backend)

    def reset_state(self, env_ids, rng):
        s = self.reset_noise_scale
        qpos = self.qpos0 + rng.uniform(tuple(self.qpos0.shape), -s, s).to(self.qpos0.device)
        qvel = s * rng.normal((self.nv,)).to(self.qpos0.device)
        self.x_before[env_ids] = qpos[:, 0]  # the torso sits at the free joint's origin
        return qpos, qvel
