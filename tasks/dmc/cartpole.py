"""dm_control's cartpole: balance a pole on a cart, or swing it up from hanging.

Model: dm_control's cartpole.xml (one pole, RK4, 0.01 s), one env step per physics step,
1000 steps. Action (1): the cart's motor. Observation (5): position = [cart x, pole
xmat zz, pole xmat xz] (x, cos, sin of the pole angle), velocity = qvel (2).
Reward, dense: upright (cos + 1) / 2 x centered (1 + tolerance(x, margin 2)) / 2 x small
control (4 + tolerance(ctrl, margin 1, quadratic)) / 5 x small velocity (1 + tolerance(pole
angular velocity, margin 5)) / 2; sparse: 1 while |x| <= 0.25 and cos >= 0.995.
Reset: balance: x ~ U(-0.1, 0.1), angle ~ U(-0.034, 0.034); swing-up: x ~ 0.01 N(0, 1),
angle pi + 0.01 N(0, 1); qvel ~ 0.01 N(0, 1) in both.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {"position": 3, "velocity": 2}


class CartpoleBalance(DMCTask):
    name = "dmc_cartpole_balance"
    domain = "cartpole"
    sim_dt = 0.01
    decimation = 1
    time_limit = 10.0
    root_body = "cart"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "lookat": (0.0, 0.0, 1.0)}
    swing_up, sparse = False, False

    def resolve(self, backend):
        self.pole = backend.find("body", ["pole_1"])

    def read(self, backend):
        s = self.read_state(backend)
        xmat = self.xmat(backend, self.pole)[:, 0]
        s["obs"] = self.xp.concat((s["qpos"][:, :1], xmat[:, XMAT["zz"], None], xmat[:, XMAT["xz"], None]), 1)
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["obs"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        xp, cart, cos = self.xp, s["obs"][:, 0], s["obs"][:, 1]
        if self.sparse:
            r = tolerance(xp, cart, (-0.25, 0.25)) * tolerance(xp, cos, (0.995, 1.0))
            return r, {"in_bounds": r}
        upright = (cos + 1.0) / 2.0
        centered = (1.0 + tolerance(xp, cart, margin=2.0)) / 2.0
        control = tolerance(xp, s["ctrl"][:, 0], margin=1.0, value_at_margin=0.0, sigmoid="quadratic")
        small_control = (4.0 + control) / 5.0
        small_velocity = (1.0 + tolerance(xp, s["qvel"][:, 1], margin=5.0)) / 2.0
        r = upright * small_control * small_velocity * centered
        return r, {"upright": r}

    def reset_state(self, env_ids, rng):
        if self.swing_up:
            qpos = 0.01 * rng.normal((2,), dtype=self.dtype) + self.array([0.0, np.pi])
        else:
            qpos = rng.uniform((2,), self.array([-0.1, -0.034]), self.array([0.1, 0.034]), dtype=self.dtype)
        qvel = 0.01 * rng.normal((self.nv,), dtype=self.dtype)
        return qpos, qvel


class CartpoleBalanceSparse(CartpoleBalance):
    name = "dmc_cartpole_balance_sparse"
    sparse = True


class CartpoleSwingup(CartpoleBalance):
    name = "dmc_cartpole_swingup"
    swing_up = True


class CartpoleSwingupSparse(CartpoleBalance):
    name = "dmc_cartpole_swingup_sparse"
    swing_up, sparse = True, True
