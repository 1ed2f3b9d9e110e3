"""dm_control's hopper: a planar one-legged hopper stands up, or hops forward (2 m/s).

Model: dm_control's hopper.xml (0.005 s), 4 physics steps per env step (0.02 s), 1000
steps. Action (4): waist, hip, knee and ankle motors. Observation (15): position = qpos
without the root x (6), velocity = qvel (7), touch = log1p of the toe and heel touch
sensors (2). Reward: standing x (stand: small control; hop: hopping), standing =
tolerance(torso COM z - foot COM z, (0.6, 2)), small control = (4 + mean tolerance(ctrl,
margin 1, quadratic)) / 5, hopping = tolerance(torso subtree x velocity, (2, inf), margin
1, linear, value_at_margin 0.5). Reset: dm_control's rule (root pitch ~ U(-pi, pi), limited
joints ~ U(range)), at rest. The touch sensors are read as dm_control's step leaves
them, from its last substep (`substep_reads`; see tasks/dmc/common.py); needs `mj_fields`
(the bodies' COM positions).
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, tolerance

BLOCKS = {"position": 6, "velocity": 7, "touch": 2}
STAND_HEIGHT = 0.6
HOP_SPEED = 2.0


class HopperStand(DMCTask):
    name = "dmc_hopper_stand"
    domain = "hopper"
    sim_dt = 0.005
    decimation = 4
    time_limit = 20.0
    root_body = "torso"
    requires = ("mj_fields",)
    substep_reads = ("sensors",)  # touch: dm_control's last substep's
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    camera = {"distance": 3.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    hopping = False

    def resolve(self, backend):
        self.torso_foot = backend.find("body", ["torso", "foot"])

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        com_z = xp.asarray(backend.get_mj_field("xipos"))[:, self.torso_foot, 2]
        s["height"] = com_z[:, 0] - com_z[:, 1]
        s["touch"] = xp.log1p(
            xp.concat((self.sensor(backend, "touch_toe"), self.sensor(backend, "touch_heel")), 1)
        )
        if self.hopping:
            s["speed"] = self.sensor(backend, "torso_subtreelinvel")[:, 0]
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"][:, 1:], s["qvel"], s["touch"]), 1)

    def reward(self, s, prev, action, memory):
        xp = self.xp
        standing = tolerance(xp, s["height"], (STAND_HEIGHT, 2.0))
        if self.hopping:
            hop = tolerance(
                xp, s["speed"], (HOP_SPEED, float("inf")), HOP_SPEED / 2, "linear", value_at_margin=0.5
            )
            r = standing * hop
            return r, {"hop": r}
        control = tolerance(xp, s["ctrl"], margin=1.0, value_at_margin=0.0, sigmoid="quadratic").mean(1)
        r = standing * (control + 4.0) / 5.0
        return r, {"stand": r}


class HopperHop(HopperStand):
    name = "dmc_hopper_hop"
    hopping = True
