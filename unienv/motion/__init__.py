"""Motion files: a robot's reference motion at the env's control rate, checked on load.

A motion file is one `.npz` (NumPy's archive, no pickles) with these arrays, T frames of a
robot with J hinge joints and B bodies (every body but the world, in the model's order):

    fps           ()         frames per second of the arrays (the env's control rate: 50)
    source_fps    ()         frames per second of the clip it was converted from
    source        ()         where the clip comes from (a file name, a built-in clip's recipe)
    joint_names   (J,)       the model's joint names, in its order
    body_names    (B,)       the model's body names, in its order (body 0 is the root)
    joint_pos     (T, J)     rad
    joint_vel     (T, J)     rad/s
    body_pos      (T, B, 3)  world position of each body's frame, m
    body_quat     (T, B, 4)  world orientation, unit quaternions w, x, y, z (body to world)
    body_lin_vel  (T, B, 3)  world-frame velocity of each body's frame origin, m/s
    body_ang_vel  (T, B, 3)  world-frame angular velocity, rad/s

Body quantities are MuJoCo's forward kinematics of the frames (`unienv.motion.convert`), the
same quantities a backend's body views report, so a state written from frame t reads back as
frame t. Invariant: `load` returns a Motion only when every array has its shape, a float dtype
and finite values, the quaternions are unit (within 1e-3), there is at least one frame, both
frame rates are in FPS_RANGE and the motion lasts at most MAX_SECONDS; otherwise it raises one
`ArgumentError` line naming the file, the array and what is wrong, and loads nothing.

A motion file is untrusted (`unienv.utils.untrusted`): `load` reads a regular file only, a
.npz whose entries are stored as `np.savez` stores them, and only the arrays named above, each
after its header says a plain dtype and exactly the bytes its entry holds; nothing else in the
archive is read, so what it allocates is bounded by the file's own size.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from unienv.errors import ArgumentError, shown
from unienv.utils.untrusted import npz_arrays

QUAT_TOLERANCE = 1e-3  # |norm - 1| allowed of a stored quaternion
FPS_RANGE = (1.0, 1000.0)  # frames/s of a motion or a clip: key frames a second to a fast mocap's
MAX_SECONDS = 600.0  # the longest motion (s, its last frame's time): LAFAN1's longest take is 4 min
ARRAYS = {  # name: shape in frames T, joints J, bodies B
    "joint_pos": ("T", "J"),
    "joint_vel": ("T", "J"),
    "body_pos": ("T", "B", 3),
    "body_quat": ("T", "B", 4),
    "body_lin_vel": ("T", "B", 3),
    "body_ang_vel": ("T", "B", 3),
}


@dataclasses.dataclass(frozen=True)
class Motion:
    """A checked motion (see the module's docstring for each field)."""

    fps: float
    source_fps: float
    source: str
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    joint_pos: np.ndarray
    joint_vel: np.ndarray
    body_pos: np.ndarray
    body_quat: np.ndarray
    body_lin_vel: np.ndarray
    body_ang_vel: np.ndarray

    def __post_init__(self):
        check(self, "motion")

    @property
    def frames(self) -> int:
        return len(self.joint_pos)

    @property
    def seconds(self) -> float:
        """The time of the last frame (s)."""
        return (self.frames - 1) / self.fps

    def save(self, path: str | os.PathLike) -> None:
        """Write the motion as one .npz at exactly `path` (uncompressed: a few MB a minute)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["joint_names"], fields["body_names"] = (
            np.array(fields[k]) for k in ("joint_names", "body_names")
        )
        with open(path, "wb") as f:  # a file, not a name: np.savez adds .npz to a name without it
            np.savez(f, **fields)


def check(motion: Motion, where: str) -> None:
    """Raise ArgumentError naming `where`, the field and the problem unless `motion` holds a
    valid motion (module docstring)."""
    for name in ("fps", "source_fps"):
        check_fps(f"{where}: {name}", getattr(motion, name))
    for name, shape in ARRAYS.items():
        a = getattr(motion, name)
        if not isinstance(a, np.ndarray) or a.ndim != len(shape):
            given = f"shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ArgumentError(f"{where}: {name}: expected an array of {len(shape)} dimensions, got {given}")
    sizes = {"T": len(motion.joint_pos), "J": len(motion.joint_names), "B": len(motion.body_names)}
    if sizes["T"] == 0:
        raise ArgumentError(f"{where}: joint_pos: expected at least one frame, got 0")
    check_seconds(where, sizes["T"], motion.fps)
    for name, shape in ARRAYS.items():
        a = getattr(motion, name)
        expected = tuple(sizes.get(d, d) for d in shape)
        if a.shape != expected:
            dims = ", ".join(f"{d}={sizes[d]}" if d in sizes else str(d) for d in shape)
            raise ArgumentError(f"{where}: {name}: expected shape ({dims}), got {a.shape}")
        if a.dtype not in (np.float32, np.float64):
            raise ArgumentError(f"{where}: {name}: expected float32 or float64, got {a.dtype}")
        bad = ~np.isfinite(a).reshape(len(a), -1).all(1)
        if bad.any():
            raise ArgumentError(
                f"{where}: {name}: expected finite values, got NaN or inf in frame {bad.argmax()}"
            )
    norm = np.sqrt(np.square(motion.body_quat).sum(-1))
    off = np.abs(norm - 1.0) > QUAT_TOLERANCE
    if off.any():
        t, b = np.unravel_index(off.argmax(), off.shape)
        raise ArgumentError(
            f"{where}: body_quat: expected unit quaternions (w, x, y, z), got norm {norm[t, b]:.4f} "
            f"for body {shown(motion.body_names[b])} in frame {t}"
        )


def check_fps(where: str, fps) -> float:
    """fps as a float, refused unless a frame rate in FPS_RANGE."""
    low, high = FPS_RANGE
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.floating)) or not low <= fps <= high:
        raise ArgumentError(
            f"{where}: expected a frame rate in [{low:g}, {high:g}] frames/s, got {shown(fps)}"
        )
    return float(fps)


def check_seconds(where: str, frames: int, fps: float) -> None:
    """Refuse `frames` at `fps` that last longer than MAX_SECONDS (before anything is resampled)."""
    if (frames - 1) / fps > MAX_SECONDS:
        raise ArgumentError(
            f"{where}: expected at most {MAX_SECONDS:g} s of motion, got {frames} frames at {fps:g} "
            f"frames/s ({(frames - 1) / fps:.6g} s)"
        )


def load(path: str | os.PathLike, where: str = "motion file") -> Motion:
    """The motion in the .npz at `path`, checked (module docstring); one ArgumentError line naming
    `where` and the file if not."""
    arrays = npz_arrays(path, where, [f.name for f in dataclasses.fields(Motion)])
    where = f"{where}: {os.fspath(path)}"
    fields = {}
    for f in dataclasses.fields(Motion):
        a = arrays[f.name]
        if f.name in ("fps", "source_fps"):
            ok = a.shape == () and a.dtype.kind in "fiu"
            fields[f.name] = float(a) if ok else a
        elif f.name == "source":
            if a.shape != () or a.dtype.kind != "U":
                raise ArgumentError(f"{where}: source: expected a text, got {a.dtype} {a.shape}")
            fields[f.name] = str(a)
        elif f.name.endswith("_names"):
            if a.ndim != 1 or a.dtype.kind != "U":
                raise ArgumentError(f"{where}: {f.name}: expected a list of names, got {a.dtype} {a.shape}")
            fields[f.name] = tuple(a.tolist())
        else:
            fields[f.name] = a
    motion = Motion.__new__(Motion)  # checked below under the file's name, then frozen as is
    for name, value in fields.items():
        object.__setattr__(motion, name, value)
    check(motion, where)
    return motion
