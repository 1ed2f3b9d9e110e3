"""Go1 velocity: the Unitree Go1 of MuJoCo Menagerie (`unitree_go1/scene.xml`, found by
`unienv.robots`) tracks a commanded planar velocity and yaw rate on flat ground.

The quadruped task's scheme (tasks/quadruped.py: command, observation blocks, reward terms,
termination) on the real robot, reset at the default pose with `reset_noise_scale`, plus two legged_gym/mjlab terms: feet_slip (squared
planar speed of the feet in contact) and joint_limits (how far each joint is past 90 % of its
range). Joint, actuator and body names are Menagerie's, kept as they are: actions follow the
model's actuator order (FR, FL, RR, RL legs; hip, thigh, calf each).
PD control, as Menagerie's model states it: position actuators kp 100 N m/rad, joint damping
2 (1 on the abduction joints) N m s/rad, armature 0.01, torque limits 23.7 N m (35.55 at the
knees). Default pose: Menagerie's "home" keyframe (hip 0, thigh 0.9, calf -1.8 rad; trunk at
0.27 m). Action scale 0.25 rad (legged_gym's). Timing: sim_dt 0.004 s, decimation 5 (a 0.02 s
control step), as MuJoCo Playground's Go1 joystick. Feet are the calf bodies (the foot spheres
are geoms of the calves). Needs body views and contact forces.
"""

import dataclasses

import gymnasium as gym
import numpy as np

from unienv import robots
from unienv.task import option
from unienv.tasks.velocity.quadruped import COMMAND_RANGES, REWARD_WEIGHTS, TERMS, Quadruped, QuadrupedOptions
from unienv.tasks.velocity.quadruped_rough import QuadrupedRough, QuadrupedRoughOptions

WEIGHTS = REWARD_WEIGHTS | {"feet_slip": -0.1, "joint_limits": -10.0}


@dataclasses.dataclass
class Go1Options(QuadrupedOptions):
    action_scale: float = option(0.25, "rad: the joint target offset of an action of 1")
    command_ranges: dict = option(
        COMMAND_RANGES, "[lo, hi] of each command (m/s, m/s, rad/s); the ones given replace these"
    )
    reward_weights: dict = option(
        WEIGHTS, "each term's weight (then times the env step dt); the ones given replace these"
    )
    base_height_target: float = option(0.27, "m: the base height term's target (the home pose's)")
    max_tilt: float = option(1.0, "rad: an episode ends when the base tilts more")
    reset_noise_scale: float = option(
        0.1, "rad, rad/s, m/s: reset joints and velocities U(-it, it) off the pose"
    )


def feet_slip(xp, foot_vel, contact):
    """Squared planar speed of the feet that touch the ground, summed: (N, F, 3), (N, F) -> (N,)."""
    return (xp.square(foot_vel[..., :2]).sum(2) * contact).sum(1)


def joint_limits(xp, q, low, high):
    """How far each joint is outside [low, high] (rad), summed: (N, J) -> (N,)."""
    return (xp.clip(low - q, 0.0, None) + xp.clip(q - high, 0.0, None)).sum(1)


class Go1Velocity(Quadruped):
    name = "go1_velocity"
    menagerie, scene_file = "unitree_go1", "scene.xml"
    sim_dt, decimation = 0.004, 5
    root_body = "trunk"
    feet = ("FR_calf", "FL_calf", "RR_calf", "RL_calf")
    single_action_space = gym.spaces.Box(-1.0, 1.0, (12,), np.float32)
    camera = {"distance": 1.5, "azimuth": 135.0, "elevation": -20.0, "track_body": "trunk"}
    terms = (*TERMS, "feet_slip", "joint_limits")
    Options = Go1Options
    soft_limits = 0.9  # joint_limits counts from this fraction of each joint's range

    def __init__(self, **options):
        super().__init__(**options)
        self.scene = robots.model_file(self.menagerie, self.scene_file)
        self.joints = self.single_action_space.shape[0]

    def setup(self, backend):
        super().setup(backend)
        low, high = backend.info.joint_range[backend.info.actuator_joint].T
        middle, half = (low + high) / 2, (high - low) / 2 * self.soft_limits
        self.q_low, self.q_high = self.array(middle - half), self.array(middle + half)
        self.feet_ids = backend.find("body", self.feet)

    def read(self, backend):
        s = super().read(backend)
        s["foot_vel"] = self.xp.asarray(backend.get_body_views(self.feet_ids).lin_vel)
        return s

    def reset_state(self, env_ids, rng):
        xp, scale = self.xp, self.reset_noise_scale
        qpos = xp.copy(xp.broadcast_to(self.home, (rng.rows, len(self.home))))
        qpos[:, self.q_idx] += rng.uniform((self.joints,), -scale, scale, dtype=self.dtype)
        return qpos, rng.uniform((self.nv,), -scale, scale, dtype=self.dtype)

    def extra_terms(self, s, action, memory):
        xp = self.xp
        return feet_slip(xp, s["foot_vel"], s["foot_contact"]), joint_limits(
            xp, s["q"], self.q_low, self.q_high
        )


@dataclasses.dataclass
class Go1RoughOptions(Go1Options, QuadrupedRoughOptions):
    """Go1's options and quadruped_rough's terrain, spawn and scan options."""


class Go1VelocityRough(QuadrupedRough, Go1Velocity):
    """go1_velocity_rough: the Go1 on generated terrain with a height scan and the terrain
    curriculum, exactly as quadruped_rough does it (tasks/quadruped_rough.py), Menagerie's
    floor replaced by the terrain's heightfield."""

    name = "go1_velocity_rough"
    Options = Go1RoughOptions
