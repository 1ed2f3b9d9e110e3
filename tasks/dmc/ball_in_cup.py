"""dm_control's ball_in_cup catch: swing a ball on a string up into a cup moved in a plane.

Model: dm_control's ball_in_cup.xml (0.002 s), 10 physics steps per env step (0.02 s), 1000
steps. Action (2): the cup's x and z motors. Observation (8): position = qpos (cup x, z,
ball x, z), velocity = qvel (4). Reward: 1 while the ball's centre is inside the cup's
target box shrunk by the ball's radius (|dx|, |dz| < 0.05 - 0.025), else 0. Reset: cup at
rest at the origin, ball x ~ U(-0.2, 0.2), z ~ U(0.2, 0.5). dm_control redraws the ball
until it touches nothing; a reset here cannot run collision detection, so a drawn ball
may start inside the cup's wall, which the first steps resolve.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask

BLOCKS = {"position": 4, "velocity": 4}
TARGET = (0.0, -0.05)  # the target site's x, z in the cup's frame (the cup only translates)
INSIDE = 0.05 - 0.025  # the target box's half size less the ball's radius


class BallInCupCatch(DMCTask):
    name = "dmc_ball_in_cup_catch"
    domain = "ball_in_cup"
    sim_dt = 0.002
    decimation = 10
    time_limit = 20.0
    root_body = "cup"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    camera = {"distance": 1.5, "azimuth": 90.0, "elevation": -5.0, "lookat": (0.0, 0.0, 0.5)}

    def resolve(self, backend):
        self.bodies = backend.find("body", ["cup", "ball"])
        self.target = self.array(TARGET)
        self.ball_x = backend.joint_qpos_slice("ball_x").start
        self.ball_z = backend.joint_qpos_slice("ball_z").start

    def read(self, backend):
        s = self.read_state(backend)
        pos = self.xp.asarray(backend.get_body_views(self.bodies).pos)[:, :, [0, 2]]
        s["ball_to_target"] = pos[:, 0] + self.target - pos[:, 1]
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        r = self.xp.astype((self.xp.abs(s["ball_to_target"]) < INSIDE).all(1), self.dtype)
        return r, {"in_cup": r}

    def reset_state(self, env_ids, rng):
        xp = self.xp
        ball = rng.uniform((2,), self.array([-0.2, 0.2]), self.array([0.2, 0.5]), dtype=self.dtype)
        qpos = xp.zeros((rng.rows, self.nq), self.dtype) + self.qpos0
        qpos[:, self.ball_x], qpos[:, self.ball_z] = ball[:, 0], ball[:, 1]
        return qpos, self.zero_qvel(rng)
