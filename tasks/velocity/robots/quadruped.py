"""Quadruped: a Go2-class quadruped written for unienv (assets/quadruped.xml, about 15.2 kg), the
light model of the legged tasks.

Twelve joints (FL, FR, RL, RR legs; hip abduction, thigh, knee each) under the scene's position
servos: kp 40 N m/rad, kv 1 N m s/rad, torque limits 23.7 N m (45.4 at the knees), Unitree Go2's
public figures. Default pose: the scene's "home" keyframe (thighs 0.8, calves -1.5 rad; base at
0.333 m, 0.30 m is the base height term's target). Action scale 0.5 rad. Timing: sim_dt
0.005 s, decimation 4 (a 0.02 s control step), legged_gym's. Reward terms: legged_gym's velocity
set (spec.WEIGHTS). Feet: the foot bodies, which carry the contact spheres.
"""

import os

from unienv.tasks import ASSETS
from unienv.tasks.velocity.spec import WEIGHTS, RobotSpec

QUADRUPED = RobotSpec(
    name="quadruped",
    title="Quadruped (Go2-class)",
    scene=os.path.join(ASSETS, "quadruped.xml"),
    source="written for unienv after Unitree Go2's public dimensions, masses and torque limits",
    license="Apache-2.0 (unienv's)",
    gains_doc="kp 40 N m/rad, kv 1 N m s/rad (the scene's)",
    root_body="base",
    feet=("FL_foot", "FR_foot", "RL_foot", "RR_foot"),
    joints=12,
    sim_dt=0.005,
    decimation=4,
    action_scale=0.5,
    base_height_target=0.30,
    weights=WEIGHTS,
    camera={"distance": 1.1, "azimuth": 135.0, "elevation": -20.0, "track_body": "base"},
)
