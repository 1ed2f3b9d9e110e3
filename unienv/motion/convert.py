"""Conversion to motion files: root poses and joint positions per frame, at any frame rate,
into a `Motion` at the env's control rate, with each body's pose and velocities from MuJoCo.

The input is what retargeting tools write (LAFAN1 or AMASS retargeted to a robot): per frame,
the root body's world position (x, y, z, m), its world orientation as a quaternion, and the
robot's joint positions (rad) in the model's joint order. Accepted CSV layouts (`read_csv`),
one frame a line, comma-separated numbers, no header (a line starting with # is skipped):

    x, y, z, qx, qy, qz, qw, q_1 ... q_J      quat="xyzw" (the default: LAFAN1's, BeyondMimic's)
    x, y, z, qw, qx, qy, qz, q_1 ... q_J      quat="wxyz" (MuJoCo's)

`from_frames` resamples at `dt` (the env's control step): times 0, dt, 2 dt ... up to the
clip's last frame, positions and joints linearly and the root's orientation by slerp. Joint
and root velocities are central differences of the resampled frames (MuJoCo's
mj_differentiatePos, one-sided at the ends); each body's world pose comes from mj_kinematics and
its velocity from mj_comVel (the frame origin's, in the world frame; mj_objectVelocity would
give the COM's), as a backend's body views report them.

Input is checked before anything is computed: the CSV a regular file of at most MAX_CSV_BYTES
(`unienv.utils.untrusted`), of UTF-8 lines of at most MAX_COLUMNS numbers of NUMBER_CHARS and
MAX_ROWS frames (read no further than that, before the robot's model is loaded), the column count against the robot's joints,
finite values, unit root quaternions (a wrong stated layout shows as norms off 1), at least one
frame, a frame rate in FPS_RANGE and at most MAX_SECONDS of motion (so the resampled frames are
bounded before one is made). The result is then checked for plausibility on the model
(`plausible`): each joint within its range, no body under the ground, the root upright in most
frames. A quaternion order other than the stated one keeps the norms at 1 but turns the robot
upside down or on its side, which this check refuses.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from unienv.errors import ArgumentError, shown
from unienv.motion import FPS_RANGE, MAX_SECONDS, QUAT_TOLERANCE, Motion, check_fps, check_seconds
from unienv.utils.untrusted import regular_file

QUAT_ORDERS = ("xyzw", "wxyz")
MAX_ROWS = int(MAX_SECONDS * FPS_RANGE[1]) + 1  # frames of the longest clip at the highest rate
MAX_CSV_BYTES = 1 << 29  # 512 MiB: MAX_ROWS lines of a G1's 36 numbers, written in full precision
NUMBER_CHARS = 40  # characters a number may take in a CSV line (%.17g writes at most 24, and a comma)
MAX_COLUMNS = 256  # numbers in a CSV line: root pose and the joints of any robot read so far
UPRIGHT = 0.5  # the root is upright where its up axis is within 60 degrees of the vertical (cos)
JOINT_TOLERANCE = 0.1  # rad a joint may pass its range by (retargeting's rounding)
GROUND_TOLERANCE = 0.1  # m a body's frame may sink under the ground (z = 0)
MAX_ROOT_HEIGHT = 3.0  # m: a root higher than this is a clip in other units (centimetres)


def robot_joints(model) -> list[str]:
    """The model's hinge and slide joints in order, after its one free root joint (else an error)."""
    types = list(model.jnt_type)
    if not types or types[0] != 0 or 0 in types[1:]:
        raise ArgumentError("model: expected a robot with one free joint (its root) first, then hinges")
    return [model.joint(j).name for j in range(1, model.njnt)]


def read_csv(path: str | os.PathLike, joints: int, quat: str = "xyzw") -> tuple[np.ndarray, ...]:
    """(root_pos (n, 3), root_quat wxyz (n, 4), joint_pos (n, joints)) from a CSV in one of the
    layouts of the module's docstring; one ArgumentError line naming the file if it is not."""
    return split_rows(read_rows(path), joints, quat, os.fspath(path))


