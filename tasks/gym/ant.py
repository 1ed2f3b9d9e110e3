"""Ant: Gymnasium's Ant-v5 on its own ant.xml; make the quadruped ant run forward along +x.

Observation blocks, as v5 names them: qpos (13, without the torso's x, y), qvel
(14), then cfrc_ext (78: MuJoCo's external wrenches of the 13 bodies but the
world, 6 each, clipped to [-1, 1]). Action (8): hip and ankle torques in
[-1, 1]. Reward terms, as in v5: forward (torso x velocity over the env step),
healthy (1 while 0.2 <= torso z <= 1 and the state is finite), ctrl (-0.5
|a|^2) and contact (-5e-4 |clip(cfrc_ext, -1, 1)|^2). Terminates when unhealthy; truncated after 1000
steps. Reset: qpos0 + U(-0.1, 0.1), qvel N(0, 0.1^2).

The default needs the backend's `mj_fields` (cfrc_ext). As v5 does, it reads
cfrc_ext and the torso's position (xpos, for the forward term) where mj_step
leaves them, from the last RK4 stage of the last substep, cfrc_ext after
mj_rnePostConstraint (`substep_reads`); observations and rewards equal v5's.
With include_cfrc_ext_in_observation=False (v5's option of that name) the
observation is qpos and qvel only and the contact term uses the net contact
force on each body (get_contact_forces, of the last physics substep) instead of
cfrc_ext's 6-D wrench, so that it runs on every backend with contact forces;
the forward term then takes the torso's x at the returned state (qpos[0]).
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import (
    forward_velocity,
    healthy_state,
    locomotion_terms,
    noisy_reset,
    read_state,
    unhealthy,
    v5_total,
)

NQ, NV, BODIES = 15, 14, 13  # ant.xml: a free joint and 8 hinges; its bodies but the world


@dataclasses.dataclass
class AntOptions(TaskOptions):
    episode_length_s: float = option(50.0, "s: an episode is truncated after it (1000 steps)")
    forward_reward_weight: float = option(1.0, "weight of the torso's x velocity")
    ctrl_cost_weight: float = option(0.5, "weight of -|action|^2")
    contact_cost_weight: float = option(5e-4, "weight of -|clipped contact wrench|^2")
    healthy_reward: float = option(1.0, "reward per step while healthy")
    terminate_when_unhealthy: bool = option(True, "end the episode when unhealthy")
    healthy_z_range: tuple[float, float] = option((0.2, 1.0), "m: healthy while the torso's z is in it")
    contact_force_range: tuple[float, float] = option((-1.0, 1.0), "the contact wrench's clip range")
    reset_noise_scale: float = option(0.1, "reset: qpos0 + U(-s, s), qvel N(0, s^2)")
    include_cfrc_ext_in_observation: bool = option(
        True, "observe cfrc_ext (needs mj_fields); false: qpos and qvel, net contact forces in the cost"
    )


class Ant(Task):
    name = "ant"
    scene = os.path.join(GYM_ASSETS, "ant.xml")
    sim_dt = 0.01
    decimation = 5
    root_body = "torso"
    arrays = "any"
    reward_threshold = 6000.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (8,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -20.0, "track_body": "torso"}
    Options = AntOptions

    def __init__(self, **options):
        super().__init__(**options)
        self.requires = ("mj_fields",) if self.include_cfrc_ext_in_observation else ("contact_forces",)
        self.substep_reads = ("cfrc_ext", "body_views") if self.include_cfrc_ext_in_observation else ()

    def observation_blocks(self):
        blocks = {"qpos": NQ - 2, "qvel": NV}
        if self.include_cfrc_ext_in_observation:
            blocks["cfrc_ext"] = BODIES * 6
        return blocks

    def setup(self, backend):
        super().setup(backend)
        self.bodies = np.arange(1, len(backend.names("body")))  # all but the world
        self.torso = backend.find("body", [self.root_body])
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        if self.include_cfrc_ext_in_observation:
            wrench = backend.get_mj_field("cfrc_ext")  # the world's (zero) too: v5's sum has it
        else:
            wrench = backend.get_contact_forces(self.bodies)
        s["contact"] = xp.clip(xp.asarray(wrench), *self.contact_force_range)  # (N, 14, 6) or (N, 13, 3)
        if self.include_cfrc_ext_in_observation:  # v5's torso xpos, from its last RK4 stage
            s["x"] = xp.asarray(backend.get_body_views(self.torso).pos)[:, 0, 0]
        else:  # its position at the state: the free joint's x (contact forces need no forward)
            s["x"] = s["qpos"][:, 0]
        z = s["qpos"][:, 2]
        s["healthy"] = (
            healthy_state(self, s) & (z >= self.healthy_z_range[0]) & (z <= self.healthy_z_range[1])
        )
        return s

    def observe(self, s, memory):
        obs = [s["qpos"][:, 2:], s["qvel"]]
        if self.include_cfrc_ext_in_observation:
            obs.append(s["contact"][:, 1:].reshape(len(s["contact"]), -1))
        return self.xp.concat(obs, 1)

    def reward(self, s, prev, action, memory):
        terms = locomotion_terms(self, s, prev, action)
        terms["forward"] = self.forward_reward_weight * forward_velocity(s["x"], prev["x"], self.dt)
        contact = s["contact"].reshape(len(s["contact"]), -1)  # summed flat, as v5 does
        terms["contact"] = -self.contact_cost_weight * (contact * contact).sum(1)
        return v5_total(terms), terms

    def terminated(self, s, memory):
        return unhealthy(self, s)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale, gaussian_qvel=True)
