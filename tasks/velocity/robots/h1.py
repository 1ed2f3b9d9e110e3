"""H1: the Unitree H1 humanoid of MuJoCo Menagerie (`unitree_h1/scene.xml`, found by
`unienv.robots`), walking on two feet.

Model: Menagerie's H1 as it ships (19 actuated joints: hip yaw, roll and pitch, knee and ankle of
each leg, the torso, shoulder pitch, roll and yaw and elbow of each arm; capsule, cylinder and
sphere colliders, three capsules under each foot), whose actuators are torque motors (ctrl in
N m, their control range the torque limit: 200 N m at the hips and torso, 300 at the knees, 40 at
the ankles and shoulders' pitch and roll, 18 at the shoulders' yaw and the elbows). The task makes
each a PD position servo on its joint with Unitree's own gains for the H1 (unitree_rl_gym,
legged_gym/envs/h1/h1_config.py): kp, kd (N m/rad, N m s/rad) 150, 2 at the hips, 200, 4 at the
knees, 40, 2 at the ankles, 300, 6 at the torso, 150, 2 at the shoulders, 100, 2 at the elbows,
the motors' limits becoming the joints' torque limits; the model's joint damping (1 N m s/rad)
and armature (0.1 kg m^2) stay. Action scale 0.25 rad (Unitree's). Default pose: Unitree's stance
(hip pitch -0.1, knee 0.3, ankle -0.2 rad, the rest 0), added to the scene as keyframe "default"
with the pelvis at 1.065 m, where the feet's capsules touch the floor (Unitree starts it at 1.0 m
and lets it settle; Menagerie's own "home" keyframe bends the knees to 0.8 rad). Timing: sim_dt
0.005 s, decimation 4 (a 0.02 s control step), legged_gym's and so Unitree's.
Under these gains the stance is statically unstable, as the G1's is: the ankle servos resist
tipping with 2 x 40 N m/rad, gravity tips the body about the ankles with m g h = 469 N m/rad
(51.4 kg, its COM 0.93 m above them), so a zero action holds the pose for about 1.5 s, sagging
into the servos, and the robot falls at about 2 s. Standing is the policy's work.

Reward terms: unitree_rl_gym's H1 scales where unienv has the term (velocity tracking 1 and 0.5,
lin_vel_z -2, ang_vel_xy -0.05, orientation -1, base_height -10 with its target 1.05 m,
action_rate -0.01, dof_pos_limits -5 as joint_limits, contact_no_vel -0.2 as feet_slip; its
feet_air_time and torques weigh 0), with the G1's biped terms feet_distance and torso_upright;
the step's total floored at 0, as the G1's. Terminates when the pelvis tilts more than 0.8 rad
(the pelvis has no collider in Menagerie's model).
"""

from unienv.tasks.velocity.spec import RobotSpec, by_name

H1 = RobotSpec(
    name="h1",
    title="Unitree H1",
    scene="unitree_h1/scene.xml",
    source="MuJoCo Menagerie, derived from the URDF Unitree provided",
    license="BSD-3-Clause (the folder's LICENSE)",
    gains_doc="Unitree's (unitree_rl_gym): kp 150 hips and shoulders, 200 knees, 40 ankles, 300 torso, 100 elbows",
    root_body="pelvis",
    feet=("left_ankle_link", "right_ankle_link"),
    joints=19,
    sim_dt=0.005,
    decimation=4,
    action_scale=0.25,
    base_height_target=1.05,
    weights={
        "lin_vel": 1.0,
        "ang_vel": 0.5,
        "lin_vel_z": -2.0,
        "ang_vel_xy": -0.05,
        "orientation": -1.0,
        "base_height": -10.0,
        "action_rate": -0.01,
        "joint_limits": -5.0,
        "feet_slip": -0.2,
        "feet_distance": -10.0,
        "torso_upright": -1.0,
    },
    keyframe="default",
    stance={"hip_pitch": -0.1, "knee": 0.3, "ankle": -0.2},
    stance_height=1.065,
    gains=by_name(
        {
            "hip": (150.0, 2.0),
            "knee": (200.0, 4.0),
            "ankle": (40.0, 2.0),
            "torso": (300.0, 6.0),
            "shoulder": (150.0, 2.0),
            "elbow": (100.0, 2.0),
        }
    ),
    torso_body="torso_link",
    max_tilt=0.8,
    reset_noise_scale=0.05,
    air_time_threshold=0.4,
    only_positive_rewards=True,
    camera={"distance": 2.4, "azimuth": 135.0, "elevation": -15.0, "track_body": "pelvis"},
)
