"""Walker2d: Gymnasium's Walker2d-v5 on its own walker2d_v5.xml; walk forward along +x.

Observation (17): qpos without the root x (8), then qvel clipped to [-10, 10]
(9). Action (6): hip, knee and foot torques of both legs in [-1, 1]. Reward
terms, as in v5: forward (root x velocity over the env step), healthy (1 while
healthy) and ctrl (-1e-3 |a|^2). Healthy: torso height z in (0.8, 2.0) and
torso angle in (-1, 1); the episode terminates when unhealthy, and is truncated
after 1000 steps. Reset: qpos0 and zero qvel plus U(-5e-3, 5e-3). Runs on
every backend; on mujoco it matches v5 to float precision.
observe() records the x that the next reward() differences against (the env
observes after every step and every reset).
"""

import os

import gymnasium as gym
import numpy as np
import torch

from unienv.task import Task
from unienv.tasks import GYM_ASSETS


class Walker2d(Task):
    name = "walker2d"
    scene = os.path.join(GYM_ASSETS, "walker2d_v5.xml")
    sim_dt = 0.002
    decimation = 4
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (17,), np.float64)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}

    def __init__(
        self,
        episode_length_s: float = 8.0,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 1e-3,
        healthy_reward: float = 1.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: tuple[float, float] = (0.8, 2.0),
        healthy_angle_range: tuple[float, float] = (-1.0, 1.0),
        reset_noise_scale: float = 5e-3,
    ):
        self.episode_length_s = episode_length_s
        self.forward_reward_weight = forward_reward_weight
        self.ctrl_cost_weight = ctrl_cost_weight
        self.healthy_reward = healthy_reward
        self.terminate_when_unhealthy = terminate_when_unhealthy
        self.healthy_z_range = tuple(healthy_z_range)
        self.healthy_angle_range = tuple(healthy_angle_range)
        self.reset_noise_scale = reset_noise_scale

    def setup(self, backend):
        self.qpos0 = torch.as_tensor(backend.info.qpos0, device=backend.device)
        self.nv = backend.nv
        self.x = torch.zeros(backend.num_envs, dtype=torch.float64, device=backend.device)

    def action_to_ctrl(self, action):
        return action.to(torch.float64)

    def observe(self, backend):
        s = backend.get_state_views()
        self.x = s["qpos"][:, 0].clone()
        return torch.cat((s["qpos"][:, 1:], s["qvel"].clamp(-10.0, 10.0)), dim=1)

    def healthy(self, backend):
        q = backend.get_state_views()["qpos"]
        (lo_z, hi_z), (lo_a, hi_a) = self.healthy_z_range, self.healthy_angle_range
        return (q[:, 1] > lo_z) & (q[:, 1] < hi_z) & (q[:, 2] > lo_a) & (q[:, 2] < hi_a)

    def reward(self, backend, action):
        x_velocity = (backend.get_state_views()["qpos"][:, 0] - self.x) / self.dt
        terms = {
            "forward": self.forward_reward_weight * x_velocity,
            "healthy": self.healthy_reward * self.healthy(backend).to(torch.float64),
            "ctrl": -self.ctrl_cost_weight * (action.to(torch.float64) ** 2).sum(1),
        }
        return sum(terms.values()), terms

    def terminated(self, backend):
        unhealthy = ~self.healthy(backend)
        return unhealthy if self.terminate_when_unhealthy else torch.zeros_like(unhealthy)

    def reset_state(self, env_ids, rng):
        s = self.reset_noise_scale
        qpos = self.qpos0 + rng.uniform(tuple(self.qpos0.shape), -s, s)
        qvel = rng.uniform((self.nv,), -s, s)
        return qpos, qvel
