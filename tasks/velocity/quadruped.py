"""Quadruped: track a commanded planar velocity with a Go2-class robot (assets/quadruped.xml).

Twelve joints under the scene's PD position servos. Action (12): joint target
offsets in [-1, 1], scaled by `action_scale` (rad) around the "home" standing
pose (the order is FL, FR, RL, RR legs, hip, thigh, calf each). Command (3):
forward and lateral velocity and yaw rate, sampled per episode.
Observation blocks: base_lin_vel (3, x2) and base_ang_vel (3, x0.25) in the
base frame, gravity (3, projected into the base frame), command (3, x2, x2,
x0.25), joint_pos (12, minus home), joint_vel (12, x0.05) and last_action (12).
Reward: a weighted sum of the terms below, each times the env step dt, in the
style of legged_gym: velocity tracking (exp(-err^2 / 0.25)), vertical and
roll/pitch velocity, orientation (tilt), base height, PD torques, action rate
and feet air time (rewarding steps longer than 0.5 s while commanded to move).
Terminates when the base touches anything or tilts more than `max_tilt` rad.
Reset: home pose with joints + U(-0.1, 0.1) rad, small random velocities.
Needs body views and contact forces.
"""

import dataclasses
import os

import gymnasium as gym
import numpy as np

from unienv.task import Task, TaskOptions, option
from unienv.tasks import ASSETS
from unienv.tasks.common import rotation_matrix, to_body

FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
JOINTS = 12  # hip, thigh and calf of each leg, one PD servo each
OBS_SCALES = {"lin_vel": 2.0, "ang_vel": 0.25, "dof_vel": 0.05}
COMMAND_SCALE = (2.0, 2.0, 0.25)
# what each observation block is, for a deployed policy (unienv.deploy; MuJoCo's frames)
OBSERVATION = {
    "base_lin_vel": {"quantity": "root_linear_velocity", "frame": "base", "scale": OBS_SCALES["lin_vel"]},
    "base_ang_vel": {"quantity": "root_angular_velocity", "frame": "base", "scale": OBS_SCALES["ang_vel"]},
    "gravity": {"quantity": "gravity", "frame": "base", "scale": 1.0},
    "command": {"quantity": "command", "scale": COMMAND_SCALE},
    "joint_pos": {"quantity": "joint_position", "offset": "default_pose", "scale": 1.0},
    "joint_vel": {"quantity": "joint_velocity", "scale": OBS_SCALES["dof_vel"]},
    "last_action": {"quantity": "last_action", "scale": 1.0},
}
TERMS = ("lin_vel", "ang_vel", "lin_vel_z", "ang_vel_xy", "orientation", "base_height", "torques")
TERMS += ("action_rate", "feet_air_time")
COMMAND_RANGES = {"lin_vel_x": (-1.0, 1.0), "lin_vel_y": (-0.5, 0.5), "ang_vel_yaw": (-1.0, 1.0)}
REWARD_WEIGHTS = {
    "lin_vel": 1.0,
    "ang_vel": 0.5,
    "lin_vel_z": -2.0,
    "ang_vel_xy": -0.05,
    "orientation": -1.0,
    "base_height": -10.0,
    "torques": -2e-4,
    "action_rate": -0.01,
    "feet_air_time": 1.0,
}


DICTS = ("command_ranges", "reward_weights")


@dataclasses.dataclass
class QuadrupedOptions(TaskOptions):
    episode_length_s: float = option(20.0, "s: an episode is truncated after it")
    action_scale: float = option(0.5, "rad: the joint target offset of an action of 1")
    command_ranges: dict = option(
        COMMAND_RANGES, "[lo, hi] of each command (m/s, m/s, rad/s); the ones given replace these"
    )
    reward_weights: dict = option(
        REWARD_WEIGHTS, "each term's weight (then times the env step dt); the ones given replace these"
    )
    base_height_target: float = option(0.30, "m: the base height term's target")
    max_tilt: float = option(1.0, "rad: an episode ends when the base tilts more")
    terminate_when_unhealthy: bool = option(
        True, "end the episode on a fall (base contact, or a tilt beyond max_tilt); False: fixed length"
    )

    def __post_init__(self):
        super().__post_init__()
        # a robot variant's options redeclare these two fields with its own defaults
        defaults = {f.name: f.default_factory() for f in dataclasses.fields(self) if f.name in DICTS}
        given = {k: tuple(v) for k, v in (self.command_ranges or {}).items()}
        self.command_ranges = {**defaults["command_ranges"], **given}
        self.reward_weights = {**defaults["reward_weights"], **(self.reward_weights or {})}


