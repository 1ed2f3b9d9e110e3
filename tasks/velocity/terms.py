"""The legged reward terms: free functions over batched arrays, chosen and weighted by name.

A term is a function `term(t, s, prev, action, memory) -> (N,)` registered by `@term` under its
function's name. `t` is the task (its `xp`, `dt`, options and the constants its `setup` resolved:
`default_q`, `q_low`, `q_high`), `s` the reading after the step, `prev` the one before it,
`action` the step's action and `memory` the env-owned per-env memory (`command`, `last_action`,
`air_time`). It returns the term's raw value per env; the task multiplies it by its weight and
the env step dt (legged_gym's convention) and sums. A term is pure: it reads its arguments and
changes nothing.

The base reading (`VelocityTask.read`) holds `q`, `qd` (the actuated joints), `torque` (the PD
torques), `height` (the root's, above the ground under it on terrain), `base` (N, 3, 3: the
root's linear and angular velocity and gravity, in its frame), `rot` (its rotation matrix),
`base_contact` and `foot_contact`. What only some terms need is read by name, once per step,
where a chosen term asks for it (`@term(reads=...)`), by the readers in READS:

    feet    foot_pos, foot_vel (N, F, 3): the feet bodies' positions and linear velocities (world)
    soles   foot_gravity (N, F, 3): the world's -z in each foot body's frame
    torso   torso_gravity (N, 3): the world's -z in the frame of the robot's torso body

Adding a term: one function here with `@term` (and its reads), and its name and weight in a
robot spec's `weights` or in the task's `reward_weights` option.
"""

from __future__ import annotations

from collections.abc import Callable

from unienv.tasks.common import rotation_matrix

TERMS: dict[str, Callable] = {}
"""Every reward term by name."""


def term(fn: Callable | None = None, *, reads: tuple[str, ...] = ()) -> Callable:
    """Register `fn` in TERMS under its name; `reads`: the READS it needs beyond the base reading."""

    def register(fn: Callable) -> Callable:
        fn.reads = reads
        TERMS[fn.__name__] = fn
        return fn

    return register if fn is None else register(fn)


# ---- readers: what some terms need of the state, by name ---------------------------------------


def read_feet(t, backend) -> dict:
    """The feet's contact points (the spec's foot_point in each foot body) and the bodies' velocities."""
    xp, views = t.xp, backend.get_body_views(t.feet_ids)
    pos = xp.asarray(views.pos)
    if t.foot_point is not None:  # the point's offset turned into the world frame
        pos = pos + (feet_rotations(xp, views) * t.foot_point).sum(-1)
    return {"foot_pos": pos, "foot_vel": xp.asarray(views.lin_vel)}


def read_soles(t, backend) -> dict:
    rot = feet_rotations(t.xp, backend.get_body_views(t.feet_ids))
    return {"foot_gravity": -rot[..., 2, :]}  # R's last row: the world's z in the foot's frame


def feet_rotations(xp, views):
    """The feet bodies' rotation matrices (N, F, 3, 3), body to world."""
    quat = xp.asarray(views.quat)
    return rotation_matrix(xp, quat.reshape(-1, 4)).reshape(*quat.shape[:2], 3, 3)


def read_torso(t, backend) -> dict:
    quat = t.xp.asarray(backend.get_body_views(t.torso_id).quat)
    return {"torso_gravity": -rotation_matrix(t.xp, quat[:, 0])[:, 2]}  # R's last row: the world's z


READS: dict[str, Callable] = {"feet": read_feet, "soles": read_soles, "torso": read_torso}
"""Readers by name: `reader(t, backend) -> {key: (N, ...)}`, added to the reading."""


# ---- tracking -----------------------------------------------------------------------------------


def tracking(xp, error_sq, sigma: float):
    """exp(-error^2 / sigma): 1 on the command, falling off with the squared error."""
    return xp.exp(error_sq * (-1.0 / sigma))


@term
def lin_vel(t, s, prev, action, memory):
    """Tracking of the commanded planar velocity (base frame): exp(-|command_xy - v_xy|^2 /
    t.tracking_sigma) (legged_gym's sigma 0.25 (m/s)^2 by default)."""
    return tracking(
        t.xp, t.xp.square(memory["command"][:, :2] - s["base"][:, 0, :2]).sum(1), t.tracking_sigma
    )


@term
def ang_vel(t, s, prev, action, memory):
    """Tracking of the commanded yaw rate: exp(-(command_yaw - w_z)^2 / t.yaw_sigma) (a kernel of its
    own: one as narrow as a walk's speed kernel is flat at a 1 rad/s error and pulls no heading back)."""
    return tracking(t.xp, t.xp.square(memory["command"][:, 2] - s["base"][:, 1, 2]), t.yaw_sigma)


# ---- the base's motion and posture ----------------------------------------------------------------


@term
def lin_vel_z(t, s, prev, action, memory):
    """Squared vertical velocity of the base (its frame): bouncing."""
    return t.xp.square(s["base"][:, 0, 2])


