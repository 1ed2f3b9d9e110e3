"""Go1: the Unitree Go1 of MuJoCo Menagerie (`unitree_go1/scene.xml`, found by `unienv.robots`).

Joint, actuator and body names are Menagerie's, kept as they are: actions follow the model's
actuator order (FR, FL, RR, RL legs; hip, thigh, calf each). PD control as Menagerie's model
states it: position actuators kp 100 N m/rad, joint damping 2 (1 on the abduction joints)
N m s/rad, armature 0.01, torque limits 23.7 N m (35.55 at the knees). Default pose: Menagerie's
"home" keyframe (hip 0, thigh 0.9, calf -1.8 rad; trunk at 0.27 m). Action scale 0.5 rad
(MuJoCo Playground's Go1 joystick). Timing: sim_dt 0.004 s, decimation 5 (a 0.02 s control
step), as Playground's. Feet are the calf bodies (the foot spheres, 0.023 m, are geoms of the
calves, 0.213 m below each knee). Commands: the joystick's vx in [-0.5, 1], vy in [-0.5, 0.5] m/s,
yaw rate in [-1, 1] rad/s. A zero action holds the home pose indefinitely.

Tuned to learn a trot fast (docs/laptop.md, with the figures): a gait clock at 2 Hz (observed
as sin and cos of its phase; Walk These Ways' clock inputs, Margolis and Agrawal 2022) with a
trot's contact schedule, FR and RL in stance together for half a stride, then FL and RR (the
`gait` term: stance feet in contact, swinging feet lifted 8 cm); tracking with a narrow kernel,
exp(-error^2 / 0.1), so that standing still earns nothing (legged_gym's 0.25 pays 37 % of its
maximum for not moving at 0.5 m/s); a few light penalties (tilt, torques, action rate); the
step's total floored at 0 (legged_gym's only_positive_rewards), since a new policy's penalties
would teach it to fall. Measured against legged_gym's set on the off-policy learner: that set
learns to stand (docs/laptop.md).
"""

from unienv.tasks.velocity.spec import COMMAND_RANGES, RobotSpec

WEIGHTS = {  # each times the env step dt
    "lin_vel": 1.0,
    "ang_vel": 1.0,
    "orientation": -1.0,
    "torques": -1e-4,
    "action_rate": -0.005,
    "gait": 1.5,
}

GO1 = RobotSpec(
    name="go1",
    title="Unitree Go1",
    scene="unitree_go1/scene.xml",
    source="MuJoCo Menagerie, derived from Unitree's go1_description URDF",
    license="BSD-3-Clause (the folder's LICENSE)",
    gains_doc="kp 100 N m/rad; joint damping 2 (1 at the abductions) N m s/rad (Menagerie's)",
    root_body="trunk",
    feet=("FR_calf", "FL_calf", "RR_calf", "RL_calf"),
    joints=12,
    sim_dt=0.004,
    decimation=5,
    action_scale=0.5,
    base_height_target=0.27,
    weights=WEIGHTS,
    command_ranges=COMMAND_RANGES | {"lin_vel_x": (-0.5, 1.0)},
    foot_point=(0.0, 0.0, -0.213),
    foot_height=0.023,
    gait_offsets=(0.0, 0.5, 0.5, 0.0),  # FR, FL, RR, RL: a trot
    gait_frequency=2.0,
    tracking_sigma=0.1,
    only_positive_rewards=True,
    camera={"distance": 1.1, "azimuth": 135.0, "elevation": -20.0, "track_body": "trunk"},
)