def read_rows(path: str | os.PathLike) -> np.ndarray:
    """The CSV's numbers, (frames, columns) float64: a regular file of at most MAX_CSV_BYTES of
    UTF-8 lines (comment and blank lines left out), each line at most MAX_COLUMNS x NUMBER_CHARS
    characters, at most MAX_ROWS frames, all read no further than that before a number is parsed."""
    where = os.fspath(path)
    regular_file(path, "clip", MAX_CSV_BYTES)
    longest, lines = MAX_COLUMNS * NUMBER_CHARS, []
    try:
        with open(where, encoding="utf-8") as f:
            while line := f.readline(longest + 1):
                if len(line) > longest:
                    raise ArgumentError(
                        f"{where}: line {len(lines) + 1}: expected at most {longest} characters "
                        f"({MAX_COLUMNS} comma-separated numbers), got more"
                    )
                if line.strip() and not line.lstrip().startswith("#"):
                    lines.append(line)
                if len(lines) > MAX_ROWS:
                    raise ArgumentError(f"{where}: expected at most {MAX_ROWS} frames, got more")
    except UnicodeDecodeError as e:
        raise ArgumentError(f"{where}: expected text (UTF-8), got bytes that are not ({e.reason})") from None
    try:
        with warnings.catch_warnings():  # an empty file: said by split_rows, in its error's one line
            warnings.filterwarnings("ignore", "loadtxt: input contained no data")
            return np.loadtxt(lines, delimiter=",", comments="#", ndmin=2, dtype=np.float64)
    except ValueError as e:
        raise ArgumentError(
            f"{where}: expected comma-separated numbers, {shown(str(e).splitlines()[0])}"
        ) from None


def split_rows(rows: np.ndarray, joints: int, quat: str, where: str) -> tuple[np.ndarray, ...]:
    """(root_pos, root_quat wxyz, joint_pos) of CSV rows in the layout `quat` for `joints` joints."""
    if quat not in QUAT_ORDERS:
        raise ArgumentError(f"quat: expected one of {QUAT_ORDERS}, got {quat!r}")
    width = 7 + joints
    if rows.size == 0:
        raise ArgumentError(f"{where}: expected at least one frame, got 0")
    if rows.shape[1] != width:
        raise ArgumentError(
            f"{where}: expected {width} columns (root x y z, root quaternion {quat}, {joints} joint "
            f"positions), got {rows.shape[1]}"
        )
    q = rows[:, 3:7] if quat == "wxyz" else rows[:, [6, 3, 4, 5]]
    return rows[:, :3], q, rows[:, 7:]


def from_frames(
    model,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    joint_pos: np.ndarray,
    fps: float,
    dt: float = 0.02,
    source: str = "",
    where: str = "frames",
) -> Motion:
    """The Motion of these frames (root wxyz quaternions) of `model` (a mujoco.MjModel) at
    `fps`, resampled every `dt` seconds (module docstring)."""
    joints = robot_joints(model)
    fps = check_fps(f"{where}: fps", fps)
    n = len(joint_pos)
    if n == 0:
        raise ArgumentError(f"{where}: expected at least one frame, got 0")
    check_seconds(where, n, fps)
    for name, a, width in (
        ("root_pos", root_pos, 3),
        ("root_quat", root_quat, 4),
        ("joint_pos", joint_pos, len(joints)),
    ):
        if a.shape != (n, width):
            raise ArgumentError(f"{where}: {name}: expected shape ({n}, {width}), got {a.shape}")
        bad = ~np.isfinite(a).all(1)
        if bad.any():
            raise ArgumentError(
                f"{where}: {name}: expected finite values, got NaN or inf in frame {bad.argmax()}"
            )
    norm = np.sqrt(np.square(root_quat).sum(1))
    off = np.abs(norm - 1.0) > QUAT_TOLERANCE
    if off.any():
        raise ArgumentError(
            f"{where}: root quaternion: expected unit quaternions, got norm {norm[off.argmax()]:.4f} in frame "
            f"{off.argmax()} (is the stated quaternion order or column layout the file's?)"
        )
    times = np.arange(int(np.floor((n - 1) / fps / dt + 1e-9)) + 1) * dt
    qpos = np.concatenate([*resample(root_pos, root_quat / norm[:, None], joint_pos, times * fps)], 1)
    motion = forward(model, qpos, dt, fps, source, joints)
    plausible(motion, model, where)
    return motion


def for_model(motion: Motion, model, dt: float, where: str) -> Motion:
    """A loaded motion made fit for `model` at the control step `dt`: the model's joints present
    (in any order), resampled (`from_frames`) where its frame rate is another, plausible."""
    joints = robot_joints(model)
    missing = [j for j in joints if j not in motion.joint_names]
    root = model.body(1).name
    if missing or motion.body_names[0] != root:
        raise ArgumentError(
            f"{where}: expected the robot's joints and bodies (the {root} first), missing {shown(missing)}"
        )
    if np.isclose(motion.fps * dt, 1.0, rtol=1e-9, atol=0.0):
        plausible(motion, model, where)
        return motion
    order = [motion.joint_names.index(j) for j in joints]
    root_pos, root_quat = motion.body_pos[:, 0], motion.body_quat[:, 0]
    return from_frames(
        model, root_pos, root_quat, motion.joint_pos[:, order], motion.fps, dt, motion.source, where
    )


