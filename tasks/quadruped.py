"""Quadruped: track a commanded planar velocity with a Go2-class robot (assets/quadruped.xml).

Twelve joints under the scene's PD position servos. Action (12): joint target
offsets in [-1, 1], scaled by `action_scale` (rad) around the "home" standing
pose (the order is FL, FR, RL, RR legs, hip, thigh, calf each). Command (3):
forward and lateral velocity and yaw rate, sampled per episode.
Observation (48): base linear (x2) and angular (x0.25) velocity in the base
frame, gravity projected into the base frame, the command (x2, x2, x0.25),
joint positions minus home, joint velocities (x0.05) and the last action.
Reward: a weighted sum of the terms below, each times the env step dt, in the
style of legged_gym: velocity tracking (exp(-err^2 / 0.25)), vertical and
roll/pitch velocity, orientation (tilt), base height, PD torques, action rate
and feet air time (rewarding steps longer than 0.5 s while commanded to move).
Terminates when the base touches anything or tilts more than `max_tilt` rad.
Reset: home pose with joints + U(-0.1, 0.1) rad, small random velocities.
Needs body views and contact forces.
"""

import os

import gymnasium as gym
import numpy as np
import torch

from unienv.task import Task, total
from unienv.tasks.common import rotate_inverse

FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
OBS_SCALES = {"lin_vel": 2.0, "ang_vel": 0.25, "dof_vel": 0.05}


# ---- reward terms: (N,) tensors from batched quantities ----------------------------


def tracking(error_sq: torch.Tensor, sigma: float = 0.25) -> torch.Tensor:
    return torch.exp(-error_sq / sigma)


def feet_air_time(air_time, contact, command_xy, dt, threshold=0.5):
    """Sum over the feet landing now of (their time in the air - threshold), if asked to move.

    air_time (N, feet) is the time each foot has been in the air before this step.
    """
    landing = (air_time > 0) & contact
    return ((air_time + dt - threshold) * landing).sum(1) * (command_xy.norm(dim=1) > 0.1)


