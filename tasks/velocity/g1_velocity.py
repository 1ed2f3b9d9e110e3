"""G1 velocity: the Unitree G1 humanoid of MuJoCo Menagerie tracks a commanded planar velocity
and yaw rate on flat ground, walking on two feet.

Model: Menagerie's 29-DoF G1 in its MJX variant (`unitree_g1/scene_mjx.xml`, found by
`unienv.robots`): the full robot with its meshes for rendering, but collisions only between
the capsules and spheres that Menagerie designed and listed as contact pairs (feet-floor,
foot-foot, foot-shin, hands-hips, body-floor, ...), transferred to hardware in MuJoCo
Playground (Menagerie's README). 29 DoF: the folder has no 23-DoF model (its g1.xml is the
29-DoF G1 too), and mjlab's G1 velocity task trains these 29 joints. Chosen over `g1.xml`
(mesh collisions: several times the contact work on 2 CPU cores) and over Playground's
`g1_mjx_feetonly.xml` (cheaper still, but not in Menagerie's folder, so not found by name, and
blind to a knee or a hand touching the ground).
PD control and default pose: mjlab's G1 (mjlab/asset_zoo/robots/unitree_g1/g1_constants.py)
in place of the MJX file's kp 75 (20 at ankles and wrists), kv 2. Each joint's position servo is critically overdamped at 10 Hz about its motor's reflected inertia
(the joint's armature in the model, which is mjlab's per motor type): kp = a w^2,
kd = 2 zeta a w, w = 2 pi 10 rad/s, zeta = 2. So kp, kd (N m/rad, N m s/rad) are 40.18, 2.558
at hip pitch and yaw and waist yaw (7520-14 motor, a 0.01018), 99.10, 6.309 at hip roll and knee
(7520-22, a 0.02510), 28.50, 1.814 at the ankles and waist roll and pitch (two 5020s, a 0.00722),
14.25, 0.907 at shoulders, elbows and wrist roll (5020, a 0.00361), 16.78, 1.068 at wrist pitch
and yaw (4010, a 0.00425); torque limits 88, 139, 50, 25, 5 N m (the model's, mjlab's). An
action of 1 moves a joint's target by action_scale (0.25) x its torque limit / kp: 0.548, 0.351,
0.439, 0.439, 0.0745 rad in that order. Default pose: mjlab's knees-bent stance (hip pitch
-0.312, knee 0.669, ankle pitch -0.363, shoulder pitch 0.2, shoulder roll +-0.2, elbow 0.6 rad,
the rest 0; pelvis at 0.76 m), added to the scene as keyframe "default". Under these gains,
as under the MJX file's, the stance is statically unstable: the ankle pitch servos resist
tipping with 2 x 28.5 N m/rad, gravity tips the body about the ankles with m g h = 193 N m/rad
(33.3 kg, its COM 0.62 m above them), so a zero action topples forward in about 1.3 s.
Standing is the policy's work, as in mjlab. Timing: sim_dt 0.004 s
(the model's own), decimation 5 (a 0.02 s control step, mjlab's and Playground's). mjwarp's
constraint and contact buffers are the scene's `<size njmax nconmax>` (see `G1_NJMAX`; on
terrain, mujoco_warp's own guess for a heightfield scene).
Actions follow the model's actuator order (legs, waist, arms: Menagerie's names), which is its
joint order.

The Go1's scheme (tasks/go1_velocity.py) with the humanoid's terms: feet_distance (how much
closer than `min_feet_distance` the feet are across the heading, so they never cross),
torso_upright (the torso's tilt: squared xy of gravity in the torso frame), and feet air time
rewarded from 0.4 s; the step's total floored at 0. Terminates when the pelvis touches anything or tilts more than
`max_tilt`. Needs body views and contact forces.
"""

import dataclasses

import gymnasium as gym
import numpy as np

