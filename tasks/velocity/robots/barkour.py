"""Barkour: Google's Barkour vB quadruped of MuJoCo Menagerie, in its MJX variant
(`google_barkour_vb/scene_mjx.xml`, found by `unienv.robots`), the model MuJoCo Playground's
Barkour joystick task trains.

Model: Menagerie's, as it ships (14.5 kg; four legs, front-left, hind-left, front-right,
hind-right, each an abduction, hip and knee joint, the actuators in that order): the MJX variant's
solver settings (1 iteration, 5 line-search iterations, Euler damping off) and collisions
between the feet's spheres and the floor only, so the torso never touches anything and a fall
ends an episode by its tilt. PD control as the model states it: position servos kp 50 N m/rad,
kd 0.5 N m s/rad, torque limit 18 N m, joint damping 0.024 N m s/rad, armature 0.011 kg m^2
(Playground lowers kp to 35 and raises the joints' damping to 0.52 for its task). Default pose:
the scene's "home" keyframe (hips 0.5, knees 1.0 rad; torso at 0.28 m). From Playground's
Barkour joystick: timing (sim_dt 0.004 s, decimation 5, a 0.02 s control step), action scale
0.3 rad, command ranges (forward -0.6 to 1.5 m/s, lateral +-0.8 m/s, yaw +-0.7 rad/s) and the
reward weights where unienv has the term (velocity tracking 1.5 and 0.8, lin_vel_z -2,
ang_vel_xy -0.05, orientation -5, torques -2e-4, on unienv's squared torques where Playground
weighs |tau| + sum |tau_i|, action_rate -0.1, feet air time 0.2 from 0.1 s), the step's total
floored at 0 as Playground clips it. Feet: the lower legs, which carry the foot spheres. A zero
action holds the home pose, the knees sagging about 0.13 rad into their servos.
"""

from unienv.tasks.velocity.spec import RobotSpec

BARKOUR = RobotSpec(
    name="barkour",
    title="Google Barkour vB",
    scene="google_barkour_vb/scene_mjx.xml",
    source="MuJoCo Menagerie (Google DeepMind); the MJX variant, MuJoCo Playground's",
    license="Apache-2.0 (the folder's LICENSE)",
    gains_doc="kp 50 N m/rad, kd 0.5 N m s/rad (Menagerie's)",
    root_body="torso",
    feet=("lower_leg_front_left", "lower_leg_hind_left", "lower_leg_front_right", "lower_leg_hind_right"),
    joints=12,
    sim_dt=0.004,
    decimation=5,
    action_scale=0.3,
    base_height_target=0.28,
    weights={
        "lin_vel": 1.5,
        "ang_vel": 0.8,
        "lin_vel_z": -2.0,
        "ang_vel_xy": -0.05,
        "orientation": -5.0,
        "torques": -2e-4,
        "action_rate": -0.1,
        "feet_air_time": 0.2,
    },
    command_ranges={"lin_vel_x": (-0.6, 1.5), "lin_vel_y": (-0.8, 0.8), "ang_vel_yaw": (-0.7, 0.7)},
    air_time_threshold=0.1,
    only_positive_rewards=True,
    camera={"distance": 1.3, "azimuth": 135.0, "elevation": -20.0, "track_body": "torso"},
)
