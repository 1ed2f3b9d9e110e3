"""LEAP cube rotate: the LEAP hand of MuJoCo Menagerie (`leap_hand/right_hand.xml`, found by
`unienv.robots`), palm up, turns a cube in its palm about the world's vertical axis, as fast as
it can without dropping it: the shape of MuJoCo Playground's `LeapCubeRotateZAxis`.

Scene: Menagerie's right hand with these edits (`leap_scene`), each from Playground's LEAP model
(`leap_hand/xmls/leap_rh_mjx.xml`), and nothing copied: the palm placed as Playground's mount
holds it (palm up, tilted 20 degrees about the world y so that the cube rests against the fingers); each
joint's motor as Playground identifies it (armature 0.00149 kg m^2, the rotor's inertia times
the gear ratio squared, which keeps the kp 3 servos stable at sim_dt 0.01 s; damping 0.2 N m s
/rad, frictionloss 0.02 N m, torque limit 0.2196 N m; no kv); every geom's contact softness as
Playground's (solref 0.02 1.5, solimp 0.9 0.99 0.001) and impratio 1, because Menagerie's stiff
contacts (solref 0.0001, clamped to 2 sim_dt, with impratio 100) chatter: a cube at rest in the
palm shakes at 1.5 rad/s; plus a free cube (body and geom "cube", 7 cm, 108 g, friction 0.3,
Playground's), a site at each fingertip and "grasp_site" in the palm (Playground's), and the
keyframe "grasp": the hand in Playground's home pose with the cube at rest in the palm; and
`<size njmax nconmax>` for mjwarp's buffers (`LEAP_NJMAX`).

Action (16): absolute joint-position targets around the grasp pose, default + `action_scale`
x action (Playground's 0.6 rad), in the model's actuator order (index, middle, ring: mcp, rot,
pip, dip; thumb: cmc, axl, mcp, ipl); MuJoCo clamps each target to its joint's range. Absolute
and not deltas, as Playground: a zero action holds the grasp, and a policy's output is a pose,
so an untrained policy cups the cube instead of drifting away from it.
Observation blocks: joint_pos (16, minus the grasp pose), joint_vel (16), fingertip_pos (12,
thumb, index, middle, ring), cube_pos (3), cube_quat (4, w >= 0) in the hand's frame (the
palm's axes, from the grasp site), cube_ang_vel (3, world frame: its z is the yaw rate) and
last_action (16).
Reward terms, each times the env step dt as Playground's: yaw_rate (1.0 x the cube's angular
velocity about the world z, rad/s), drop (-100 on the step the cube drops), action_rate
(-0.005 x |a - a_prev|^2) and pose (-0.01 x |q - grasp pose|^2, rad^2). `info["yaw_rate"]`
is each step's yaw rate and the episode statistics carry its mean ("yaw_rate").
Terminates when the cube drops: its centre below `drop_height` or farther than `max_distance`
from the grasp site. Reset: hand joints at the grasp pose + U(-0.1, 0.1) rad at rest, the cube
1 cm above its rest place + U(-0.01, 0.01) m with a uniformly random orientation (Playground
drops it so too). Timing: sim_dt 0.01 s, decimation 5 (a 0.05 s control step), Playground's.
Needs body views.
"""

import dataclasses

import gymnasium as gym
import mujoco
import numpy as np

from unienv import robots
from unienv.backends.scene import edit_spec, write_spec
from unienv.task import Task, TaskOptions, option
from unienv.tasks.common import rotate, rotation_matrix

PALM_POS = (0.124, -0.0305, -0.06045)  # m, world: where Playground's mount holds the palm
PALM_QUAT = tuple(np.array((0.0, 1.0, 0.0, -0.175)) / np.hypot(1.0, 0.175))  # its "0 1 0 -0.175"
GRASP_SITE = (0.11, 0.0, 0.03)  # m, world: Playground's grasp_site
CUBE_HALF, CUBE_MASS = 0.035, 0.108  # m, kg
# the hand's joints in Playground's home pose, rad (index, middle, ring, thumb), and where the cube
# comes to rest in it (dropped flat from 5 cm and settled for 10 s under a zero action on mujoco): [x, y, z, qw, qx, qy, qz]
GRASP_POSE = (0.8, 0.0, 0.8, 0.8) * 3 + (0.8, 0.8, 0.8, 0.0)
CUBE_REST = (0.11604, 0.0016, 0.01675, 0.95931, 0.00005, 0.28235, 0.00083)
# fingertips: the distal bodies and Playground's tip sites in their frames, m
TIPS = {"th_ds": (0.0, -0.06, -0.015), "if_ds": (0.0, -0.05, 0.015), "mf_ds": (0.0, -0.05, 0.015)}
TIPS |= {"rf_ds": (0.0, -0.05, 0.015)}
TERMS = ("yaw_rate", "drop", "action_rate", "pose")
# mjwarp's constraint rows and contacts per world (the scene's <size njmax nconmax>; its own guess,
# 64 rows, overflows): Playground's for this task, twice the most measured on mujoco over 30
# episodes of random actions up to 2 rad around the grasp, dropped cubes included (73 rows: 16
# joint frictionlosses, limits, 3 a contact at the elliptic cone's condim 3; 19 contacts)
LEAP_NJMAX, LEAP_NCONMAX = 160, 30


