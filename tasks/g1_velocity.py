"""G1 velocity: the Unitree G1 humanoid of MuJoCo Menagerie tracks a commanded planar velocity
and yaw rate on flat ground, walking on two feet.

Model: Menagerie's 29-DoF G1 in its MJX variant (`unitree_g1/scene_mjx.xml`, found by
`unienv.robots`): the full robot with its meshes for rendering, but collisions only between
the capsules and spheres that Menagerie designed and listed as contact pairs (feet-floor,
foot-foot, foot-shin, hands-hips, body-floor, ...), with "lower, more realistic PD gains",
and transferred to hardware in MuJoCo Playground (Menagerie's README). Chosen over `g1.xml`
(mesh collisions: several times the contact work on 2 CPU cores) and over Playground's
`g1_mjx_feetonly.xml` (cheaper still, but not in Menagerie's folder, so not found by name, and
blind to a knee or a hand touching the ground).
PD control, as that model states it: position actuators kp 75 N m/rad, kv 2 N m s/rad (ankles
and wrists kp 20), the joints' armature and torque limits (88/139 N m at hips and knees, 50 at
the ankles, 25 and 5 at the arms). Default pose: Menagerie's "knees_bent" keyframe (hip pitch
-0.312, knee 0.669, ankle pitch -0.363 rad, arms at the sides; pelvis at 0.755 m), mjlab's G1
default pose. Action scale 0.25 rad (legged_gym's; mjlab uses 0.5). Timing: sim_dt 0.004 s
(the model's own), decimation 5 (a 0.02 s control step), as MuJoCo Playground's G1 joystick.
Actions follow the model's actuator order (legs, waist, arms: Menagerie's names).

The Go1's scheme (tasks/go1_velocity.py) with the humanoid's terms: feet_distance (how much
closer than `min_feet_distance` the feet are across the heading, so they never cross),
torso_upright (the torso's tilt: squared xy of gravity in the torso frame), and feet air time
rewarded from 0.4 s. Terminates when the pelvis touches anything or tilts more than
`max_tilt`. Needs body views and contact forces.
"""

import dataclasses

import gymnasium as gym
import numpy as np

from unienv.task import option
from unienv.tasks.common import rotation_matrix
from unienv.tasks.go1_velocity import WEIGHTS, Go1Options, Go1Velocity
from unienv.tasks.quadruped import COMMAND_RANGES
from unienv.tasks.quadruped_rough import QuadrupedRough, QuadrupedRoughOptions

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
    base_height_target: float = option(0.755, "m: the base height term's target (the default pose's)")
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
    home_key = "knees_bent"
    root_body = "pelvis"
    feet = ("left_ankle_roll_link", "right_ankle_roll_link")
    single_action_space = gym.spaces.Box(-1.0, 1.0, (29,), np.float32)
    camera = {"distance": 3.0, "azimuth": 135.0, "elevation": -15.0, "track_body": "pelvis"}
    terms = (*Go1Velocity.terms, "feet_distance", "torso_upright")
    air_time_threshold = 0.4
    Options = G1Options

    def setup(self, backend):
        super().setup(backend)
        self.torso_feet = backend.find("body", ("torso_link", *self.feet))

    def read(self, backend):
        s = super().read(backend)
        views = backend.get_body_views(self.torso_feet)
        pos, quat = self.xp.asarray(views.pos), self.xp.asarray(views.quat)
        s["feet_xy"] = pos[:, 1:, :2]
        s["torso_gravity"] = -rotation_matrix(self.xp, quat[:, 0])[:, 2]  # world -z, torso frame
        return s

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
