"""Ant: Gymnasium's Ant-v5 on its own ant.xml; make the quadruped ant run forward along +x.

Observation (105): qpos without the torso's x, y (13), qvel (14), then MuJoCo's
external wrenches cfrc_ext of the 13 bodies but the world (13 x 6), clipped to
[-1, 1]. Action (8): hip and ankle torques in [-1, 1]. Reward terms, as in v5:
forward (torso x velocity over the env step), healthy (1 while 0.2 <= torso z
<= 1 and the state is finite), ctrl (-0.5 |a|^2) and contact (-5e-4
|clip(cfrc_ext, -1, 1)|^2). Terminates when unhealthy; truncated after 1000
steps. Reset: qpos0 + U(-0.1, 0.1), qvel N(0, 0.1^2).

The default needs the backend's `mj_fields` (cfrc_ext). Deliberate
differences: v5 reads cfrc_ext and the torso position where mj_step leaves
them (its last RK4 stage); here they are at the state the env returns, as
after mj_forward (the parity test compares with v5 refreshed by mj_forward),
and the torso x is the free joint's qpos[0], which is its xpos there. Against
unmodified v5 the clipped cfrc_ext entries differ by up to 2 and rewards by
up to ~0.07.
With include_cfrc_ext_in_observation=False (v5's option of that name) the
observation is the first 27 entries and the contact term uses the net contact
force on each body (get_contact_forces, of the last physics substep) instead of
cfrc_ext's 6-D wrench, so that it runs on every backend with contact forces.
"""

import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, total
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import healthy_state, locomotion_terms, noisy_reset, read_state, unhealthy


class Ant(Task):
    name = "ant"
    scene = os.path.join(GYM_ASSETS, "ant.xml")
    sim_dt = 0.01
    decimation = 5
    root_body = "torso"
    arrays = "any"
    reward_threshold = 6000.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (8,), np.float32)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -20.0, "track_body": "torso"}

    def __init__(
        self,
        episode_length_s: float = 50.0,
        forward_reward_weight: float = 1.0,
        ctrl_cost_weight: float = 0.5,
        contact_cost_weight: float = 5e-4,
        healthy_reward: float = 1.0,
        terminate_when_unhealthy: bool = True,
        healthy_z_range: tuple[float, float] = (0.2, 1.0),
        contact_force_range: tuple[float, float] = (-1.0, 1.0),
        reset_noise_scale: float = 0.1,
        include_cfrc_ext_in_observation: bool = True,
    ):
        self.episode_length_s = episode_length_s
        self.forward_reward_weight = forward_reward_weight
        self.ctrl_cost_weight = ctrl_cost_weight
        self.contact_cost_weight = contact_cost_weight
        self.healthy_reward = healthy_reward
        self.terminate_when_unhealthy = terminate_when_unhealthy
        self.healthy_z_range = tuple(healthy_z_range)
        self.contact_force_range = tuple(contact_force_range)
        self.reset_noise_scale = reset_noise_scale
        self.include_cfrc_ext_in_observation = include_cfrc_ext_in_observation
        self.requires = ("mj_fields",) if self.include_cfrc_ext_in_observation else ("contact_forces",)
        dim = 27 + 78 * self.include_cfrc_ext_in_observation
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float64)

    def setup(self, backend):
        super().setup(backend)
        self.bodies = np.arange(1, len(backend.names("body")))  # all but the world
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        if self.include_cfrc_ext_in_observation:
            wrench = backend.get_mj_field("cfrc_ext")[:, 1:]
        else:
            wrench = backend.get_contact_forces(self.bodies)
        s["contact"] = xp.clip(xp.asarray(wrench), *self.contact_force_range)  # (N, 13, 6) or (N, 13, 3)
        z = s["qpos"][:, 2]
        s["healthy"] = (
            healthy_state(self, s) & (z >= self.healthy_z_range[0]) & (z <= self.healthy_z_range[1])
        )
        return s

    def observe(self, s, memory):
        obs = [s["qpos"][:, 2:], s["qvel"]]
        if self.include_cfrc_ext_in_observation:
            obs.append(s["contact"].reshape(len(s["contact"]), -1))
        return self.xp.concat(obs, 1)

    def reward(self, s, prev, action, memory):
        terms = locomotion_terms(self, s, prev, action)
        terms["contact"] = -self.contact_cost_weight * (s["contact"] * s["contact"]).sum((1, 2))
        return total(terms), terms

    def terminated(self, s, memory):
        return unhealthy(self, s)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale, gaussian_qvel=True)