from unienv.backends.scene import edit_spec, write_spec
from unienv.task import option
from unienv.tasks.common import rotation_matrix
from unienv.tasks.velocity.go1_velocity import WEIGHTS, Go1Options, Go1Velocity
from unienv.tasks.velocity.quadruped import COMMAND_RANGES
from unienv.tasks.velocity.quadruped_rough import QuadrupedRough, QuadrupedRoughOptions

NATURAL_FREQUENCY, DAMPING_RATIO = 2 * np.pi * 10.0, 2.0  # mjlab's: rad/s, and overdamped
DEFAULT_POSE = {  # rad, by joint name suffix (mjlab's knees-bent stance); other joints at 0
    "hip_pitch_joint": -0.312,
    "knee_joint": 0.669,
    "ankle_pitch_joint": -0.363,
    "shoulder_pitch_joint": 0.2,
    "left_shoulder_roll_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
    "elbow_joint": 0.6,
}
DEFAULT_HEIGHT = 0.76  # m: the pelvis's, feet on the ground
# The constraint rows and contacts one G1 world can need at most on the flat floor (the
# scene's <size>, which mjwarp allocates per world): 29 joint frictionloss rows (always on) and 29 joint limits;
# 23 pairs with the floor at condim 3 (pyramidal: 4 rows a contact), 21 capsules of up to 2
# contacts and 2 spheres of 1; 26 self pairs at condim 1 (1 row a contact), 25 capsule-capsule
# or capsule-box of up to 2 and the feet's box-box of up to 8. Rows: 58 + 44 * 4 + 58 = 292;
# contacts: 44 + 58 = 102. Standing takes 77 rows and 12 contacts.
G1_NJMAX, G1_NCONMAX = 292, 102


def pd_gains(armature):
    """mjlab's PD gains from a joint's reflected inertia a (kg m^2): kp = a w^2, kd = 2 zeta a w."""
    return armature * NATURAL_FREQUENCY**2, 2 * DAMPING_RATIO * armature * NATURAL_FREQUENCY


def default_pose(joint):
    return next((v for suffix, v in DEFAULT_POSE.items() if joint.endswith(suffix)), 0.0)


def g1_scene(scene, buffers):
    """A copy of Menagerie's G1 scene with mjlab's PD gains, the "default" keyframe and, if
    given, `buffers` as its <size njmax nconmax>; returns its path and each actuator's action
    scale per unit of action_scale (torque limit / kp, rad)."""
    spec = edit_spec(scene)
    per_torque = []
    for actuator in spec.actuators:
        joint = spec.joint(actuator.target)
        kp, kd = pd_gains(joint.armature)
        actuator.gainprm[0], actuator.biasprm[1], actuator.biasprm[2] = kp, -kp, -kd
        per_torque.append(joint.actfrcrange[1] / kp)
    pose = [default_pose(spec.joint(a.target).name) for a in spec.actuators]
    # the pelvis's free joint first (upright, at DEFAULT_HEIGHT), then the 29 hinges
    qpos = [0.0, 0.0, DEFAULT_HEIGHT, 1.0, 0.0, 0.0, 0.0, *(default_pose(j.name) for j in spec.joints[1:])]
    spec.add_key(name="default", qpos=qpos, ctrl=pose)
    if buffers:
        spec.njmax, spec.nconmax = buffers
    return write_spec(spec, scene, "unienv_robots"), np.array(per_torque)


G1_WEIGHTS = WEIGHTS | {"torques": -1e-5, "feet_distance": -10.0, "torso_upright": -1.0}
G1_COMMANDS = COMMAND_RANGES | {"lin_vel_x": (-0.5, 1.0), "lin_vel_y": (-0.3, 0.3)}


@dataclasses.dataclass
class G1Options(Go1Options):
    command_ranges: dict = option(
        G1_COMMANDS, "[lo, hi] of each command (m/s, m/s, rad/s); the ones given replace these"
    )
    reward_weights: dict = option(
        G1_WEIGHTS, "each term's weight (then times the env step dt); the ones given replace these"
    )
    action_scale: float = option(
        0.25, "an action of 1 moves a joint's target by this times its torque limit / kp (rad)"
    )
    base_height_target: float = option(0.76, "m: the base height term's target (the default pose's)")
    max_tilt: float = option(0.8, "rad: an episode ends when the pelvis tilts more")
    reset_noise_scale: float = option(
        0.05, "rad, rad/s, m/s: reset joints and velocities U(-it, it) off the pose"
    )
    min_feet_distance: float = option(0.15, "m: feet_distance penalizes feet closer across the heading")


