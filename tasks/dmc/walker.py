"""dm_control's walker: a planar biped stands, walks (1 m/s) or runs (8 m/s).

Model: dm_control's walker.xml (0.0025 s), 10 physics steps per env step (0.025 s), 1000
steps. Action (6): hip, knee and ankle motors of the right and left legs. Observation (24):
orientations = xmat [xx, xz] of every body but the world (14), height = torso z (1),
velocity = qvel (9). Reward: stand = (3 standing + upright) / 4 with standing =
tolerance(torso z, (1.2, inf), margin 0.6) and upright = (1 + torso xmat zz) / 2; walk and
run multiply it by (5 move + 1) / 6, move = tolerance(torso subtree x velocity, (speed, inf),
margin speed / 2, linear, value_at_margin 0.5). Reset: the root's height and x at 0, its
pitch ~ U(-pi, pi), every limited joint ~ U(its range), at rest (dm_control's rule; the
walker starts in the air or through the floor and falls or is pushed out).
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {"orientations": 14, "height": 1, "velocity": 9}
STAND_HEIGHT = 1.2


class WalkerStand(DMCTask):
    name = "dmc_walker_stand"
    domain = "walker"
    sim_dt = 0.0025
    decimation = 10
    time_limit = 25.0
    root_body = "torso"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    move_speed = 0.0

    def resolve(self, backend):
        self.bodies = np.arange(1, len(backend.names("body")))  # every body but the world; torso first
        self.columns = [XMAT["xx"], XMAT["xz"]]

    def read(self, backend):
        s = self.read_state(backend)
        xmat = self.xmat(backend, self.bodies)
        s["orientations"] = xmat[:, :, self.columns].reshape(len(xmat), -1)
        s["upright"] = xmat[:, 0, XMAT["zz"]]
        s["height"] = self.xp.asarray(backend.get_body_views(self.bodies[:1]).pos)[:, 0, 2:]
        if self.move_speed:
            s["speed"] = self.sensor(backend, "torso_subtreelinvel")[:, 0]
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["orientations"], s["height"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        xp = self.xp
        standing = tolerance(xp, s["height"][:, 0], (STAND_HEIGHT, float("inf")), margin=STAND_HEIGHT / 2)
        upright = (1.0 + s["upright"]) / 2.0
        stand = (3.0 * standing + upright) / 4.0
        if not self.move_speed:
            return stand, {"stand": stand}
        move = tolerance(
            xp,
            s["speed"],
            (self.move_speed, float("inf")),
            self.move_speed / 2,
            "linear",
            value_at_margin=0.5,
        )
        r = stand * (5.0 * move + 1.0) / 6.0
        return r, {"move": r}


class WalkerWalk(WalkerStand):
    name = "dmc_walker_walk"
    move_speed = 1.0


class WalkerRun(WalkerStand):
    name = "dmc_walker_run"
    move_speed = 8.0
