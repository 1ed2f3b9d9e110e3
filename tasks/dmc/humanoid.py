"""dm_control's humanoid: a 21-joint humanoid stands, walks (1 m/s) or runs (10 m/s).

Model: dm_control's humanoid.xml (0.005 s), 5 physics steps per env step (0.025 s), 1000
steps. Action (21): the joint motors. Observation (67): joint_angles = qpos without the
free root (21), head_height = head z (1), extremities = the hands' and feet's positions
relative to the torso in its frame, left hand, left foot, right hand, right foot (12),
torso_vertical = torso xmat [zx, zy, zz] (3), com_velocity = the torso subtree's linear
velocity (3), velocity = qvel (27). Reward: small control x standing x upright x (stand:
don't move; walk, run: move), standing = tolerance(head z, (1.4, inf), margin 0.35),
upright = tolerance(torso xmat zz, (0.9, inf), margin 1.9, linear, value_at_margin 0),
small control = (4 + mean tolerance(ctrl, margin 1, quadratic)) / 5, don't move = mean
tolerance(com velocity x, y, margin 2), move = (5 tolerance(|com velocity x, y|, (speed,
inf), margin speed, linear, value_at_margin 0) + 1) / 6. Reset: root orientation a
uniformly drawn unit quaternion of non-negative components (dm_control's rule), joints
~ U(their range), at rest; dm_control redraws until nothing touches, which a reset here
cannot check, so a drawn pose may start through the floor and be pushed out.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {
    "joint_angles": 21,
    "head_height": 1,
    "extremities": 12,
    "torso_vertical": 3,
    "com_velocity": 3,
    "velocity": 27,
}
STAND_HEIGHT = 1.4
LIMBS = ["torso", "head", "left_hand", "left_foot", "right_hand", "right_foot"]


class HumanoidStand(DMCTask):
    name = "dmc_humanoid_stand"
    domain = "humanoid"
    sim_dt = 0.005
    decimation = 5
    time_limit = 25.0
    root_body = "torso"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (21,), np.float32)
    camera = {"distance": 4.0, "azimuth": 90.0, "elevation": -10.0, "track_body": "torso"}
    move_speed = 0.0

    def resolve(self, backend):
        self.limbs = backend.find("body", LIMBS)

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        views = backend.get_body_views(self.limbs)
        pos = xp.asarray(views.pos)
        xmat = self.xmat(backend, self.limbs[:1])[:, 0]
        torso = xmat.reshape(len(xmat), 3, 3)
        s["head_height"] = pos[:, 1, 2:]
        s["extremities"] = ((pos[:, 2:] - pos[:, :1]) @ torso).reshape(len(pos), 12)  # v . R per limb
        s["torso_vertical"] = xmat[:, [XMAT["zx"], XMAT["zy"], XMAT["zz"]]]
        s["com_velocity"] = self.sensor(backend, "torso_subtreelinvel")
        return s

    def observe(self, s, memory):
        parts = ("head_height", "extremities", "torso_vertical", "com_velocity")
        return self.xp.concat((s["qpos"][:, 7:], *(s[p] for p in parts), s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        xp = self.xp
        standing = tolerance(
            xp, s["head_height"][:, 0], (STAND_HEIGHT, float("inf")), margin=STAND_HEIGHT / 4
        )
        upright = tolerance(
            xp,
            s["torso_vertical"][:, 2],
            (0.9, float("inf")),
            margin=1.9,
            sigmoid="linear",
            value_at_margin=0.0,
        )
        control = tolerance(xp, s["ctrl"], margin=1.0, value_at_margin=0.0, sigmoid="quadratic").mean(1)
        small_control = (4.0 + control) / 5.0
        horizontal = s["com_velocity"][:, :2]
        if not self.move_speed:
            move = tolerance(xp, horizontal, margin=2.0).mean(1)
        else:
            speed = xp.norm(horizontal)
            fast = tolerance(
                xp, speed, (self.move_speed, float("inf")), self.move_speed, "linear", value_at_margin=0.0
            )
            move = (5.0 * fast + 1.0) / 6.0
        r = small_control * standing * upright * move
        return r, {"humanoid": r}

    def reset_state(self, env_ids, rng):
        xp, qpos = self.xp, self.random_joints(rng)
        quat = rng.uniform((4,), dtype=self.dtype)
        qpos[:, 3:7] = quat / xp.norm(quat)[:, None]
        return qpos, self.zero_qvel(rng)


class HumanoidWalk(HumanoidStand):
    name = "dmc_humanoid_walk"
    move_speed = 1.0


class HumanoidRun(HumanoidStand):
    name = "dmc_humanoid_run"
    move_speed = 10.0
