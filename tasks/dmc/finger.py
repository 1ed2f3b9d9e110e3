"""dm_control's finger: a two-joint planar finger spins a free spinner, or turns its tip onto a target.

Model: dm_control's finger.xml (0.01 s, elliptic cones), 2 physics steps per env step
(0.02 s), 1000 steps. Action (2): proximal and distal motors. Observation (12), all from
sensors as in dm_control: position = proximal and distal joint angles, then the spinner
tip's x, z relative to the spinner (4); velocity = proximal, distal and spinner hinge
velocities (3); touch = log1p of the fingertip's two touch sensors (2); target_position =
the target's x, z relative to the spinner (2); dist_to_target = |target - tip| - target
radius (1). Reward: 1 while the tip is inside the target (dist_to_target <= 0), else 0.
Target radius 0.07 (easy) or 0.03 (hard). Spin observes the first 9 (no target) and earns
1 while the spinner turns at 15 rad/s or faster (hinge velocity <= -15); dm_control lowers
the spinner's damping from 0.5 to 0.03 for it, so spin simulates finger.xml with that damping
(written once to unienv's cache folder). Reset: the target at angle a ~ U(-pi, pi) on the
circle of radius 0.13 (the spinner's length) around the spinner's hinge; finger joints
~ U(their range), spinner ~ U(-pi, pi), at rest. dm_control redraws the joints until the
state has no contact; a reset here cannot run collision detection, so a drawn state may
start in contact, which the first steps resolve. dm_control moves the target site in the
model; here each env keeps its target in memory. Touch sensors are read as dm_control's
step leaves them, from its last substep (`substep_reads`; see tasks/dmc/common.py).
"""

import gymnasium as gym
import numpy as np

from unienv.tasks.dmc.common import DMCTask, derived_scene

BLOCKS = {"position": 4, "velocity": 3, "touch": 2, "target_position": 2, "dist_to_target": 1}
HINGE = (0.2, 0.4)  # the spinner hinge's x, z (fixed)
SPIN_BLOCKS = {"position": 4, "velocity": 3, "touch": 2}
SPINNER_LENGTH = 0.13  # cap1's radius plus half-length: the target circle's radius


class FingerTurnEasy(DMCTask):
    name = "dmc_finger_turn_easy"
    domain = "finger"
    sim_dt = 0.01
    decimation = 2
    time_limit = 20.0
    root_body = "proximal"
    blocks = BLOCKS
    single_action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    camera = {"distance": 1.5, "azimuth": 90.0, "elevation": -5.0, "lookat": (0.0, 0.0, 0.4)}
    target_radius = 0.07
    XZ = [0, 2]
    substep_reads = ("sensors",)  # touch: dm_control's last substep's

    def read(self, backend):
        xp, s = self.xp, self.read_state(backend)
        spinner = self.sensor(backend, "spinner")[:, self.XZ]
        s["spinner"] = spinner
        s["tip"] = self.sensor(backend, "tip")[:, self.XZ] - spinner
        s["joints"] = xp.concat((self.sensor(backend, "proximal"), self.sensor(backend, "distal")), 1)
        names = ("proximal_velocity", "distal_velocity", "hinge_velocity")
        s["velocity"] = xp.concat([self.sensor(backend, n) for n in names], 1)
        s["touch"] = xp.log1p(
            xp.concat((self.sensor(backend, "touchtop"), self.sensor(backend, "touchbottom")), 1)
        )
        return s

    def _target(self, s, memory):
        """The target relative to the spinner (N, 2) and the tip's distance to its edge (N,)."""
        target = memory["target"] - s["spinner"]
        return target, self.xp.norm(target - s["tip"]) - self.target_radius

    def observe(self, s, memory):
        target, dist = self._target(s, memory)
        return self.xp.concat((s["joints"], s["tip"], s["velocity"], s["touch"], target, dist[:, None]), 1)

    def reward(self, s, prev, action, memory):
        r = self.xp.astype(self._target(s, memory)[1] <= 0.0, self.dtype)
        return r, {"on_target": r}

    def reset_memory(self, rng):
        angle = rng.uniform((1,), -np.pi, np.pi, dtype=self.dtype)
        x, z = HINGE[0] + SPINNER_LENGTH * self.xp.sin(angle), HINGE[1] + SPINNER_LENGTH * self.xp.cos(angle)
        return {"target": self.xp.concat((x, z), 1)}

    def scene_marks(self, memory):
        """Camera images draw each env's target (x, z in the spinner's plane), at its size."""
        x, z = memory["target"][:, :1], memory["target"][:, 1:]
        return {
            "site_pos": {"target": self.xp.concat((x, 0.0 * x, z), 1)},
            "site_size": {"target": 0.0 * x + self.target_radius},
        }


class FingerTurnHard(FingerTurnEasy):
    name = "dmc_finger_turn_hard"
    target_radius = 0.03


def low_spinner_damping(root) -> None:
    """finger.xml as dm_control's spin task runs it: the spinner hinge's damping at 0.03, and
    the target and tip sites hidden (alpha 0: no physics reads a site's colour)."""
    next(j for j in root.iter("joint") if j.get("name") == "hinge").set("damping", "0.03")
    for site in root.iter("site"):
        if site.get("name") in ("target", "tip"):
            site.set("rgba", "0.5 0.5 0.5 0")


class FingerSpin(FingerTurnEasy):
    name = "dmc_finger_spin"
    blocks = SPIN_BLOCKS

    @property
    def scene(self) -> str:
        return derived_scene(self.domain, "spin", low_spinner_damping)

    def observe(self, s, memory):
        return self.xp.concat((s["joints"], s["tip"], s["velocity"], s["touch"]), 1)

    def reward(self, s, prev, action, memory):
        r = self.xp.astype(s["velocity"][:, 2] <= -15.0, self.dtype)
        return r, {"spinning": r}

    def reset_memory(self, rng):
        return {}

    def scene_marks(self, memory):
        return {}
