"""A robot for the velocity task, as data: `RobotSpec`, one per robot in robots/.

A spec names the robot's scene (a MuJoCo Menagerie folder and file, found by `unienv.robots`, or
a scene shipped in tasks/assets/), its root and feet bodies, its default pose (a keyframe of the
scene, or a stance the spec adds as one), its PD gains where the task sets them rather than the
model (`gains`: each joint's kp and kd; a torque actuator becomes a position servo), its action
scale, control timing, default reward weights, command ranges and what its scene needs per
engine. `scene(flat)` writes the edited copy where the spec edits anything (once per content,
unienv's cache folder) and returns its path with each actuator's torque limit over kp. Docs
(the tasks page's robot table) read `title`, `source`, `license` and `gains_doc`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from unienv import robots
from unienv.backends.scene import edit_spec, write_spec

WEIGHTS = {  # legged_gym's reward scales for its velocity task, each then times the env step dt
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
COMMAND_RANGES = {"lin_vel_x": (-1.0, 1.0), "lin_vel_y": (-0.5, 0.5), "ang_vel_yaw": (-1.0, 1.0)}
"""legged_gym's: m/s, m/s, rad/s, each sampled per episode uniformly in its range."""


@dataclasses.dataclass(frozen=True, eq=False)
class RobotSpec:
    """A robot of the velocity task; see the module docstring. Units SI, angles in rad."""

    name: str  # the task ids' prefix: "go1" -> go1_velocity
    title: str  # "Unitree Go1", for docs
    scene: str  # "<menagerie folder>/<file>", or an absolute path (tasks/assets/)
    source: str  # where the model comes from, for docs
    license: str
    gains_doc: str  # the PD gains and whose they are, for docs
    root_body: str
    feet: tuple[str, ...]  # bodies whose ground contact is a foot's (a biped's left foot first)
    joints: int  # actuators, one per actuated joint: the action's width
    sim_dt: float
    decimation: int
    action_scale: float  # rad per unit of action (or x torque limit / kp: scale_by_torque)
    base_height_target: float  # m: the root's height in the default pose
    weights: dict[str, float]  # default reward terms and weights (tasks/velocity/terms.py)
    command_ranges: dict[str, tuple[float, float]] = dataclasses.field(default_factory=lambda: COMMAND_RANGES)
    keyframe: str = "home"  # the default pose's keyframe (added from `stance` where given)
    stance: dict[str, float] | None = None  # joint name suffix -> rad (others 0): a keyframe added
    stance_height: float = 0.0  # m: the root's height in the added keyframe
    gains: Callable[[Any], tuple[float, float]] | None = None  # MjsJoint -> (kp, kd); None: the model's
    scale_by_torque: bool = False  # mjlab's rule: an action of 1 moves a target by scale x limit / kp
    torso_body: str | None = None  # the body that torso_upright levels (a humanoid's upper body)
    max_tilt: float = 1.0  # rad: an episode ends when the root tilts more
    reset_noise_scale: float = 0.1  # rad, rad/s, m/s: reset joints and velocities U(-it, it) off the pose
    air_time_threshold: float = 0.5  # s: feet_air_time rewards steps longer than this
    min_feet_distance: float = 0.15  # m: feet_distance's threshold (bipeds)
    only_positive_rewards: bool = False  # the step's total floored at 0 (legged_gym's option)
    soft_limits: float = 0.9  # joint_limits counts from this fraction of each joint's range
    foot_point: tuple[float, float, float] = (
        0.0,
        0.0,
        0.0,
    )  # m: each foot's contact point in its body's frame
    foot_height: float = 0.0  # m: that point's height above the ground when the robot stands
    # each foot's place in the gait clock's cycle (cycles, in the order of `feet`): a trot's diagonal
    # pairs together, half a cycle after the other pair; a biped's feet alternating. None: no gait
    # clock for this robot (the gait term and gait_frequency are refused)
    gait_offsets: tuple[float, ...] | None = None
    gait_frequency: float = 0.0  # Hz: the default stride rate of the gait clock (0: none)
    swing_height: float = 0.08  # m: the gait term's lift of a swinging foot
    tracking_sigma: float = 0.25  # the tracking terms' exp(-error^2 / sigma): legged_gym's
    camera: dict[str, Any] = dataclasses.field(default_factory=dict)
    buffers: tuple[int, int] | None = None  # mjwarp's <size njmax nconmax> on the flat scene
    refused: dict[str, str] = dataclasses.field(default_factory=dict)  # engine -> the feature it refuses

    @property
    def edits(self) -> bool:
        """Whether the task writes an edited copy of the scene (gains, a stance, buffers)."""
        return self.gains is not None or self.stance is not None or self.buffers is not None

    def scene_file(self) -> str:
        """The scene as it ships: a Menagerie model's file (unienv.robots) or a shipped path."""
        if os.path.isabs(self.scene):
            return self.scene
        folder, file = self.scene.split("/", 1)
        return robots.model_file(folder, file)

    def build(self, flat: bool = True) -> tuple[str, np.ndarray]:
        """The scene the task simulates, and each actuator's torque limit / kp (rad; ones where
        the spec sets no gains). `flat`: the robot's own floor, where `buffers` apply."""
        scene = self.scene_file()
        if not self.edits:
            return scene, np.ones(self.joints)
        spec = edit_spec(scene)
        per_torque = servos(spec, self.gains) if self.gains else np.ones(self.joints)
        if self.stance is not None:
            pose = [self.pose(spec.joint(a.target).name) for a in spec.actuators]
            # the free joint first (upright at stance_height), then the hinges in the model's order
            qpos = [
                0.0,
                0.0,
                self.stance_height,
                1.0,
                0.0,
                0.0,
                0.0,
                *(self.pose(j.name) for j in spec.joints[1:]),
            ]
            spec.add_key(name=self.keyframe, qpos=qpos, ctrl=pose)
        if self.buffers and flat:
            spec.njmax, spec.nconmax = self.buffers
        return write_spec(spec, scene, "unienv_robots"), per_torque

    def pose(self, joint: str) -> float:
        """The stance's angle of `joint` (rad): its suffix's, or 0."""
        return next((v for suffix, v in (self.stance or {}).items() if joint.endswith(suffix)), 0.0)


