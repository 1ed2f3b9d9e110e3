"""Go1: the Unitree Go1 of MuJoCo Menagerie (`unitree_go1/scene.xml`, found by `unienv.robots`).

Joint, actuator and body names are Menagerie's, kept as they are: actions follow the model's
actuator order (FR, FL, RR, RL legs; hip, thigh, calf each). PD control as Menagerie's model
states it: position actuators kp 100 N m/rad, joint damping 2 (1 on the abduction joints)
N m s/rad, armature 0.01, torque limits 23.7 N m (35.55 at the knees). Default pose: Menagerie's
"home" keyframe (hip 0, thigh 0.9, calf -1.8 rad; trunk at 0.27 m). Action scale 0.25 rad
(legged_gym's). Timing: sim_dt 0.004 s, decimation 5 (a 0.02 s control step), as MuJoCo
Playground's Go1 joystick. Feet are the calf bodies (the foot spheres are geoms of the calves).
Reward terms: legged_gym's velocity set plus feet_slip and joint_limits (mjlab's). A zero action
holds the home pose indefinitely.
"""

from unienv.tasks.velocity.spec import WEIGHTS, RobotSpec

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
    action_scale=0.25,
    base_height_target=0.27,
    weights=WEIGHTS | {"feet_slip": -0.1, "joint_limits": -10.0},
    camera={"distance": 1.5, "azimuth": 135.0, "elevation": -20.0, "track_body": "trunk"},
)
