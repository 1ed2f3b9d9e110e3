"""dm_control's cheetah run: a planar cheetah runs forward as fast as it can.

Model: dm_control's cheetah.xml (0.01 s), one env step per physics step, 1000 steps.
Action (6): thigh, shin and foot motors of the back and front legs. Observation (17):
position = qpos without the root x (8), velocity = qvel (9). Reward: tolerance(torso
subtree x velocity (sensor torso_subtreelinvel), (10, inf), margin 10, linear,
value_at_margin 0) = min(v / 10, 1) for v >= 0. Reset: every limited joint ~ U(its range).
dm_control then lets the cheetah settle for 200 physics steps with no control before
the episode starts; a reset here cannot step the physics, so the episode starts from the
random pose and the settling happens in its first steps.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, tolerance

BLOCKS = {"position": 8, "velocity": 9}
RUN_SPEED = 10.0


class CheetahRun(DMCTask):
    name = "dmc_cheetah_run"
    domain = "cheetah"
    sim_dt = 0.01
    decimation = 1
    time_limit = 10.0
    root_body = "torso"
    blocks = BLOCKS
    reset_unlimited_hinges = False  # the root's pitch stays at 0
    single_action_space = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}

    def read(self, backend):
        s = self.read_state(backend)
        s["speed"] = self.sensor(backend, "torso_subtreelinvel")[:, 0]
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"][:, 1:], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        r = tolerance(
            self.xp,
            s["speed"],
            (RUN_SPEED, float("inf")),
            margin=RUN_SPEED,
            value_at_margin=0.0,
            sigmoid="linear",
        )
        return r, {"run": r}