def servos(spec, gains: Callable[[Any], tuple[float, float]]) -> np.ndarray:
    """Each actuator of `spec` a PD position servo on its joint with (kp, kd) = gains(joint);
    a torque actuator (no bias) becomes one, its control range the joint's torque limit and the
    joint's range its control range. Returns each actuator's torque limit (the joint's, else the
    actuator's force range) / kp (rad)."""
    import mujoco

    per_torque = []
    for actuator in spec.actuators:
        joint = spec.joint(actuator.target)
        kp, kd = gains(joint)
        if actuator.biastype == mujoco.mjtBias.mjBIAS_NONE:  # a motor: ctrl is its torque
            joint.actfrcrange, joint.actfrclimited = (
                actuator.ctrlrange.copy(),
                mujoco.mjtLimited.mjLIMITED_TRUE,
            )
            actuator.ctrlrange, actuator.biastype = joint.range.copy(), mujoco.mjtBias.mjBIAS_AFFINE
        actuator.gainprm[0], actuator.biasprm[1], actuator.biasprm[2] = kp, -kp, -kd
        per_torque.append(
            (joint.actfrcrange[1] or actuator.forcerange[1]) / kp
        )  # the joint's limit, or its servo's
    return np.array(per_torque)


def by_name(table: dict[str, tuple[float, float]]) -> Callable[[Any], tuple[float, float]]:
    """Gains by joint name: (kp, kd) of the first key that the joint's name contains."""

    def gains(joint) -> tuple[float, float]:
        found = next((v for k, v in table.items() if k in joint.name), None)
        if found is None:
            raise KeyError(f"gains: no entry of {list(table)} in joint {joint.name!r}")
        return found

    return gains
