"""dm_control's reacher: bring a two-link planar arm's fingertip to a random target.

Model: dm_control's reacher.xml (0.02 s, no contacts), one env step per physics step, 1000
steps. Action (2): shoulder and wrist motors. Observation (6): position = qpos (2),
to_target = target - finger in x, y (2), velocity = qvel (2). Reward: 1 while the
fingertip is within the target's radius plus its own (0.05 + 0.01 easy, 0.015 + 0.01 hard),
else 0 (tolerance without margin). Reset: shoulder ~ U(-pi, pi), wrist ~ U(its range), at
rest; the target at angle a ~ U(0, 2 pi) and radius r ~ U(0.05, 0.2), (r sin a, r cos a).
dm_control moves the target geom in the model; here each env keeps its target in memory.
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, tolerance

BLOCKS = {"position": 2, "to_target": 2, "velocity": 2}
FINGER_SIZE = 0.01  # the finger geom's radius


class ReacherEasy(DMCTask):
    name = "dmc_reacher_easy"
    domain = "reacher"
    sim_dt = 0.02
    decimation = 1
    time_limit = 20.0
    root_body = "arm"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    camera = {"distance": 1.0, "azimuth": 90.0, "elevation": -89.0, "lookat": (0.0, 0.0, 0.0)}
    target_size = 0.05

    def resolve(self, backend):
        self.finger = backend.find("body", ["finger"])  # its geom sits at the body's origin

    def read(self, backend):
        s = self.read_state(backend)
        s["finger"] = self.xp.asarray(backend.get_body_views(self.finger).pos)[:, 0, :2]
        return s

    def observe(self, s, memory):
        return self.xp.concat((s["qpos"], memory["target"] - s["finger"], s["qvel"]), 1)

    def reward(self, s, prev, action, memory):
        distance = self.xp.norm(memory["target"] - s["finger"])
        r = tolerance(self.xp, distance, (0.0, self.target_size + FINGER_SIZE))
        return r, {"at_target": r}

    def reset_memory(self, rng):
        angle = rng.uniform((1,), 0.0, 2.0 * np.pi, dtype=self.dtype)
        radius = rng.uniform((1,), 0.05, 0.2, dtype=self.dtype)
        return {"target": self.xp.concat((radius * self.xp.sin(angle), radius * self.xp.cos(angle)), 1)}

    def scene_marks(self, memory):
        """Camera images draw each env's target, at dm_control's size for the task."""
        target = memory["target"]
        return {
            "geom_pos": {"target": target},
            "geom_size": {"target": target[:, :1] * 0.0 + self.target_size},
        }


class ReacherHard(ReacherEasy):
    name = "dmc_reacher_hard"
    target_size = 0.015