# ---- reward terms: (N,) arrays from batched quantities ----------------------------


def tracking(xp, error_sq, sigma: float = 0.25):
    return xp.exp(error_sq * (-1.0 / sigma))


def feet_air_time(xp, air_time, contact, command_xy, dt, threshold):
    """Sum over the feet landing now of (their time in the air - threshold), if asked to move.

    air_time (N, feet) is the time each foot has been in the air before this step.
    """
    landing = (air_time > 0) & contact
    return ((air_time + (dt - threshold)) * landing).sum(1) * (xp.norm(command_xy) > 0.1)


class Quadruped(Task):
    name = "quadruped"
    scene = os.path.join(ASSETS, "quadruped.xml")
    sim_dt = 0.005
    decimation = 4
    root_body = "base"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (JOINTS,), np.float32)
    camera = {"distance": 2.0, "azimuth": 135.0, "elevation": -20.0, "track_body": "base"}
    requires = ("body_views", "contact_forces")
    arrays = "any"
    Options = QuadrupedOptions
    feet, joints, home_key, air_time_threshold = FEET, JOINTS, "home", 0.5  # what a robot variant sets
    terms = TERMS

    def observation_blocks(self):
        blocks = {"base_lin_vel": 3, "base_ang_vel": 3, "gravity": 3, "command": 3}
        return blocks | {"joint_pos": self.joints, "joint_vel": self.joints, "last_action": self.joints}

    def deployment(self):
        return {
            "observation": OBSERVATION,
            "commands": {name: self.command_ranges[name] for name in COMMAND_RANGES},
            "action": {"type": "joint_position", "scale": self.action_scale, "default_pose": self.home_key},
        }

    def setup(self, backend):
        super().setup(backend)
        info = backend.info
        self.base_and_feet = backend.find("body", (self.root_body, *self.feet))
        # the base's free joint: qpos [p, wxyz quat], qvel [v world, w base frame] (MuJoCo's layout)
        free = int(np.flatnonzero(info.joint_type == 0)[0])
        self.root_q, self.root_v = int(info.joint_qpos_adr[free]), int(info.joint_dof_adr[free])
        joints = info.actuator_joint
        self.q_idx = self.xp.asarray(info.joint_qpos_adr[joints])
        self.v_idx = self.xp.asarray(info.joint_dof_adr[joints])
        self.home = self.array(info.keyframes[self.home_key])
        self.default_q = self.home[self.q_idx]
        self.gain = self.array(info.actuator_gain)
        # (3, nu): torque = gain ctrl + b0 + b1 q + b2 qd
        self.bias = self.array(np.ascontiguousarray(info.actuator_bias.T))
        self.nv = backend.nv
        scales = (OBS_SCALES["lin_vel"],) * 3 + (OBS_SCALES["ang_vel"],) * 3 + (1.0,) * 3
        self.base_obs_scale = self.array(scales)
        self.command_scale = self.array(COMMAND_SCALE)
        self.weights = self.array([self.reward_weights[k] * self.dt for k in self.terms])
        r = self.command_ranges
        self.command_low, self.command_high = self.array(
            [[r["lin_vel_x"][i], r["lin_vel_y"][i], r["ang_vel_yaw"][i]] for i in (0, 1)]
        )
        self.cos_max_tilt = float(np.cos(self.max_tilt))

    def action_to_ctrl(self, action):
        return self.default_q + self.action_scale * action

    def read(self, backend):
        """Joint state, base height, base-frame velocities and gravity (N, 3, 3), the base's
        rotation matrix, contacts."""
        xp, views, p, v = self.xp, backend.get_state_views(), self.root_q, self.root_v
        qpos, qvel = xp.asarray(views["qpos"]), xp.asarray(views["qvel"])
        rot = rotation_matrix(xp, qpos[:, p + 3 : p + 7])  # base to world
        forces = xp.asarray(backend.get_contact_forces(self.base_and_feet))
        q, qd = qpos[:, self.q_idx], qvel[:, self.v_idx]  # gathers: copies
        bias = self.bias
        return {
            "q": q,
            "qd": qd,
            "torque": self.gain * xp.asarray(views["ctrl"]) + bias[0] + bias[1] * q + bias[2] * qd,
            "height": xp.copy(qpos[:, p + 2]),
            # lin vel (world, turned into the base frame), ang vel (MuJoCo's free joint keeps it in
            # the base frame), gravity (the world's -z in the base frame: -R's last row), (N, 3, 3)
            "base": xp.stack((to_body(qvel[:, v : v + 3], rot), qvel[:, v + 3 : v + 6], -rot[:, 2]), 1),
            "rot": rot,
            "base_contact": xp.square(forces[:, 0]).sum(1) > 1.0,  # more than 1 N
            "foot_contact": forces[:, 1:, 2] > 1.0,
        }

    def observe(self, s, memory):
        return self.xp.concat(
            (
                s["base"].reshape(len(s["base"]), 9) * self.base_obs_scale,
                memory["command"] * self.command_scale,
                s["q"] - self.default_q,
                OBS_SCALES["dof_vel"] * s["qd"],
                memory["last_action"],
            ),
            1,
        )

    def reward(self, s, prev, action, memory):
        xp, command, base = self.xp, memory["command"], s["base"]
        lin_vel, ang_vel, gravity = base[:, 0], base[:, 1], base[:, 2]
        sq = xp.square
        raw = (
            tracking(xp, sq(command[:, :2] - lin_vel[:, :2]).sum(1)),
            tracking(xp, sq(command[:, 2] - ang_vel[:, 2])),
            sq(lin_vel[:, 2]),
            sq(ang_vel[:, :2]).sum(1),
            sq(gravity[:, :2]).sum(1),
            sq(s["height"] - self.base_height_target),
            sq(s["torque"]).sum(1),
            sq(action - memory["last_action"]).sum(1),
            feet_air_time(
                xp, memory["air_time"], s["foot_contact"], command[:, :2], self.dt, self.air_time_threshold
            ),
            *self.extra_terms(s, action, memory),
        )
        weighted = xp.stack(raw, 1) * self.weights  # each term times its weight and dt
        return weighted.sum(1), dict(zip(self.terms, weighted.T, strict=True))

    def extra_terms(self, s, action, memory):
        """A robot variant's reward terms beyond TERMS, in the order of its `terms`; none here."""
        return ()

    def terminated(self, s, memory):
        fell = s["base_contact"] | (-s["base"][:, 2, 2] < self.cos_max_tilt)
        return fell if self.terminate_when_unhealthy else self.xp.zeros_like(fell)

    def remember(self, s, action, memory):
        air_time = (memory["air_time"] + self.dt) * ~s["foot_contact"]
        return {"command": memory["command"], "last_action": self.xp.copy(action), "air_time": air_time}

    def reset_state(self, env_ids, rng):
        qpos = self.xp.copy(self.xp.broadcast_to(self.home, (rng.rows, len(self.home))))
        qpos[:, self.q_idx] += rng.uniform((self.joints,), -0.1, 0.1, dtype=self.dtype)
        return qpos, rng.uniform((self.nv,), -0.1, 0.1, dtype=self.dtype)

    def reset_memory(self, rng):
        zeros = self.xp.zeros((rng.rows, len(self.feet) + self.joints), self.dtype)
        return {
            "command": rng.uniform((3,), self.command_low, self.command_high, dtype=self.dtype),
            "last_action": zeros[:, : self.joints],
            "air_time": zeros[:, self.joints :],
        }
