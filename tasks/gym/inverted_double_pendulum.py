"""InvertedDoublePendulum: Gymnasium's InvertedDoublePendulum-v5 on its own model.

Balance two stacked poles on a cart. Observation blocks, after v5's terms: cart_x
(1, qpos[0]), sin_hinges and cos_hinges (2 each, of the two hinge angles), qvel
(3, clipped to [-10, 10]) and qfrc_constraint (1, MuJoCo's constraint force on
the cart, qfrc_constraint[0], clipped to [-10, 10]). Action (1): cart force
in [-1, 1]. Reward terms, as in v5, from the tip site (x, y=height): alive (10
while not terminated), distance (-(0.01 x^2 + (y - 2)^2)) and velocity
(-(1e-3 w1^2 + 5e-3 w2^2) over the hinge speeds). Terminates when the tip's
height y <= 1; truncated after 1000 steps. Reset: qpos0 + U(-0.1, 0.1), qvel
N(0, 0.1^2).

Needs the backend's `mj_fields` (site position and qfrc_constraint, as MuJoCo
computes them), read as v5 reads them: where mj_step leaves them, from the last
RK4 stage of the last substep (`substep_reads`).
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option, total
from unienv.tasks import GYM_ASSETS
from unienv.tasks.common import noisy_reset, read_state

NQ, NV = 3, 3  # inverted_double_pendulum.xml: the cart's slider and two hinges


@dataclasses.dataclass
class InvertedDoublePendulumOptions(TaskOptions):
    episode_length_s: float = option(50.0, "s: an episode is truncated after it (1000 steps)")
    healthy_reward: float = option(10.0, "reward per step while the tip is above 1 m")
    reset_noise_scale: float = option(0.1, "reset: qpos0 + U(-s, s), qvel N(0, s^2)")


class InvertedDoublePendulum(Task):
    name = "inverted_double_pendulum"
    scene = os.path.join(GYM_ASSETS, "inverted_double_pendulum.xml")
    sim_dt = 0.01
    decimation = 5
    root_body = "cart"
    arrays = "any"
    reward_threshold = 9100.0  # v5's
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    observation_dtype = np.float64  # v5's
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 0.6)}
    requires = ("mj_fields",)
    substep_reads = ("site_xpos", "qfrc_constraint")
    Options = InvertedDoublePendulumOptions

    def observation_blocks(self):
        hinges = NQ - 1
        return {"cart_x": 1, "sin_hinges": hinges, "cos_hinges": hinges, "qvel": NV, "qfrc_constraint": 1}

    def setup(self, backend):
        super().setup(backend)
        self.tip = int(backend.find("site", "tip")[0])
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        s["constraint"] = xp.asarray(backend.get_mj_field("qfrc_constraint"))[:, :1]
        s["tip"] = xp.asarray(backend.get_mj_field("site_xpos"))[:, self.tip]  # (x, y, z): z is the height
        return s

    def observe(self, s, memory):
        xp, q = self.xp, s["qpos"]
        speeds, constraint = xp.clip(s["qvel"], -10.0, 10.0), xp.clip(s["constraint"], -10.0, 10.0)
        return xp.concat((q[:, :1], xp.sin(q[:, 1:]), xp.cos(q[:, 1:]), speeds, constraint), 1)

    def reward(self, s, prev, action, memory):
        x, y, w = s["tip"][:, 0], s["tip"][:, 2], s["qvel"]
        terms = {
            "alive": self.healthy_reward * self.xp.astype(y > 1, self.dtype),
            "distance": -(0.01 * x**2 + (y - 2) ** 2),
            "velocity": -(1e-3 * w[:, 1] ** 2 + 5e-3 * w[:, 2] ** 2),
        }
        return total(terms), terms

    def terminated(self, s, memory):
        return s["tip"][:, 2] <= 1

    def reset_state(self, env_ids, rng):
        return noisy_reset(self.qpos0, self.nv, rng, self.reset_noise_scale, gaussian_qvel=True)