def leap_scene():
    """Menagerie's right LEAP hand with the edits of the module docstring; the copy's path."""
    scene = robots.model_file("leap_hand", "right_hand.xml")
    spec = edit_spec(scene)
    spec.option.timestep, spec.option.impratio = LeapCubeRotate.sim_dt, 1.0
    palm = spec.body("palm")
    palm.pos, palm.quat = PALM_POS, PALM_QUAT
    for joint in spec.joints:
        joint.armature, joint.frictionloss = 0.00149376, 0.02
        joint.damping[0] = 0.2
        joint.actfrclimited, joint.actfrcrange = mujoco.mjtLimited.mjLIMITED_TRUE, (-0.2196, 0.2196)
    for actuator in spec.actuators:
        actuator.biasprm[2] = 0.0  # no kv: the joint's damping
    cube = spec.worldbody.add_body(name="cube", pos=CUBE_REST[:3], quat=CUBE_REST[3:])
    cube.add_freejoint(name="cube_freejoint")
    cube.add_geom(
        name="cube", type=mujoco.mjtGeom.mjGEOM_BOX, size=(CUBE_HALF,) * 3, mass=CUBE_MASS,
        friction=(0.3, 0.05, 0.0001), rgba=(0.9, 0.55, 0.15, 1.0),
    )  # fmt: skip
    for geom in spec.geoms:
        geom.solref, geom.solimp = (0.02, 1.5), (0.9, 0.99, 0.001, 0.5, 2.0)
    for body, pos in TIPS.items():
        spec.body(body).add_site(name=body[:2] + "_tip", pos=pos)
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, np.array(PALM_QUAT))
    palm.add_site(name="grasp_site", pos=rot.reshape(3, 3).T @ (np.array(GRASP_SITE) - PALM_POS))
    spec.njmax, spec.nconmax = LEAP_NJMAX, LEAP_NCONMAX
    spec.add_key(name="grasp", qpos=GRASP_POSE + CUBE_REST, ctrl=GRASP_POSE)
    return write_spec(spec, scene, "unienv_robots")


@dataclasses.dataclass
class LeapCubeRotateOptions(TaskOptions):
    episode_length_s: float = option(10.0, "s: an episode is truncated after it")
    action_scale: float = option(0.6, "rad: the joint target offset of an action of 1")
    yaw_rate_weight: float = option(1.0, "weight of the cube's world-z angular velocity (rad/s)")
    drop_weight: float = option(-100.0, "weight of the step the cube drops (1 on it)")
    action_rate_weight: float = option(-0.005, "weight of |a - a_prev|^2")
    pose_weight: float = option(-0.01, "weight of |q - grasp pose|^2 (rad^2)")
    drop_height: float = option(-0.05, "m, world z: the cube drops when its centre is lower")
    max_distance: float = option(0.1, "m: the cube drops when its centre is farther from the grasp site")
    reset_noise_scale: float = option(0.1, "rad: reset joints U(-it, it) off the grasp pose")


