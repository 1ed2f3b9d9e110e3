"""The legged velocity task: a robot tracks a commanded planar velocity and yaw rate.

One task class for every legged robot; a robot is a spec (spec.py, one module per robot in
robots/), and the registry binds the two (`bind`: a subclass whose class attributes and option
defaults come from the spec). Reading top to bottom:

Scene: the spec's (`RobotSpec.build`: Menagerie's model, with the spec's gains and stance where
it sets them), its floor replaced by generated terrain where the `terrain` option is set.
Action (one per actuator, in the model's order): joint target offsets in [-1, 1] times the
action scale around the default pose, held by the PD servos. Command (3): forward and lateral
velocity (m/s) and yaw rate (rad/s), sampled per episode in `command_ranges`.
Observation blocks: base_lin_vel (3, x2) and base_ang_vel (3, x0.25) in the root's frame, gravity
(3, in the root's frame), command (3, x2, x2, x0.25), joint_pos (minus the default pose),
joint_vel (x0.05), last_action; on terrain, height_scan: clip(root z - 0.5 - h, -1, 1) of the
ground h under a grid around the root in its yaw frame (`scan_size` every `scan_resolution` m;
17 x 11 = 187 points by default).
Reward: the terms named in `reward_weights` (terms.py), each times its weight and the env step
dt, summed (floored at 0 with `only_positive_rewards`); the terms' values in info["reward_terms"].
Termination: the root touches anything or tilts more than `max_tilt`.
Reset: the default pose, joints and velocities + U(-reset_noise_scale, +it); on terrain at the
centre of the env's tile facing a random yaw. Curriculum (on terrain, legged_gym's): at reset an
env that walked more than half a tile moves up a level, one that walked less than half what its
command asked for moves down. Needs body views and contact forces.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math

import gymnasium as gym
import numpy as np

from unienv.errors import ArgumentError, unknown_name
from unienv.task import Task, TaskOptions, option
from unienv.tasks.common import rotation_matrix, to_body
from unienv.tasks.velocity.spec import COMMAND_RANGES, WEIGHTS, RobotSpec
from unienv.tasks.velocity.terms import READS, TERMS
from unienv.terrain import Curriculum, Surface, from_cfg

OBS_SCALES = {"lin_vel": 2.0, "ang_vel": 0.25, "dof_vel": 0.05}
COMMAND_SCALE = (2.0, 2.0, 0.25)
SCAN_OFFSET, SCAN_CLIP = 0.5, 1.0  # m: the scan reads clip(root z - offset - ground height, +-clip)
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
DICTS = ("command_ranges", "reward_weights")


@dataclasses.dataclass
class VelocityOptions(TaskOptions):
    """The options of every velocity task; a robot's defaults come from its spec (`bind`)."""

    episode_length_s: float = option(20.0, "s: an episode is truncated after it")
    action_scale: float = option(0.5, "rad: the joint target offset of an action of 1")
    command_ranges: dict = option(
        COMMAND_RANGES, "[lo, hi] of each command (m/s, m/s, rad/s); the ones given replace these"
    )
    reward_weights: dict = option(
        WEIGHTS,
        "each term's weight (then times the env step dt; terms in tasks/velocity/terms.py); "
        "the ones given replace these or add a term, null drops one",
    )
    base_height_target: float = option(0.30, "m: the base height term's target")
    max_tilt: float = option(1.0, "rad: an episode ends when the base tilts more")
    terminate_when_unhealthy: bool = option(
        True, "end the episode on a fall (base contact, or a tilt beyond max_tilt); False: fixed length"
    )
    reset_noise_scale: float = option(
        0.1, "rad, rad/s, m/s: reset joints and velocities U(-it, it) off the pose"
    )
    min_feet_distance: float = option(0.15, "m: feet_distance penalizes feet closer across the heading")
    only_positive_rewards: bool = option(False, "floor the step's total reward at 0 (legged_gym's option)")
    tracking_sigma: float = option(0.25, "(m/s)^2: the planar velocity term's exp(-error^2 / sigma)")
    yaw_sigma: float = option(
        0.25, "(rad/s)^2: the yaw-rate term's exp(-error^2 / sigma) (the robot's tracking_sigma)"
    )
    gait_frequency: float = option(
        0.0,
        "Hz: the gait clock's stride rate (observed as block gait_clock; the gait term follows it); 0: none",
    )
    swing_height: float = option(0.08, "m: how high the gait term asks a swinging foot to lift")
    terrain: dict | None = option(
        None,
        "generated terrain with a height scan and a curriculum: TerrainConfig fields ({}: every type, "
        "10 levels; play.py and train.py: the terrain group, terrain=mixed); None: the robot's flat floor",
    )
    height_scan: bool = option(True, "on terrain: observe the height scan (block height_scan)")
    terrain_curriculum: bool = option(
        True, "on terrain: move envs between levels at reset (legged_gym's rule)"
    )
    max_init_level: int = option(0, "on terrain: spawn levels spread over [0, max_init_level]")
    scan_size: tuple = option((1.6, 1.0), "m: the height scan's extent along and across the heading")
    scan_resolution: float = option(0.1, "m: the height scan's spacing")

    def __post_init__(self):
        super().__post_init__()
        # the defaults of this robot's options (its subclass's), merged with what is given
        defaults = {f.name: f.default_factory() for f in dataclasses.fields(self) if f.name in DICTS}
        given = {k: tuple(v) for k, v in (self.command_ranges or {}).items()}
        for name, pair in given.items():
            if name not in defaults["command_ranges"]:
                raise unknown_name("command of task.command_ranges", name, defaults["command_ranges"])
            numbers = all(
                not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) for x in pair
            )
            if len(pair) != 2 or not numbers or pair[0] > pair[1]:
                raise ArgumentError(
                    f"task.command_ranges.{name}: expected [lo, hi] with lo <= hi (equal: a fixed command), got {list(pair)!r}"
                )
        self.command_ranges = {**defaults["command_ranges"], **given}
        self.reward_weights = {**defaults["reward_weights"], **(self.reward_weights or {})}
        for name, weight in self.reward_weights.items():
            if name not in TERMS:
                raise unknown_name("reward term of task.reward_weights", name, TERMS)
            number = (
                not isinstance(weight, bool) and isinstance(weight, (int, float)) and math.isfinite(weight)
            )
            if weight is not None and not number:
                raise ArgumentError(
                    f"task.reward_weights.{name}: expected a finite number or null, got {weight!r}"
                )
        if self.reward_weights.get("gait") is not None and not self.gait_frequency > 0:
            raise ArgumentError(
                "task.reward_weights.gait: the gait term follows the gait clock; set task.gait_frequency > 0"
            )