def feet_distance(xp, feet_xy, heading_xy, minimum):
    """How much closer than `minimum` (m) two feet are across the heading: (N, 2, 2), (N, 2) -> (N,)."""
    d = feet_xy[:, 0] - feet_xy[:, 1]
    across = heading_xy[:, 0] * d[:, 1] - heading_xy[:, 1] * d[:, 0]  # left foot's lead to the left
    return xp.clip(minimum - across, 0.0, None)


class G1Velocity(Go1Velocity):
    name = "g1_velocity"
    menagerie, scene_file = "unitree_g1", "scene_mjx.xml"
    home_key = "default"
    root_body = "pelvis"
    feet = ("left_ankle_roll_link", "right_ankle_roll_link")
    single_action_space = gym.spaces.Box(-1.0, 1.0, (29,), np.float32)
    camera = {"distance": 3.0, "azimuth": 135.0, "elevation": -15.0, "track_body": "pelvis"}
    terms = (*Go1Velocity.terms, "feet_distance", "torso_upright")
    air_time_threshold = 0.4
    Options = G1Options
    buffers = (G1_NJMAX, G1_NCONMAX)  # the flat scene's bound (see G1_NJMAX)

    def __init__(self, **options):
        super().__init__(**options)
        self.scene, self.per_torque = g1_scene(self.scene, self.buffers)

    def setup(self, backend):
        super().setup(backend)
        self.joint_scale = self.array(self.action_scale * self.per_torque)
        self.torso_feet = backend.find("body", ("torso_link", *self.feet))

    def action_to_ctrl(self, action):
        return self.default_q + self.joint_scale * action

    def deployment(self):
        declared = super().deployment()
        declared["action"]["scale"] = (self.action_scale * self.per_torque).tolist()  # per joint, rad
        return declared

    def read(self, backend):
        s = super().read(backend)
        views = backend.get_body_views(self.torso_feet)
        pos, quat = self.xp.asarray(views.pos), self.xp.asarray(views.quat)
        s["feet_xy"] = pos[:, 1:, :2]
        s["torso_gravity"] = -rotation_matrix(self.xp, quat[:, 0])[:, 2]  # world -z, torso frame
        return s

    def reward(self, s, prev, action, memory):
        """Go1's terms, the total floored at 0 (legged_gym's only_positive_rewards): a first
        policy falls within a second, and penalties that outweigh the tracking terms would
        teach it to fall sooner."""
        total, terms = super().reward(s, prev, action, memory)
        return self.xp.clip(total, 0.0, None), terms

    def extra_terms(self, s, action, memory):
        heading = s["rot"][:, :2, 0]
        heading = heading / self.xp.clip(self.xp.norm(heading)[:, None], 1e-6, None)
        upright = self.xp.square(s["torso_gravity"][:, :2]).sum(1)
        distance = feet_distance(self.xp, s["feet_xy"], heading, self.min_feet_distance)
        return (*super().extra_terms(s, action, memory), distance, upright)


@dataclasses.dataclass
class G1RoughOptions(G1Options, QuadrupedRoughOptions):
    """G1's options and quadruped_rough's terrain, spawn and scan options."""


class G1VelocityRough(QuadrupedRough, G1Velocity):
    """g1_velocity_rough: the G1 on generated terrain with a height scan and the terrain
    curriculum, as quadruped_rough does it; Menagerie's floor (its contact pairs name it) is
    replaced by the terrain's heightfield, so the pairs collide with the terrain."""

    name = "g1_velocity_rough"
    Options = G1RoughOptions
    buffers = None  # a capsule on a heightfield has many more contacts: mujoco_warp's own guess
