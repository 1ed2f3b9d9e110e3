"""Panda lift: MuJoCo Menagerie's Franka Panda (`franka_emika_panda/mjx_single_cube.xml`, found
by `unienv.robots`) grasps a box lying on the table and lifts it to a sampled height.

Model: Menagerie's MJX Panda scene with its box ("box", 4 x 4 x 6 cm, 96 g, on the floor plane,
which is the table) as it ships: primitive collisions only (finger pads against the box, the
box and the hand's capsule against the floor), timestep 0.005 s, implicitfast, the position
servos of the arm (kp 1000 / 750 / 300) and the finger servo. Three edits: the arm's links,
hand and fingers are gravity compensated (MJCF `gravcomp`), as Franka's own controller
compensates gravity, so the servos hold a pose without sagging; the mocap marker "mocap_target"
becomes a translucent plate at the target height above the box's area; and the box's free joint
is named "box" (for DR's init_state).

Action (4): an end-effector motion and the gripper, [-1, 1] each. The first three move the
"gripper" site (between the fingertips) by `action_scale` m along world x, y, z through damped
least-squares inverse kinematics on the site's Jacobian, dq = J^T (J J^T + damping I)^-1 e,
where e also turns the hand back toward pointing down with its fingers closing along world x
(the `rotation_gain` share of its orientation error per step); the arm's servo targets are the
joints' positions plus dq, within the joint ranges (`Task.control`: the action is relative to
the state). A zero action holds the arm where it is; the servos (kv 20 / 4 / 2) reach about a
quarter of a step's dq within the step, more as the arm gathers speed. The fourth sets the
finger servo's target: -1 closed, +1 open (8 cm). Why
not joint-position deltas (Playground's 8-dim action): on the CPU's budget PPO must find a
grasp in a few million steps, and a Cartesian 4-dim action makes reaching a straight line in
the action space, the hand's orientation a solved problem, and the grasp one number.

Observation blocks: joint_pos and joint_vel (9 each: 7 arm joints, 2 fingers), gripper_opening
(the fingers' gap, m), gripper_pos (3), cube_to_gripper (3, box minus gripper site, world
frame), cube_quat (4), cube_lin_vel (3, world), cube_ang_vel (3, box frame), target_height (1)
and height_to_target (1, target minus box height). Reward terms per step, each times its
weight: reach (1 - tanh(|box - gripper| / reach_scale)), grasp (the fingers' closedness,
1 - gap / 8 cm, while the gripper site is within grasp_distance of the box's centre), lift
(1 - |target - box height| / (target - rest height), floored at 0: 0 at rest, 1 at the target)
and success (1 while successful). Nothing rewards where the box goes horizontally: a policy may
carry it off sideways as it lifts it (the trained one of docs/tasks.md does). Success
(`info["is_success"]`, and in the episode statistics as the episode's last value): the box's
height within `success_tolerance` of the target. Never terminates;
truncated after `episode_length_s`. Reset: the ready pose (`READY`: the gripper 12 cm above the
middle of the box's area; Menagerie's "home" holds it 35 cm up) plus U(-reset_noise_scale,
reset_noise_scale) rad on the arm joints, fingers open, at rest; the box at rest on the table
at a position and yaw drawn from `cube_box` and `cube_yaw_range`; the target height from
`target_height_range`. Timing: a 0.02 s control step (4 physics steps), Playground's. Needs body
views, site Jacobians and mocap (for the marker).
"""

import dataclasses

import gymnasium as gym
import numpy as np

from unienv import robots
from unienv.backends.scene import edit_spec, write_spec
from unienv.errors import ArgumentError
from unienv.task import Task, TaskOptions, option, total
from unienv.tasks.common import read_state, rotate

GRIPPER_OFFSET = (0.0, 0.0, 0.1)  # the "gripper" site in the hand's frame
DOWN = (0.0, np.sqrt(0.5), np.sqrt(0.5), 0.0)  # the hand pointing down, fingers closing along world x
REST_HEIGHT = 0.03  # m: the box's centre at rest (its half height)
FINGER_OPEN = 0.04  # m: each finger's travel
ARM = 7  # arm joints, then the two fingers, then the box's free joint
# rad: the arm with the gripper site 12 cm above the table at (0.55, 0), pointing down (reached
# from Menagerie's "home" through the task's own actions)
READY = (0.0, 0.276, 0.0, -2.2217, 0.0, 2.4976, -0.7854)
# the observation blocks of the arm and the box, which panda_place shares
ARM_AND_CUBE = {
    "joint_pos": ARM + 2, "joint_vel": ARM + 2, "gripper_opening": 1, "gripper_pos": 3,
    "cube_to_gripper": 3, "cube_quat": 4, "cube_lin_vel": 3, "cube_ang_vel": 3,
}  # fmt: skip


