"""G1: the Unitree G1 humanoid of MuJoCo Menagerie, walking on two feet.

Model: Menagerie's 29-DoF G1 in its MJX variant (`unitree_g1/scene_mjx.xml`, found by
`unienv.robots`): the full robot with its meshes for rendering, but collisions only between
the capsules and spheres that Menagerie designed and listed as contact pairs (feet-floor,
foot-foot, foot-shin, hands-hips, body-floor, ...), transferred to hardware in MuJoCo
Playground (Menagerie's README). 29 DoF: the folder has no 23-DoF model (its g1.xml is the
29-DoF G1 too), and mjlab's G1 velocity task trains these 29 joints. Chosen over `g1.xml`
(mesh collisions: several times the contact work on 2 CPU cores) and over Playground's
`g1_mjx_feetonly.xml` (cheaper still, but not in Menagerie's folder, so not found by name, and
blind to a knee or a hand touching the ground). Genesis does not simulate explicit contact
pairs, so it refuses the G1 at construction.
PD control and default pose: mjlab's G1 (mjlab/asset_zoo/robots/unitree_g1/g1_constants.py)
in place of the MJX file's kp 75 (20 at ankles and wrists), kv 2. Each joint's position servo
is critically overdamped at 10 Hz about its motor's reflected inertia (the joint's armature in
the model, which is mjlab's per motor type): kp = a w^2, kd = 2 zeta a w, w = 2 pi 10 rad/s,
zeta = 2. So kp, kd (N m/rad, N m s/rad) are 40.18, 2.558 at hip pitch and yaw and waist yaw
(7520-14 motor, a 0.01018), 99.10, 6.309 at hip roll and knee (7520-22, a 0.02510), 28.50,
1.814 at the ankles and waist roll and pitch (two 5020s, a 0.00722), 14.25, 0.907 at shoulders,
elbows and wrist roll (5020, a 0.00361), 16.78, 1.068 at wrist pitch and yaw (4010, a 0.00425);
torque limits 88, 139, 50, 25, 5 N m (the model's, mjlab's). An action of 1 moves a joint's
target by action_scale (0.25) x its torque limit / kp: 0.548, 0.351, 0.439, 0.439, 0.0745 rad
in that order. Default pose: mjlab's knees-bent stance (hip pitch -0.312, knee 0.669, ankle
pitch -0.363, shoulder pitch 0.2, shoulder roll +-0.2, elbow 0.6 rad, the rest 0; pelvis at
0.76 m), added to the scene as keyframe "default". Under these gains, as under the MJX file's,
the stance is statically unstable: the ankle pitch servos resist tipping with 2 x 28.5 N m/rad,
gravity tips the body about the ankles with m g h = 193 N m/rad (33.3 kg, its COM 0.62 m above
them), so a zero action topples forward in about 1.3 s. Standing is the policy's work, as in
mjlab. Timing: sim_dt 0.004 s (the model's own), decimation 5 (a 0.02 s control step, mjlab's
and Playground's). mjwarp's constraint and contact buffers are the scene's `<size njmax
nconmax>` (see G1_NJMAX; on terrain, mujoco_warp's own guess for a heightfield scene).
Actions follow the model's actuator order (legs, waist, arms: Menagerie's names), which is its
joint order.

Reward terms: the Go1's (legged_gym's set, feet_slip, joint_limits) with the humanoid's:
feet_distance (feet closer than 0.15 m across the heading, so they never cross), torso_upright
(the torso's tilt), feet air time rewarded from 0.4 s, torques at -1e-5; the step's total
floored at 0 (legged_gym's only_positive_rewards): a first policy falls within a second, and
penalties that outweigh the tracking terms would teach it to fall sooner. Terminates when the
pelvis touches anything or tilts more than 0.8 rad.
"""

import numpy as np

from unienv.tasks.velocity.spec import COMMAND_RANGES, WEIGHTS, RobotSpec

NATURAL_FREQUENCY, DAMPING_RATIO = 2 * np.pi * 10.0, 2.0  # mjlab's: rad/s, and overdamped
# The constraint rows and contacts one G1 world can need at most on the flat floor (the
# scene's <size>, which mjwarp allocates per world): 29 joint frictionloss rows (always on) and 29 joint limits;
# 23 pairs with the floor at condim 3 (pyramidal: 4 rows a contact), 21 capsules of up to 2
# contacts and 2 spheres of 1; 26 self pairs at condim 1 (1 row a contact), 25 capsule-capsule
# or capsule-box of up to 2 and the feet's box-box of up to 8. Rows: 58 + 44 * 4 + 58 = 292;
# contacts: 44 + 58 = 102. Standing takes 77 rows and 12 contacts.
G1_NJMAX, G1_NCONMAX = 292, 102


def pd_gains(joint) -> tuple[float, float]:
    """mjlab's PD gains from a joint's reflected inertia a (kg m^2): kp = a w^2, kd = 2 zeta a w."""
    armature = joint.armature
    return armature * NATURAL_FREQUENCY**2, 2 * DAMPING_RATIO * armature * NATURAL_FREQUENCY


G1 = RobotSpec(
    name="g1",
    title="Unitree G1 (29 DoF)",
    scene="unitree_g1/scene_mjx.xml",
    source="MuJoCo Menagerie, derived from Unitree's g1_29dof_rev_1_0 MJCF; the MJX variant of MuJoCo Playground",
    license="BSD-3-Clause (the folder's LICENSE)",
    gains_doc="mjlab's: each servo 10 Hz, damping ratio 2 about its motor's armature (kp 14.3 to 99.1 N m/rad)",
    root_body="pelvis",
    feet=("left_ankle_roll_link", "right_ankle_roll_link"),
    joints=29,
    sim_dt=0.004,
    decimation=5,
    action_scale=0.25,
    scale_by_torque=True,
    base_height_target=0.76,
    weights=WEIGHTS
    | {
        "torques": -1e-5,
        "feet_slip": -0.1,
        "joint_limits": -10.0,
        "feet_distance": -10.0,
        "torso_upright": -1.0,
    },
    command_ranges=COMMAND_RANGES | {"lin_vel_x": (-0.5, 1.0), "lin_vel_y": (-0.3, 0.3)},
    keyframe="default",
    stance={  # mjlab's knees-bent stance, by joint name suffix; other joints at 0
        "hip_pitch_joint": -0.312,
        "knee_joint": 0.669,
        "ankle_pitch_joint": -0.363,
        "shoulder_pitch_joint": 0.2,
        "left_shoulder_roll_joint": 0.2,
        "right_shoulder_roll_joint": -0.2,
        "elbow_joint": 0.6,
    },
    stance_height=0.76,
    gains=pd_gains,
    torso_body="torso_link",
    max_tilt=0.8,
    reset_noise_scale=0.05,
    air_time_threshold=0.4,
    only_positive_rewards=True,
    foot_height=0.04,  # the ankle roll link's origin above the ground in the default stance
    gait_offsets=(0.0, 0.5),  # left, right: alternating (the gait clock is off unless gait_frequency > 0)
    camera={"distance": 1.8, "azimuth": 135.0, "elevation": -15.0, "track_body": "pelvis"},
    buffers=(G1_NJMAX, G1_NCONMAX),
    refused={"genesis": "contact pairs"},
)
