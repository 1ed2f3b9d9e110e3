"""dm_control's fish swim: a fish in a fluid (no gravity) swims its mouth to a random target.

Model: dm_control's fish.xml (0.004 s), 10 physics steps per env step (0.04 s), 1000
steps. Action (5): tail, tail twist, fins flap and fins roll/pitch actuators (position
servos). Observation (24): joint_angles = the tail's and fins' 7 joint angles; upright =
torso xmat zz (1); target = target - mouth in the mouth geom's frame (3); velocity = qvel
(13). Reward: (7 in_target + upright') / 8, in_target = tolerance(|target - mouth|, (0, r),
margin 2 r) with r = 0.005 + 0.04 (mouth and target radii), upright' = (1 + zz) / 2.
Reset: root orientation a normalized N(0, I) quaternion, the 7 joints ~ U(-0.2, 0.2), at
rest, at the model's position; the target at x, y ~ U(-0.4, 0.4), z ~ U(0.1, 0.3). dm_control
moves the target geom in the model; here each env keeps its target in memory. The mouth's
pose is the torso's composed with the mouth geom's constant offset (a capsule from
(0, .079, 0) to (0, .07, 0): centred at y = .0745, MuJoCo turns its z axis to the torso's +y).
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import XMAT, DMCTask, tolerance

BLOCKS = {"joint_angles": 7, "upright": 1, "target": 3, "velocity": 13}
JOINTS = ["tail1", "tail_twist", "tail2", "finright_roll", "finright_pitch", "finleft_roll", "finleft_pitch"]
MOUTH_POS = (0.0, 0.0745, 0.0)  # the mouth geom's centre in the torso frame
MOUTH_ROT = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0))  # its frame: z along the torso's +y
RADII = 0.005 + 0.04  # mouth and target


class FishSwim(DMCTask):
    name = "dmc_fish_swim"
    domain = "fish"
    sim_dt = 0.004
    decimation = 10
    time_limit = 40.0
    root_body = "torso"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
    camera = {"distance": 1.0, "azimuth": 90.0, "elevation": -30.0, "track_body": "torso"}

    def resolve(self, backend):
        self.torso = backend.find("body", ["torso"])
        self.joints = [backend.joint_qpos_slice(j).start for j in JOINTS]
        self.mouth_pos, self.mouth_rot = self.array(MOUTH_POS), self.array(MOUTH_ROT)
        self.quat = slice(
            backend.joint_qpos_slice("root").start + 3, backend.joint_qpos_slice("root").start + 7
        )

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        pos = xp.asarray(backend.get_body_views(self.torso).pos)[:, 0]
        xmat = self.xmat(backend, self.torso)[:, 0]
        torso = xmat.reshape(len(xmat), 3, 3)
        s["upright"] = xmat[:, XMAT["zz"], None]
        s["mouth"] = pos + (torso @ self.mouth_pos[:, None])[:, :, 0]
        s["mouth_frame"] = torso @ self.mouth_rot
        return s

    def _to_target(self, s, memory):
        """target - mouth in the mouth geom's frame (N, 3)."""
        return ((memory["target"] - s["mouth"])[:, None, :] @ s["mouth_frame"])[:, 0]

    def observe(self, s, memory):
        joints = s["qpos"][:, self.joints]
        return self.xp.concat((joints, s["upright"], self._to_target(s, memory), s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        in_target = tolerance(
            self.xp, self.xp.norm(self._to_target(s, memory)), (0.0, RADII), margin=2 * RADII
        )
        r = (7.0 * in_target + 0.5 * (s["upright"][:, 0] + 1.0)) / 8.0
        return r, {"swim": r}

    def reset_state(self, env_ids, rng):
        xp = self.xp
        qpos = xp.zeros((rng.rows, self.nq), self.dtype) + self.qpos0
        quat = rng.normal((4,), dtype=self.dtype)
        qpos[:, self.quat] = quat / xp.norm(quat)[:, None]
        qpos[:, self.joints] = rng.uniform((len(self.joints),), -0.2, 0.2, dtype=self.dtype)
        return qpos, self.zero_qvel(rng)

    def reset_memory(self, rng):
        target = rng.uniform(
            (3,), self.array([-0.4, -0.4, 0.1]), self.array([0.4, 0.4, 0.3]), dtype=self.dtype
        )
        return {"target": target}

    def scene_marks(self, memory):
        """Camera images draw each env's target where its memory has it."""
        return {"geom_pos": {"target": memory["target"]}}