@dataclasses.dataclass
class PandaLiftOptions(TaskOptions):
    episode_length_s: float = option(2.0, "s: an episode is truncated after it")
    action_scale: float = option(0.04, "m: the gripper site's motion per step for an action of 1")
    rotation_gain: float = option(0.5, "share of the hand's orientation error corrected per step")
    damping: float = option(0.005, "the inverse kinematics' damping (m^2)")
    cube_box: tuple = option(((0.5, -0.08), (0.6, 0.08)), "m: the box's xy at reset, low and high corners")
    cube_yaw_range: tuple = option((-0.5, 0.5), "rad: the box's yaw at reset")
    target_height_range: tuple = option((0.1, 0.2), "m: the target height of the box's centre")
    success_tolerance: float = option(0.02, "m: success while |target - box height| is below it")
    reset_noise_scale: float = option(0.05, "rad: the arm joints' reset offsets U(-it, it)")
    reach_weight: float = option(1.0, "weight of 1 - tanh(|box - gripper| / reach_scale)")
    reach_scale: float = option(0.1, "m: the reach term's width")
    grasp_weight: float = option(1.0, "weight of the fingers' closedness near the box")
    grasp_distance: float = option(0.02, "m: the grasp term counts within this of the box's centre")
    lift_weight: float = option(4.0, "weight of the lift term (0 at rest, 1 at the target height)")
    success_weight: float = option(2.0, "weight of the success indicator")

    def __post_init__(self):
        super().__post_init__()
        self.cube_box = corners(self.cube_box, "cube_box")


def corners(box, name):
    """An xy area's ((x_low, y_low), (x_high, y_high)) as floats (Hydra gives lists, perhaps of
    ints); ArgumentError naming task.<name> unless it is two such corners, lows below highs."""
    try:
        (x0, y0), (x1, y1) = box
        x0, y0, x1, y1 = map(float, (x0, y0, x1, y1))
        if x0 < x1 and y0 < y1:
            return (x0, y0), (x1, y1)
    except (TypeError, ValueError):
        pass
    raise ArgumentError(
        f"task.{name}: expected [[x_low, y_low], [x_high, y_high]], lows below highs, got {box!r}"
    )


def quat_error(xp, quat, goal):
    """The rotation (N, 3), world frame, rad (small-angle form), that takes the body-to-world
    wxyz quaternions quat (N, 4) to goal (4,): 2 sign(w) v of goal * conj(quat)."""
    w1, v1 = goal[0], goal[1:]
    w2, v2 = quat[:, :1], -quat[:, 1:]
    w = w1 * w2[:, 0] - (v1 * v2).sum(1)
    v = w1 * v2 + w2 * v1 + xp.cross(v1, v2)
    return 2.0 * xp.where(w[:, None] < 0, -v, v)


def panda_scene(plate=True):
    """Menagerie's single-cube Panda scene with its mocap marker as a target-height plate, or
    (plate False) as it ships: a translucent red box of the box's size."""
    scene = robots.model_file("franka_emika_panda", "mjx_single_cube.xml")
    spec = edit_spec(scene)
    spec.body("box").first_joint().name = "box"  # unnamed in Menagerie's file: DR's init_state names it
    if plate:
        marker = spec.body("mocap_target").geoms[0]
        marker.size, marker.rgba = (0.1, 0.15, 0.002), (1.0, 0.2, 0.2, 0.3)
    for body in spec.body("link1").find_all("body"):  # the arm's links, hand and fingers
        body.gravcomp = 1.0
    spec.body("link1").gravcomp = 1.0
    return write_spec(spec, scene, "unienv_robots")