class LeapCubeRotate(Task):
    name = "leap_cube_rotate"
    sim_dt, decimation = 0.01, 5
    root_body = "palm"
    single_action_space = gym.spaces.Box(-1.0, 1.0, (16,), np.float32)
    camera = {"distance": 0.4, "azimuth": 120.0, "elevation": -30.0, "lookat": (0.1, 0.0, 0.0)}
    requires = ("body_views",)
    arrays = "any"
    Options = LeapCubeRotateOptions

    def __init__(self, **options):
        super().__init__(**options)
        self.scene = leap_scene()

    def observation_blocks(self):
        return {"joint_pos": 16, "joint_vel": 16, "fingertip_pos": 12, "cube_pos": 3, "cube_quat": 4} | {
            "cube_ang_vel": 3,
            "last_action": 16,
        }

    def setup(self, backend):
        super().setup(backend)
        info = backend.info
        joints = info.actuator_joint
        self.q_idx = self.xp.asarray(info.joint_qpos_adr[joints])
        self.v_idx = self.xp.asarray(info.joint_dof_adr[joints])
        self.cube_q = int(info.joint_qpos_adr[backend.find("joint", "cube_freejoint")[0]])
        self.bodies = backend.find("body", ("cube", *TIPS))
        self.tip_offsets = self.array(list(TIPS.values()))
        self.grasp = self.array(info.keyframes["grasp"])
        self.default_q = self.grasp[self.q_idx]
        self.palm_rot = rotation_matrix(self.xp, self.array(PALM_QUAT)[None])[0]  # the hand is fixed
        self.palm_inverse = self.array(left_product(np.array(PALM_QUAT) * (1.0, -1.0, -1.0, -1.0)))
        self.grasp_site = self.array(GRASP_SITE)
        self.cube_drop = self.array(CUBE_REST[:3]) + self.array((0.0, 0.0, 0.01))
        self.weights = self.array([getattr(self, f"{t}_weight") * self.dt for t in TERMS])
        self.nv = backend.nv

    def action_to_ctrl(self, action):
        return self.default_q + self.action_scale * action

    def read(self, backend):
        """Joint state; the cube's position, orientation and world angular velocity; fingertips."""
        xp, views = self.xp, backend.get_state_views()
        qpos, qvel = xp.asarray(views["qpos"]), xp.asarray(views["qvel"])
        bodies = backend.get_body_views(self.bodies)
        pos, quat = xp.asarray(bodies.pos), xp.asarray(bodies.quat)
        tips = pos[:, 1:] + rotate(xp, quat[:, 1:], self.tip_offsets)
        return {
            "q": qpos[:, self.q_idx],  # gathers: copies
            "qd": qvel[:, self.v_idx],
            "cube_pos": xp.copy(pos[:, 0]),
            "cube_quat": xp.copy(quat[:, 0]),
            "cube_ang_vel": xp.copy(xp.asarray(bodies.ang_vel)[:, 0]),
            "tips": tips,
        }

    def in_hand(self, p):
        """World points (..., 3) in the hand's frame: from the grasp site, along the palm's axes
        (v @ R, summed elementwise as `unienv.tasks.common.to_body`)."""
        d, rot = p - self.grasp_site, self.palm_rot
        return d[..., 0:1] * rot[0] + d[..., 1:2] * rot[1] + d[..., 2:3] * rot[2]

    def observe(self, s, memory):
        xp, n = self.xp, len(s["q"])
        # the cube's orientation relative to the palm's: conj(palm) * cube, sign fixed to w >= 0
        q, inverse = s["cube_quat"], self.palm_inverse
        quat = (
            q[:, 0:1] * inverse[0] + q[:, 1:2] * inverse[1] + q[:, 2:3] * inverse[2] + q[:, 3:4] * inverse[3]
        )
        quat = xp.where(quat[:, :1] < 0, -quat, quat)
        return xp.concat(
            (
                s["q"] - self.default_q,
                s["qd"],
                self.in_hand(s["tips"]).reshape(n, 12),
                self.in_hand(s["cube_pos"]),
                quat,
                s["cube_ang_vel"],
                memory["last_action"],
            ),
            1,
        )

    def yaw_rate(self, s):
        """The cube's angular velocity about the world z (rad/s), (N,)."""
        return s["cube_ang_vel"][:, 2]

    def metrics(self, s, memory):
        return {"yaw_rate": self.yaw_rate(s)}

    def reward(self, s, prev, action, memory):
        xp, sq = self.xp, self.xp.square
        raw = (
            self.yaw_rate(s),
            xp.astype(self.terminated(s, memory), self.dtype),
            sq(action - memory["last_action"]).sum(1),
            sq(s["q"] - self.default_q).sum(1),
        )
        weighted = xp.stack(raw, 1) * self.weights  # each term times its weight and dt
        return weighted.sum(1), dict(zip(TERMS, weighted.T, strict=True))

    def terminated(self, s, memory):
        cube = s["cube_pos"]
        far = self.xp.square(cube - self.grasp_site).sum(1) > self.max_distance**2
        return (cube[:, 2] < self.drop_height) | far

    def remember(self, s, action, memory):
        return {"last_action": self.xp.copy(action)}

    def reset_state(self, env_ids, rng):
        xp, n, scale = self.xp, rng.rows, self.reset_noise_scale
        qpos = xp.copy(xp.broadcast_to(self.grasp, (n, len(self.grasp))))
        qpos[:, self.q_idx] += rng.uniform((16,), -scale, scale, dtype=self.dtype)
        c = self.cube_q
        qpos[:, c : c + 3] = self.cube_drop + rng.uniform((3,), -0.01, 0.01, dtype=self.dtype)
        quat = rng.normal((4,), dtype=self.dtype)  # a normal 4-vector's direction: a uniform rotation
        qpos[:, c + 3 : c + 7] = quat / xp.sqrt(xp.square(quat).sum(1))[:, None]
        return qpos, xp.zeros((n, self.nv), self.dtype)

    def reset_memory(self, rng):
        return {"last_action": self.xp.zeros((rng.rows, 16), self.dtype)}


def left_product(a):
    """The rows r_j of the quaternion a's left product, a * b = sum_j b_j r_j (wxyz, Hamilton's)."""
    w, x, y, z = a
    return np.array([(w, x, y, z), (-x, w, z, -y), (-y, -z, w, x), (-z, y, -x, w)])