class VelocityTask(Task):
    """The velocity task of the robot `robot` (see the module docstring); `bind` makes a robot's
    subclass."""

    robot: RobotSpec  # what `bind` sets, with the class attributes it derives
    requires = ("body_views", "contact_forces")
    arrays = "any"
    Options = VelocityOptions

    def __init__(self, **options):
        super().__init__(**options)
        if self.gait_frequency and self.robot.gait_offsets is None:
            raise ArgumentError(
                f"task.gait_frequency: the {self.robot.title} has no gait clock (its spec sets no gait_offsets)"
            )
        self.scene, self.per_torque = self.robot.build(flat=self.terrain is None)
        self.terms = tuple(k for k, w in self.reward_weights.items() if w is not None)
        self.term_fns = tuple(TERMS[k] for k in self.terms)
        self.reads = tuple(dict.fromkeys(r for fn in self.term_fns for r in fn.reads))
        self.ground = None
        if self.terrain is not None:
            self.ground = from_cfg(self.terrain)
            self.terrain = dataclasses.asdict(self.ground.config)  # the option, as a policy file records it
            self.scene = self.ground.write_scene(self.scene)
            along, across = (np.arange(-s / 2, s / 2 + 1e-9, self.scan_resolution) for s in self.scan_size)
            self.scan_points = np.stack(np.meshgrid(along, across, indexing="ij"), -1).reshape(-1, 2)

    @property
    def joints(self) -> int:
        """The actuated joints: the action's width."""
        return self.robot.joints

    def observation_blocks(self):
        blocks = {"base_lin_vel": 3, "base_ang_vel": 3, "gravity": 3, "command": 3}
        blocks |= {"joint_pos": self.joints, "joint_vel": self.joints, "last_action": self.joints}
        blocks |= {"gait_clock": 2} if self.gait_frequency else {}
        return blocks | ({"height_scan": len(self.scan_points)} if self.scanned else {})

    @property
    def scanned(self) -> bool:
        """Whether the observation ends with the height scan (on terrain, with height_scan)."""
        return self.ground is not None and self.height_scan

    def deployment(self):
        scale = (
            (self.action_scale * self.per_torque).tolist()
            if self.robot.scale_by_torque
            else self.action_scale
        )
        observation = dict(OBSERVATION)
        if self.gait_frequency:
            observation["gait_clock"] = {
                "quantity": "gait_clock",
                "frequency": self.gait_frequency,
                "scale": 1.0,
            }
        if self.scanned:
            observation["height_scan"] = {"quantity": "height_scan", "frame": "base_yaw"}
            observation["height_scan"] |= {"points": self.scan_points.tolist(), "offset": SCAN_OFFSET}
            observation["height_scan"] |= {"clip": SCAN_CLIP, "scale": 1.0}
        return {
            "observation": observation,
            "commands": {name: self.command_ranges[name] for name in COMMAND_RANGES},
            "action": {"type": "joint_position", "scale": scale, "default_pose": self.robot.keyframe},
        }

    def setup(self, backend):
        super().setup(backend)
        info, robot = backend.info, self.robot
        self.base_and_feet = backend.find("body", (robot.root_body, *robot.feet))
        self.feet_ids = self.base_and_feet[1:]
        self.gait_feet = tuple(robot.feet)  # what the evaluation's gait metrics name the feet by
        self.foot_point = self.array(robot.foot_point) if any(robot.foot_point) else None
        self.foot_height = robot.foot_height
        self.gait_offsets = self.array(robot.gait_offsets) if robot.gait_offsets else None
        self.torso_id = backend.find("body", robot.torso_body) if robot.torso_body else None
        # the root's free joint: qpos [p, wxyz quat], qvel [v world, w base frame] (MuJoCo's layout)
        free = int(np.flatnonzero(info.joint_type == 0)[0])
        self.root_q, self.root_v = int(info.joint_qpos_adr[free]), int(info.joint_dof_adr[free])
        joints = info.actuator_joint
        self.q_idx = self.xp.asarray(info.joint_qpos_adr[joints])
        self.v_idx = self.xp.asarray(info.joint_dof_adr[joints])
        self.home = self.array(info.keyframes[robot.keyframe])
        self.default_q = self.home[self.q_idx]
        # an action's target offset: one scale (rad), or mjlab's per joint (x torque limit / kp)
        by_torque = self.array(self.action_scale * self.per_torque)
        self.action_gain = by_torque if robot.scale_by_torque else self.action_scale
        self.gain = self.array(info.actuator_gain)
        self.bias = self.array(
            np.ascontiguousarray(info.actuator_bias.T)
        )  # torque = gain ctrl + b0 + b1 q + b2 qd
        low, high = info.joint_range[joints].T
        middle, half = (low + high) / 2, (high - low) / 2 * robot.soft_limits
        self.q_low, self.q_high = self.array(middle - half), self.array(middle + half)
        self.nv = backend.nv
        scales = (OBS_SCALES["lin_vel"],) * 3 + (OBS_SCALES["ang_vel"],) * 3 + (1.0,) * 3
        self.base_obs_scale, self.command_scale = self.array(scales), self.array(COMMAND_SCALE)
        self.weights = self.array([self.reward_weights[k] * self.dt for k in self.terms])
        self.air_time_threshold = robot.air_time_threshold
        r = self.command_ranges
        self.command_low, self.command_high = self.array(
            [[r["lin_vel_x"][i], r["lin_vel_y"][i], r["ang_vel_yaw"][i]] for i in (0, 1)]
        )
        self.cos_max_tilt = float(np.cos(self.max_tilt))
        if self.ground is not None:
            levels, columns = self.ground.spawn_origins(backend.num_envs, self.max_init_level)
            levels, columns = self.xp.asarray(levels), self.xp.asarray(columns)
            self.curriculum = Curriculum(self.ground, levels, columns, self.dtype)
            self.surface = Surface(self.ground, self.xp, self.dtype)
            self.scan_along, self.scan_across = (self.array(self.scan_points[:, i]) for i in (0, 1))

    def action_to_ctrl(self, action):
        return self.default_q + self.action_gain * action

    def read(self, backend):
        """Joint state and PD torques, the root's height, its base-frame velocities and gravity
        (N, 3, 3) and rotation matrix, contacts; on terrain the height scan; the READS that the
        chosen terms name."""
        xp, views, p, v = self.xp, backend.get_state_views(), self.root_q, self.root_v
        qpos, qvel = xp.asarray(views["qpos"]), xp.asarray(views["qvel"])
        rot = rotation_matrix(xp, qpos[:, p + 3 : p + 7])  # root to world
        forces = xp.asarray(backend.get_contact_forces(self.base_and_feet))
        q, qd = qpos[:, self.q_idx], qvel[:, self.v_idx]  # gathers: copies
        bias = self.bias
        s = {
            "q": q,
            "qd": qd,
            "torque": self.gain * xp.asarray(views["ctrl"]) + bias[0] + bias[1] * q + bias[2] * qd,
            "height": xp.copy(qpos[:, p + 2]),
            # lin vel (world, turned into the root's frame), ang vel (MuJoCo's free joint keeps it in
            # the body frame), gravity (the world's -z in the root's frame: -R's last row), (N, 3, 3)
            "base": xp.stack((to_body(qvel[:, v : v + 3], rot), qvel[:, v + 3 : v + 6], -rot[:, 2]), 1),
            "rot": rot,
            "base_contact": xp.square(forces[:, 0]).sum(1) > 1.0,  # more than 1 N
            "foot_contact": forces[:, 1:, 2] > 1.0,
        }
        if self.ground is not None:
            self.read_ground(s, qpos)
        for name in self.reads:
            s |= READS[name](self, backend)
        return s

    def read_ground(self, s, qpos):
        """The height scan under the root in its yaw frame, the height above that ground, the
        root's xy (for the curriculum)."""
        xp, p, rot = self.xp, self.root_q, s["rot"]
        yaw = xp.arctan2(rot[:, 1, 0, None], rot[:, 0, 0, None])  # of the body's x axis
        cos, sin = xp.cos(yaw), xp.sin(yaw)
        along, across = self.scan_along, self.scan_across
        s["scan"] = self.surface(
            qpos[:, p, None] + cos * along - sin * across, qpos[:, p + 1, None] + sin * along + cos * across
        )
        s["z"] = s["height"]
        s["height"] = s["z"] - s["scan"].mean(1)
        s["xy"] = xp.copy(qpos[:, p : p + 2])

    def observe(self, s, memory):
        parts = (
            s["base"].reshape(len(s["base"]), 9) * self.base_obs_scale,
            memory["command"] * self.command_scale,
            s["q"] - self.default_q,
            OBS_SCALES["dof_vel"] * s["qd"],
            memory["last_action"],
        )
        if self.gait_frequency:
            angle = (2 * math.pi) * memory["phase"]
            parts += (self.xp.sin(angle), self.xp.cos(angle))
        obs = self.xp.concat(parts, 1)
        if not self.scanned:
            return obs
        heights = self.xp.clip(s["z"][:, None] - SCAN_OFFSET - s["scan"], -SCAN_CLIP, SCAN_CLIP)
        return self.xp.concat((obs, heights), 1)

    def reward(self, s, prev, action, memory):
        raw = [fn(self, s, prev, action, memory) for fn in self.term_fns]
        weighted = self.xp.stack(raw, 1) * self.weights  # each term times its weight and dt
        total = weighted.sum(1)
        if self.only_positive_rewards:  # a first policy's penalties would teach it to fall at once
            total = self.xp.clip(total, 0.0, None)
        return total, dict(zip(self.terms, weighted.T, strict=True))

    def terminated(self, s, memory):
        fell = s["base_contact"] | (-s["base"][:, 2, 2] < self.cos_max_tilt)
        return fell if self.terminate_when_unhealthy else self.xp.zeros_like(fell)

    def remember(self, s, action, memory):
        air_time = (memory["air_time"] + self.dt) * ~s["foot_contact"]
        kept = {"command": memory["command"], "last_action": self.xp.copy(action), "air_time": air_time}
        if self.gait_frequency:
            kept["phase"] = (memory["phase"] + self.gait_frequency * self.dt) % 1.0
        return kept

    def metrics(self, s, memory):
        """What an evaluation reports (unienv.training.gait): tracking errors, base height, joint
        torque and mechanical power, planar speed, and each foot's contact (1 or 0)."""
        xp, base, command = self.xp, s["base"], memory["command"]
        out = {
            "lin_vel_error": xp.norm(command[:, :2] - base[:, 0, :2]),
            "yaw_rate_error": xp.abs(command[:, 2] - base[:, 1, 2]),
            "base_height": s["height"],
            "power": xp.abs(s["torque"] * s["qd"]).sum(1),
            "torque": xp.abs(s["torque"]).mean(1),
            "speed": xp.norm(base[:, 0, :2]),
        }
        contact = s["foot_contact"] * 1.0
        return out | {f"contact_{foot}": contact[:, i] for i, foot in enumerate(self.gait_feet)}

    def on_reset(self, mask, s, memory):
        if self.ground is not None and self.terrain_curriculum:
            walked = self.xp.norm(s["xy"] - self.curriculum.origins()[:, :2])
            commanded = self.xp.norm(memory["command"][:, :2]) * self.episode_length_s
            self.curriculum.update(mask, walked, commanded)

    def reset_state(self, env_ids, rng):
        xp, scale = self.xp, self.reset_noise_scale
        qpos = xp.copy(xp.broadcast_to(self.home, (rng.rows, len(self.home))))
        qpos[:, self.q_idx] += rng.uniform((self.joints,), -scale, scale, dtype=self.dtype)
        qvel = rng.uniform((self.nv,), -scale, scale, dtype=self.dtype)
        if self.ground is not None:  # the env's tile, facing a random yaw
            p = self.root_q
            qpos[:, p : p + 3] += self.curriculum.origins()[env_ids]
            yaw = rng.uniform((1,), -np.pi, np.pi, dtype=self.dtype)
            zero = xp.zeros_like(yaw)
            qpos[:, p + 3 : p + 7] = xp.concat((xp.cos(yaw / 2), zero, zero, xp.sin(yaw / 2)), 1)
        return qpos, qvel

    def reset_memory(self, rng):
        zeros = self.xp.zeros((rng.rows, len(self.robot.feet) + self.joints), self.dtype)
        memory = {
            "command": rng.uniform((3,), self.command_low, self.command_high, dtype=self.dtype),
            "last_action": zeros[:, : self.joints],
            "air_time": zeros[:, self.joints :],
        }
        if self.gait_frequency:  # each env's clock starts anywhere in its cycle
            memory["phase"] = rng.uniform((1,), 0.0, 1.0, dtype=self.dtype)
        return memory