class Quadruped(Task):
    name = "quadruped"
    scene = os.path.join(os.path.dirname(__file__), "assets", "quadruped.xml")
    sim_dt = 0.005
    decimation = 4
    single_action_space = gym.spaces.Box(-1.0, 1.0, (12,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (48,), np.float32)
    camera = {"distance": 2.0, "azimuth": 135.0, "elevation": -20.0, "track_body": "base"}
    requires = ("body_views", "contact_forces")

    def __init__(
        self,
        episode_length_s: float = 20.0,
        action_scale: float = 0.5,
        command_ranges: dict | None = None,
        reward_weights: dict | None = None,
        base_height_target: float = 0.30,
        max_tilt: float = 1.0,
    ):
        self.episode_length_s = episode_length_s
        self.action_scale = action_scale
        self.command_ranges = {"lin_vel_x": (-1.0, 1.0), "lin_vel_y": (-0.5, 0.5), "ang_vel_yaw": (-1.0, 1.0)}
        self.command_ranges.update({k: tuple(v) for k, v in (command_ranges or {}).items()})
        self.reward_weights = {
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
        self.reward_weights.update(reward_weights or {})
        self.base_height_target = base_height_target
        self.max_tilt = max_tilt

    def setup(self, backend):
        super().setup(backend)
        info = backend.info
        self.base, self.feet = backend.find("body", "base"), backend.find("body", FEET)
        self.base_and_feet = np.concatenate((self.base, self.feet))
        joints = info.actuator_joint
        self.q_idx = torch.as_tensor(info.joint_qpos_adr[joints], device=self.device)
        self.v_idx = torch.as_tensor(info.joint_dof_adr[joints], device=self.device)
        self.home = self.tensor(info.keyframes["home"])
        self.default_q = self.home[self.q_idx]
        self.gain = self.tensor(info.actuator_gain)
        self.bias = self.tensor(info.actuator_bias)
        self.nv = backend.nv
        self.down = self.tensor([0.0, 0.0, -1.0])
        self.command_scale = self.tensor([2.0, 2.0, 0.25])
        r = self.command_ranges
        self.command_low, self.command_high = self.tensor(
            [[r["lin_vel_x"][i], r["lin_vel_y"][i], r["ang_vel_yaw"][i]] for i in (0, 1)]
        )
        self.cos_max_tilt = float(np.cos(self.max_tilt))

    def action_to_ctrl(self, action):
        return self.default_q + self.action_scale * action

    def read(self, backend):
        """Joint state, base height and base-frame velocities and gravity, contacts."""
        views = backend.get_state_views()
        b = backend.get_body_views(self.base)
        quat = b.quat[:, 0]
        forces = backend.get_contact_forces(self.base_and_feet)
        q, qd = views["qpos"][:, self.q_idx], views["qvel"][:, self.v_idx]  # gathers: copies
        return {
            "q": q,
            "qd": qd,
            "torque": self.gain * views["ctrl"]
            + self.bias[:, 0]
            + self.bias[:, 1] * q
            + self.bias[:, 2] * qd,
            "height": b.pos[:, 0, 2],
            "lin_vel": rotate_inverse(quat, b.lin_vel[:, 0]),
            "ang_vel": rotate_inverse(quat, b.ang_vel[:, 0]),
            "gravity": rotate_inverse(quat, self.down.expand(len(quat), 3)),
            "base_contact": forces[:, 0].norm(dim=1) > 1.0,
            "foot_contact": forces[:, 1:, 2] > 1.0,
        }

    def observe(self, s, memory):
        return torch.cat(
            (
                OBS_SCALES["lin_vel"] * s["lin_vel"],
                OBS_SCALES["ang_vel"] * s["ang_vel"],
                s["gravity"],
                memory["command"] * self.command_scale,
                s["q"] - self.default_q,
                OBS_SCALES["dof_vel"] * s["qd"],
                memory["last_action"],
            ),
            dim=1,
        )

    def reward(self, s, prev, action, memory):
        command, lin_vel, ang_vel = memory["command"], s["lin_vel"], s["ang_vel"]
        terms = {
            "lin_vel": tracking((command[:, :2] - lin_vel[:, :2]).square().sum(1)),
            "ang_vel": tracking((command[:, 2] - ang_vel[:, 2]).square()),
            "lin_vel_z": lin_vel[:, 2].square(),
            "ang_vel_xy": ang_vel[:, :2].square().sum(1),
            "orientation": s["gravity"][:, :2].square().sum(1),
            "base_height": (s["height"] - self.base_height_target).square(),
            "torques": s["torque"].square().sum(1),
            "action_rate": (action - memory["last_action"]).square().sum(1),
            "feet_air_time": feet_air_time(memory["air_time"], s["foot_contact"], command[:, :2], self.dt),
        }
        terms = {k: (self.reward_weights[k] * self.dt) * v for k, v in terms.items()}
        return total(terms), terms

    def terminated(self, s, memory):
        return s["base_contact"] | (-s["gravity"][:, 2] < self.cos_max_tilt)

    def remember(self, s, action, memory):
        air_time = (memory["air_time"] + self.dt) * ~s["foot_contact"]
        return {"command": memory["command"], "last_action": action, "air_time": air_time}

    def reset_state(self, env_ids, rng):
        qpos = self.home.expand(rng.rows, -1).clone()
        qpos[:, self.q_idx] += rng.uniform((12,), -0.1, 0.1, dtype=self.dtype)
        return qpos, rng.uniform((self.nv,), -0.1, 0.1, dtype=self.dtype)

    def reset_memory(self, rng):
        zeros = torch.zeros(rng.rows, len(FEET) + 12, dtype=self.dtype, device=self.device)
        return {
            "command": rng.uniform((3,), self.command_low, self.command_high, dtype=self.dtype),
            "last_action": zeros[:, :12],
            "air_time": zeros[:, 12:],
        }
