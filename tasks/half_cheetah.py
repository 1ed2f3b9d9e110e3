"""HalfCheetah: Gymnasium's HalfCheetah-v5 on its own half_cheetah.xml; run forward along +x.

Observation (17): qpos without the root x (8), then qvel (9). Action (6): joint
torques in [-1, 1]. Reward terms, as in v5: forward (root x velocity over the
env step) and ctrl (-0.1 |a|^2). Never terminates; truncated after 1000 steps.
Reset: qpos0 + U(-0.1, 0.1), qvel N(0, 0.1^2). Needs only qpos and qvel, so it
runs on every backend; on mujoco it matches v5 to float precision.
observe() records the x that the next reward() differences against (the env
observes after every step and every reset).
"""

import os

import gymnasium as gym
import numpy as np
import torch

from unienv.task import Task
from unienv.tasks import GYM_ASSETS


class HalfCheetah(Task):
    name = "half_cheetah"
    scene = os.path.join(GYM_ASSETS, "half_cheetah.xml")
    sim_dt = 0.01
    decimation = 5
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (17,), np.float64)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}

    def __init__(
        self,
        episode_length_s: float = 50.0,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.1,
        reset_noise_scale: float = 0.1,
    ):
        self.episode_length_s = episode_length_s
        self.forward_reward_weight = forward_reward_weight
        self.ctrl_cost_weight = ctrl_cost_weight
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
        return torch.cat((s["qpos"][:, 1:], s["qvel"]), dim=1)

    def reward(self, backend, action):
        x_velocity = (backend.get_state_views()["qpos"][:, 0] - self.x) / self.dt
        terms = {
            "forward": self.forward_reward_weight * x_velocity,
            "ctrl": -self.ctrl_cost_weight * (action.to(torch.float64) ** 2).sum(1),
        }
        return sum(terms.values()), terms

    def terminated(self, backend):
        return torch.zeros(backend.num_envs, dtype=torch.bool, device=backend.device)

    def reset_state(self, env_ids, rng):
        s = self.reset_noise_scale
        qpos = self.qpos0 + rng.uniform(tuple(self.qpos0.shape), -s, s)
        qvel = s * rng.normal((self.nv,))
        return qpos, qvel