@term
def ang_vel_xy(t, s, prev, action, memory):
    """Squared roll and pitch rates of the base: wobbling."""
    return t.xp.square(s["base"][:, 1, :2]).sum(1)


@term
def orientation(t, s, prev, action, memory):
    """The base's tilt: the squared xy of gravity in its frame (0 upright)."""
    return t.xp.square(s["base"][:, 2, :2]).sum(1)


@term
def base_height(t, s, prev, action, memory):
    """Squared distance of the root's height (above the ground under it) from `base_height_target`."""
    return t.xp.square(s["height"] - t.base_height_target)


@term(reads=("torso",))
def torso_upright(t, s, prev, action, memory):
    """The torso body's tilt (a humanoid's upper body, apart from its pelvis): the squared xy of
    gravity in its frame."""
    return t.xp.square(s["torso_gravity"][:, :2]).sum(1)


# ---- effort and smoothness ------------------------------------------------------------------------


@term
def torques(t, s, prev, action, memory):
    """Sum of the squared PD torques (N m)^2."""
    return t.xp.square(s["torque"]).sum(1)


@term
def action_rate(t, s, prev, action, memory):
    """Sum of the squared changes of the action since the last step: jerky targets."""
    return t.xp.square(action - memory["last_action"]).sum(1)


@term
def pose(t, s, prev, action, memory):
    """Sum of the squared joint offsets from the default pose (rad^2): a humanoid's arms and waist
    kept near their stance while its legs walk (mjlab's G1 pose term, without its per-joint
    widths)."""
    return t.xp.square(s["q"] - t.default_q).sum(1)


@term
def joint_limits(t, s, prev, action, memory):
    """How far each joint is outside [t.q_low, t.q_high] (rad: a soft range inside the model's),
    summed."""
    q, clip = s["q"], t.xp.clip
    return (clip(t.q_low - q, 0.0, None) + clip(q - t.q_high, 0.0, None)).sum(1)


# ---- feet -----------------------------------------------------------------------------------------


@term
def feet_air_time(t, s, prev, action, memory):
    """legged_gym's air time: over the feet landing now, the sum of (their time in the air -
    t.air_time_threshold), while the command asks to move (|command_xy| > 0.1 m/s); rewards
    steps longer than the threshold. memory["air_time"] (N, F) is each foot's time in the air
    before this step."""
    air_time, contact, xp = memory["air_time"], s["foot_contact"], t.xp
    landing = (air_time > 0) & contact
    moving = xp.norm(memory["command"][:, :2]) > 0.1
    return ((air_time + (t.dt - t.air_time_threshold)) * landing).sum(1) * moving


@term(reads=("feet",))
def feet_slip(t, s, prev, action, memory):
    """Squared planar speed of the feet that touch the ground, summed: a stance foot sliding."""
    return (t.xp.square(s["foot_vel"][..., :2]).sum(2) * s["foot_contact"]).sum(1)


@term(reads=("soles",))
def feet_flat(t, s, prev, action, memory):
    """The feet's tilt: the squared xy of gravity in each foot body's frame, summed over the feet
    (0 with soles level; FastSAC's foot orientation term, arXiv 2512.01996)."""
    return t.xp.square(s["foot_gravity"][..., :2]).sum((1, 2))


@term(reads=("feet",))
def feet_distance(t, s, prev, action, memory):
    """A biped's feet closer than `min_feet_distance` (m) across the heading: by how much, so
    that they never cross. The first foot is the left one."""
    xp = t.xp
    heading = s["rot"][:, :2, 0]
    heading = heading / xp.clip(xp.norm(heading)[:, None], 1e-6, None)
    d = s["foot_pos"][:, 0, :2] - s["foot_pos"][:, 1, :2]
    across = heading[:, 0] * d[:, 1] - heading[:, 1] * d[:, 0]  # the left foot's lead to the left
    return xp.clip(t.min_feet_distance - across, 0.0, None)


@term(reads=("feet",))
def gait(t, s, prev, action, memory):
    """Following the gait clock, in [0, 1]: each foot is asked to stand for the first half of its
    cycle (the clock's phase plus the foot's offset) and to swing in the second; a standing foot
    scores 1 in contact, a swinging one its lift above its standing height as a share of
    t.swing_height (at most 1); the mean over the feet. The contact schedule of Walk These Ways
    (Margolis and Agrawal 2022) and the periodic rewards of Siekmann et al. (2021), with the swing
    scored by height rather than by the absence of contact, so that a foot barely off the ground
    earns little."""
    xp = t.xp
    stance = ((memory["phase"] + t.gait_offsets) % 1.0) < 0.5
    lift = xp.clip(s["foot_pos"][..., 2] - t.foot_height, 0.0, t.swing_height) / t.swing_height
    return xp.where(stance, s["foot_contact"] * 1.0, lift).mean(1)
