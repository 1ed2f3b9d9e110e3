"""Humanoid: Gymnasium's Humanoid-v5 on its own humanoid.xml; run forward along +x.

Observation blocks, as v5 names them: qpos (22, without the root x, y), qvel
(23), then MuJoCo's com-based body inertia cinert (130: 10 per body), velocity
cvel (78: 6 per body), actuator forces qfrc_actuator without the root's (17)
and external wrenches cfrc_ext (78: 6 per body), of the 13 bodies but the
world. Action (17): motor inputs in [-0.4, 0.4].
Reward terms, as in v5: forward (1.25 x the x velocity of the whole-body COM
over the env step; the COM weighs each env's own body masses, randomized ones
included, read from cinert), healthy (5 while 1 < z < 2 for the torso), ctrl
(-0.1 |a|^2) and contact (-min(5e-7 |cfrc_ext|^2, 10)). Terminates when
unhealthy; truncated after 1000 steps. Reset: qpos0 and zero qvel plus U(-0.01, 0.01).

Needs the backend's `mj_fields`, read as v5 reads cinert, cvel, qfrc_actuator,
cfrc_ext and the body COMs: where mj_step leaves them, from the last RK4 stage
of the last substep, cfrc_ext after mj_rnePostConstraint (`substep_reads`).
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import (
    ctrl_cost,
    forward_velocity,
    inside,
    noisy_reset,
    read_state,
    unhealthy,
    v5_total,
)

NQ, NV, BODIES = 24, 23, 13  # humanoid.xml: a free joint and 17 hinges; its bodies but the world
ROOT_DOFS = 6  # the free joint's, in qvel


@dataclasses.dataclass
class HumanoidOptions(TaskOptions):
    episode_length_s: float = option(15.0, "s: an episode is truncated after it (1000 steps)")
    forward_reward_weight: float = option(1.25, "weight of the whole-body COM's x velocity")
    ctrl_cost_weight: float = option(0.1, "weight of -|action|^2")
    contact_cost_weight: float = option(5e-7, "weight of -|cfrc_ext|^2")
    contact_cost_max: float = option(10.0, "the contact cost's cap")
    healthy_reward: float = option(5.0, "reward per step while healthy")
    terminate_when_unhealthy: bool = option(True, "end the episode when unhealthy")
    healthy_z_range: tuple[float, float] = option((1.0, 2.0), "m: healthy while the torso's z is in it")
    reset_noise_scale: float = option(1e-2, "reset: qpos0 + U(-s, s), qvel U(-s, s)")


class Humanoid(Task):
    name = "humanoid"
    scene = os.path.join(GYM_ASSETS, "humanoid.xml")
    sim_dt = 0.003
    decimation = 5
    root_body = "torso"
    arrays = "any"
    single_action_space = gym.spaces.Box(-0.4, 0.4, (17,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 3.0, "azimuth": 90.0, "elevation": -20.0, "track_body": "torso"}
    requires = ("mj_fields",)
    substep_reads = ("cinert", "cvel", "qfrc_actuator", "cfrc_ext", "xipos")
    Options = HumanoidOptions

    def observation_blocks(self):
        return {
            "qpos": NQ - 2,
            "qvel": NV,
            "cinert": BODIES * 10,
            "cvel": BODIES * 6,
            "qfrc_actuator": NV - ROOT_DOFS,
            "cfrc_ext": BODIES * 6,
        }

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        for name in ("cinert", "cvel", "qfrc_actuator", "cfrc_ext"):
            s[name] = xp.asarray(backend.get_mj_field(name))
        mass = s["cinert"][..., 9:]  # (N, nbody, 1) each env's body masses, randomized ones included
        com = (mass * xp.asarray(backend.get_mj_field("xipos"))).sum(1) / mass.sum(1)
        s["com"] = com[:, :2]  # the whole body's centre of mass (x, y)
        s["healthy"] = inside(s["qpos"][:, 2], *self.healthy_z_range)
        return s

    def observe(self, s, memory):
        n = len(s["qpos"])
        fields = [s[k][:, 1:].reshape(n, -1) for k in ("cinert", "cvel")]
        fields += [s["qfrc_actuator"][:, ROOT_DOFS:], s["cfrc_ext"][:, 1:].reshape(n, -1)]
        return self.xp.concat([s["qpos"][:, 2:], s["qvel"], *fields], 1)

    def reward(self, s, prev, action, memory):
        wrench = s["cfrc_ext"]
        contact = self.contact_cost_weight * (wrench * wrench).reshape(len(wrench), -1).sum(1)  # as v5 sums
        terms = {
            "forward": self.forward_reward_weight
            * forward_velocity(s["com"][:, 0], prev["com"][:, 0], self.dt),
            "healthy": self.healthy_reward * self.xp.astype(s["healthy"], self.dtype),
            "ctrl": ctrl_cost(action, self.ctrl_cost_weight),
            "contact": -self.xp.clip(contact, None, self.contact_cost_max),
        }
        return v5_total(terms), terms

    def terminated(self, s, memory):
        return unhealthy(self, s)

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale)