@functools.cache
def bind(name: str, robot: str, rough: bool = False) -> type[VelocityTask]:
    """The velocity task `name` of the robot spec at `robot` ("module:attribute"): a subclass of
    VelocityTask with the spec's class attributes and option defaults; `rough` (a *_rough id):
    generated terrain by default, the step's reward floored at 0."""
    module, attribute = robot.split(":")
    spec = getattr(importlib.import_module(module), attribute)
    defaults = {
        "action_scale": spec.action_scale,
        "command_ranges": spec.command_ranges,
        "reward_weights": spec.weights,
        "base_height_target": spec.base_height_target,
        "max_tilt": spec.max_tilt,
        "reset_noise_scale": spec.reset_noise_scale,
        "min_feet_distance": spec.min_feet_distance,
        "only_positive_rewards": spec.only_positive_rewards or rough,
        "tracking_sigma": spec.tracking_sigma,
        "yaw_sigma": spec.tracking_sigma,
        "gait_frequency": spec.gait_frequency,
        "swing_height": spec.swing_height,
        "terrain": {} if rough else None,
    }
    docs = {f.name: f.metadata["doc"] for f in dataclasses.fields(VelocityOptions)}
    if spec.scale_by_torque:
        docs["action_scale"] = "an action of 1 moves a joint's target by this x its torque limit / kp (rad)"
    fields = [
        (f.name, f.type, option(defaults[f.name], docs[f.name]))
        for f in dataclasses.fields(VelocityOptions)
        if f.name in defaults
    ]
    camel = "".join(part.capitalize() for part in name.split("_"))
    options = dataclasses.make_dataclass(f"{camel}Options", fields, bases=(VelocityOptions,))
    attributes = {
        "name": name,
        "robot": spec,
        "Options": options,
        "sim_dt": spec.sim_dt,
        "decimation": spec.decimation,
        "root_body": spec.root_body,
        "single_action_space": gym.spaces.Box(-1.0, 1.0, (spec.joints,), np.float32),
        "camera": spec.camera,
        "__module__": module,
        "__doc__": importlib.import_module(module).__doc__,
    }
    return type(camel, (VelocityTask,), attributes)