class PandaLift(Task):
    name = "panda_lift"
    sim_dt, decimation = 0.005, 4
    root_body = "link1"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    camera = {"distance": 1.15, "azimuth": 135.0, "elevation": -12.0, "lookat": (0.45, 0.0, 0.25)}
    requires = ("body_views", "site_jacobian", "mocap")
    arrays = "any"
    Options = PandaLiftOptions

    def __init__(self, **options):
        super().__init__(**options)
        self.scene = panda_scene()

    def observation_blocks(self):
        return {**ARM_AND_CUBE, "target_height": 1, "height_to_target": 1}

    def setup(self, backend):
        super().setup(backend)
        info = backend.info
        self.bodies = backend.find("body", ("hand", "box"))
        self.site = int(backend.find("site", "gripper")[0])
        self.home = self.array(info.keyframes["home"])
        self.home[:ARM] = self.array(READY)
        low, high = info.joint_range[:ARM].T
        self.q_low, self.q_high = self.array(low), self.array(high)
        self.offset, self.down = self.array(GRIPPER_OFFSET), self.array(DOWN)
        self.eye = self.array(self.damping * np.eye(6))
        self.cube_low, self.cube_high = self.array(self.cube_box)
        self.nv = backend.nv

    def control(self, action, s, memory):
        xp = self.xp
        motion = self.action_scale * action[:, :3]
        turn = self.rotation_gain * quat_error(xp, s["hand_quat"], self.down)
        jac = s["jac"]  # (N, 6, 7)
        jac_t = xp.swapaxes(jac, 1, 2)
        error = xp.concat((motion, turn), 1)[:, :, None]
        dq = (jac_t @ xp.solve(jac @ jac_t + self.eye, error))[:, :, 0]
        target = xp.clip(s["qpos"][:, :ARM] + dq, self.q_low, self.q_high)
        fingers = FINGER_OPEN / 2 * (1.0 + action[:, 3:])
        return xp.concat((target, fingers), 1)

    def read(self, backend):
        xp, s = self.xp, read_state(self, backend)
        views = backend.get_body_views(self.bodies)
        hand_pos, hand_quat = xp.asarray(views.pos)[:, 0], xp.asarray(views.quat)[:, 0]
        s["hand_quat"] = xp.copy(hand_quat)
        s["gripper"] = hand_pos + rotate(xp, hand_quat, self.offset)
        jacp, jacr = backend.get_site_jacobian(self.site)
        s["jac"] = xp.concat((xp.asarray(jacp)[:, :, :ARM], xp.asarray(jacr)[:, :, :ARM]), 1)
        return s

    def arm_and_cube(self, s):
        """The arrays of the ARM_AND_CUBE blocks, in their order."""
        qpos, qvel = s["qpos"], s["qvel"]
        return [
            qpos[:, : ARM + 2], qvel[:, : ARM + 2], qpos[:, ARM : ARM + 1] + qpos[:, ARM + 1 : ARM + 2],
            s["gripper"], qpos[:, ARM + 2 : ARM + 5] - s["gripper"], qpos[:, ARM + 5 :], qvel[:, ARM + 2 :],
        ]  # fmt: skip

    def observe(self, s, memory):
        target, height = memory["target"][:, 2:], s["qpos"][:, ARM + 4 : ARM + 5]
        return self.xp.concat((*self.arm_and_cube(s), target, target - height), 1)

    def reward(self, s, prev, action, memory):
        xp, qpos = self.xp, s["qpos"]
        distance = xp.norm(qpos[:, ARM + 2 : ARM + 5] - s["gripper"])
        gap = qpos[:, ARM] + qpos[:, ARM + 1]
        near = xp.astype(distance < self.grasp_distance, self.dtype)
        target = memory["target"][:, 2]
        lift = xp.clip(1.0 - xp.abs(target - qpos[:, ARM + 4]) / (target - REST_HEIGHT), 0.0, None)
        terms = {
            "reach": self.reach_weight * (1.0 - xp.tanh(distance / self.reach_scale)),
            "grasp": self.grasp_weight * near * (1.0 - gap / (2 * FINGER_OPEN)),
            "lift": self.lift_weight * lift,
            "success": self.success_weight * xp.astype(self.success(s, memory), self.dtype),
        }
        return total(terms), terms

    def success(self, s, memory):
        return self.xp.abs(memory["target"][:, 2] - s["qpos"][:, ARM + 4]) < self.success_tolerance

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    def reset_state(self, env_ids, rng):
        xp, n = self.xp, rng.rows
        qpos = xp.copy(xp.broadcast_to(self.home, (n, len(self.home))))
        scale = self.reset_noise_scale
        qpos[:, :ARM] += rng.uniform((ARM,), -scale, scale, dtype=self.dtype)
        qpos[:, ARM : ARM + 2] = FINGER_OPEN
        qpos[:, ARM + 2 : ARM + 4] = rng.uniform((2,), self.cube_low, self.cube_high, dtype=self.dtype)
        qpos[:, ARM + 4] = REST_HEIGHT
        half_yaw = 0.5 * rng.uniform((), *self.cube_yaw_range, dtype=self.dtype)
        qpos[:, ARM + 5], qpos[:, ARM + 8] = xp.cos(half_yaw), xp.sin(half_yaw)
        qpos[:, ARM + 6 : ARM + 8] = 0.0
        return qpos, xp.zeros((n, self.nv), self.dtype)

    def reset_memory(self, rng):
        n = rng.rows
        height = rng.uniform((1,), *self.target_height_range, dtype=self.dtype)
        centre = self.xp.broadcast_to((self.cube_low + self.cube_high) / 2, (n, 2))
        return {"target": self.xp.concat((centre, height), 1)}

    def mocap_pose(self, memory):
        target = memory["target"]
        upright = self.xp.broadcast_to(self.array((1.0, 0.0, 0.0, 0.0)), (len(target), 1, 4))
        return target[:, None], upright