def plausible(motion: Motion, model, where: str) -> None:
    """Refuse a motion that its robot cannot mean: a joint past its range by more than
    JOINT_TOLERANCE, a body more than GROUND_TOLERANCE under the ground, a root above
    MAX_ROOT_HEIGHT, or a root upright (UPRIGHT) in fewer than half of the frames."""
    ids = [model.joint(name).id for name in motion.joint_names]
    low, high = model.jnt_range[ids].T
    limited = model.jnt_limited[ids].astype(bool)
    q = motion.joint_pos
    out = limited & ((q < low - JOINT_TOLERANCE) | (q > high + JOINT_TOLERANCE))
    if out.any():
        t, j = np.unravel_index(out.argmax(), out.shape)
        raise ArgumentError(
            f"{where}: joint_pos: joint {motion.joint_names[j]!r} at {q[t, j]:.4g} rad in frame {t}, "
            f"outside its range [{low[j]:.4g}, {high[j]:.4g}] (are the columns in the robot's joint order, in radians?)"
        )
    z = motion.body_pos[..., 2]
    t, b = np.unravel_index(z.argmin(), z.shape)
    if z[t, b] < -GROUND_TOLERANCE:
        raise ArgumentError(
            f"{where}: body_pos: body {motion.body_names[b]!r} at height {z[t, b]:.4g} m in frame {t}, "
            f"expected above the ground (z = 0, z up)"
        )
    if z[:, 0].max() > MAX_ROOT_HEIGHT:
        raise ArgumentError(
            f"{where}: body_pos: the root at height {z[:, 0].max():.4g} m, expected under "
            f"{MAX_ROOT_HEIGHT:g} m (are the positions in metres?)"
        )
    _, x, y, _ = np.moveaxis(motion.body_quat[:, 0], -1, 0)
    upright = float(np.mean(1.0 - 2.0 * (x * x + y * y) >= UPRIGHT))  # the up axis's z in the world
    if upright < 0.5:
        raise ArgumentError(
            f"{where}: body_quat: the root is upright (its up axis within 60 degrees of the vertical) "
            f"in {upright:.0%} of the frames, expected at least half (is the quaternion order the file's?)"
        )


def resample(root_pos, root_quat, joint_pos, at):
    """Frames at fractional indices `at`: positions and joints linear, the quaternion by slerp."""
    i = np.minimum(np.floor(at).astype(int), len(joint_pos) - 1)
    j, u = np.minimum(i + 1, len(joint_pos) - 1), (at - i)[:, None]
    a, b = root_quat[i], root_quat[j]
    dot = (a * b).sum(1, keepdims=True)
    b, dot = np.where(dot < 0, -b, b), np.abs(dot)  # the shorter way round
    angle = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(angle)
    near = sin < 1e-6  # (almost) the same rotation: linear, renormalized
    wa = np.where(near, 1 - u, np.sin((1 - u) * angle) / np.where(near, 1.0, sin))
    wb = np.where(near, u, np.sin(u * angle) / np.where(near, 1.0, sin))
    quat = wa * a + wb * b
    quat /= np.sqrt(np.square(quat).sum(1, keepdims=True))
    lerp = lambda x: x[i] + u * (x[j] - x[i])  # noqa: E731
    return lerp(root_pos), quat, lerp(joint_pos)


def forward(model, qpos: np.ndarray, dt: float, source_fps: float, source: str, joints: list[str]) -> Motion:
    """The Motion of configurations qpos (T, nq) every dt seconds: velocities by central
    differences, each body's pose and velocity by MuJoCo's kinematics."""
    import mujoco

    frames, data = len(qpos), mujoco.MjData(model)
    qvel = np.zeros((frames, model.nv))
    for t in range(frames):
        lo, hi = max(t - 1, 0), min(t + 1, frames - 1)
        if hi > lo:
            mujoco.mj_differentiatePos(model, qvel[t], (hi - lo) * dt, qpos[lo], qpos[hi])
    bodies, root = model.nbody - 1, model.body_rootid[1:]
    pos, quat = np.zeros((frames, bodies, 3)), np.zeros((frames, bodies, 4))
    ang, lin = np.zeros((frames, bodies, 3)), np.zeros((frames, bodies, 3))
    for t in range(frames):
        data.qpos, data.qvel = qpos[t], qvel[t]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_comVel(model, data)
        pos[t], quat[t], ang[t] = data.xpos[1:], data.xquat[1:], data.cvel[1:, :3]
        # cvel is at the subtree COM of each body's root: the frame origin's is v + w x (p - c)
        lin[t] = data.cvel[1:, 3:] + np.cross(ang[t], pos[t] - data.subtree_com[root])
    return Motion(
        fps=1.0 / dt,
        source_fps=float(source_fps),
        source=source,
        joint_names=tuple(joints),
        body_names=tuple(model.body(b).name for b in range(1, model.nbody)),
        joint_pos=qpos[:, 7:],
        joint_vel=qvel[:, 6:],
        body_pos=pos,
        body_quat=quat,
        body_lin_vel=lin,
        body_ang_vel=ang,
    )
