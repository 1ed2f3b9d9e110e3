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

from unienv.task import Task

FEET = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
OBS_SCALES = {"lin_vel": 2.0, "ang_vel": 0.25, "dof_vel": 0.05}


def rotate_inverse(quat: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (N, 3) in the frame of the body-to-world quaternions quat (N, 4) wxyz."""
    w, u = quat[:, :1], quat[:, 1:]
    return v * (2 * w**2 - 1) - 2 * w * torch.linalg.cross(u, v, dim=1) + 2 * u * (u * v).sum(1, keepdim=True)


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
        n, dev, info = backend.num_envs, backend.device, backend.info
        self.base, self.feet = backend.find("body", "base"), backend.find("body", FEET)
        joints = info.actuator_joint
        self.q_idx = torch.as_tensor(info.joint_qpos_adr[joints], device=dev)
        self.v_idx = torch.as_tensor(info.joint_dof_adr[joints], device=dev)
        self.home = torch.as_tensor(info.keyframes["home"], device=dev)
        self.default_q = self.home[self.q_idx]
        self.gain = torch.as_tensor(info.actuator_gain, device=dev)
        self.bias = torch.as_tensor(info.actuator_bias, device=dev)
        self.nv = backend.nv
        self.command = torch.zeros(n, 3, dtype=torch.float64, device=dev)
        self.last_action = torch.zeros(n, 12, dtype=torch.float64, device=dev)
        self.air_time = torch.zeros(n, len(FEET), dtype=torch.float64, device=dev)
        self.gravity = torch.tensor([0.0, 0.0, -1.0], dtype=torch.float64, device=dev)

    def action_to_ctrl(self, action):
        return self.default_q + self.action_scale * action.to(torch.float64)

    def base_state(self, backend):
        """Base height, and linear velocity, angular velocity, gravity direction in the base frame."""
        b = backend.get_body_views(self.base)
        quat = b.quat[:, 0].to(torch.float64)
        rotate = lambda v: rotate_inverse(quat, v.to(torch.float64))  # noqa: E731
        return (
            b.pos[:, 0, 2],
            rotate(b.lin_vel[:, 0]),
            rotate(b.ang_vel[:, 0]),
            rotate(self.gravity.expand_as(quat[:, 1:])),
        )

    def observe(self, backend):
        s = backend.get_state_views()
        _, lin_vel, ang_vel, gravity = self.base_state(backend)
        return torch.cat(
            (
                OBS_SCALES["lin_vel"] * lin_vel,
                OBS_SCALES["ang_vel"] * ang_vel,
                gravity,
                self.command
                * torch.tensor([2.0, 2.0, 0.25], dtype=torch.float64, device=self.command.device),
                s["qpos"][:, self.q_idx] - self.default_q,
                OBS_SCALES["dof_vel"] * s["qvel"][:, self.v_idx],
                self.last_action,
            ),
            dim=1,
        )

    def reward(self, backend, action):
        s = backend.get_state_views()
        height, lin_vel, ang_vel, gravity = self.base_state(backend)
        q, qd = s["qpos"][:, self.q_idx], s["qvel"][:, self.v_idx]
        torque = self.gain * s["ctrl"] + self.bias[:, 0] + self.bias[:, 1] * q + self.bias[:, 2] * qd
        contact = backend.get_contact_forces(self.feet)[..., 2].to(torch.float64) > 1.0
        action = action.to(torch.float64)
        terms = {
            "lin_vel": tracking(((self.command[:, :2] - lin_vel[:, :2]) ** 2).sum(1)),
            "ang_vel": tracking((self.command[:, 2] - ang_vel[:, 2]) ** 2),
            "lin_vel_z": lin_vel[:, 2] ** 2,
            "ang_vel_xy": (ang_vel[:, :2] ** 2).sum(1),
            "orientation": (gravity[:, :2] ** 2).sum(1),
            "base_height": (height.to(torch.float64) - self.base_height_target) ** 2,
            "torques": (torque**2).sum(1),
            "action_rate": ((action - self.last_action) ** 2).sum(1),
            "feet_air_time": feet_air_time(self.air_time, contact, self.command[:, :2], self.dt),
        }
        self.air_time = (self.air_time + self.dt) * ~contact
        self.last_action = action.clone()
        terms = {k: self.reward_weights[k] * self.dt * v for k, v in terms.items()}
        return sum(terms.values()), terms

    def terminated(self, backend):
        base_contact = backend.get_contact_forces(self.base)[:, 0].norm(dim=1) > 1.0
        gravity = self.base_state(backend)[3]
        return base_contact | (-gravity[:, 2] < np.cos(self.max_tilt))

    def reset_state(self, env_ids, rng):
        ids = env_ids.to(self.home.device)
        qpos = self.home.expand(len(ids), -1).clone()
        qpos[:, self.q_idx] += rng.uniform((12,), -0.1, 0.1)
        qvel = rng.uniform((self.nv,), -0.1, 0.1)
        r = self.command_ranges
        low = torch.tensor([r["lin_vel_x"][0], r["lin_vel_y"][0], r["ang_vel_yaw"][0]], dtype=torch.float64)
        high = torch.tensor([r["lin_vel_x"][1], r["lin_vel_y"][1], r["ang_vel_yaw"][1]], dtype=torch.float64)
        self.command[ids] = rng.uniform((3,), low.to(ids.device), high.to(ids.device))
        self.last_action[ids] = 0.0
        self.air_time[ids] = 0.0
        return qpos, qvel
