"""Built-in clips of the G1. Two are made here by interpolating joint poses on the model (no motion
data set is fetched): each a loop that starts and ends at the model's "default" keyframe,
with the feet planted (the root moved so that the feet's mean position stays where it is in
the first frame), written at SOURCE_FPS and converted like a CSV clip (`convert.from_frames`).

    squat       4 s: down over 1.5 s (hips -0.4, knees +0.8, ankles -0.4 rad from the
                stance, so the shins and thighs tilt alike and the torso stays upright; the
                ankles then at 90 % of their range), 0.5 s held, up over 1.5 s, 0.5 s held
    arm_swing   4 s: both shoulders pitch +-0.6 rad in opposite phase, two swings of 2 s,
                elbows +-0.3 rad with them; legs in the stance

Each change follows a smooth (cosine) ease, so velocities are zero where a segment starts and
ends. One is recorded from a trained policy (`python -m unienv motion record`) and ships as a CSV
in this folder, converted on load like any CSV clip:

    walk        4 s: five gait cycles of the shipped g1_walk policy at 0.47 m/s, travelling
                along +x; it ends 1.9 m ahead in the pose it started in (g1_tracking carries
                each loop on from where the last one ended)
"""

from __future__ import annotations

import os

import numpy as np

from unienv.errors import unknown_name
from unienv.motion import Motion
from unienv.motion.convert import from_frames, read_csv, robot_joints

SOURCE_FPS = 30.0
FEET = ("left_ankle_roll_link", "right_ankle_roll_link")


def _ease(t):
    return 0.5 - 0.5 * np.cos(np.pi * np.clip(t, 0.0, 1.0))


def squat(t):
    """{joint name suffix: offset (rad)} at times t (s)."""
    depth = _ease(t / 1.5) - _ease((t - 2.0) / 1.5)
    return {"hip_pitch_joint": -0.4 * depth, "knee_joint": 0.8 * depth, "ankle_pitch_joint": -0.4 * depth}


def arm_swing(t):
    swing = np.sin(2 * np.pi * t / 2.0) * _ease(t / 0.5) * _ease((4.0 - t) / 0.5)
    return {
        "left_shoulder_pitch_joint": 0.6 * swing,
        "right_shoulder_pitch_joint": -0.6 * swing,
        "left_elbow_joint": 0.3 * swing,
        "right_elbow_joint": -0.3 * swing,
    }


CLIPS = {"squat": (squat, 4.0), "arm_swing": (arm_swing, 4.0)}
RECORDED = {"walk": 50.0}  # name: frames/s of <name>.csv in this folder, a trained policy's rollout
NAMES = (*CLIPS, *RECORDED)


def clip(name: str, model, dt: float = 0.02, key: str = "default") -> Motion:
    """The built-in clip `name` of `model` (a mujoco.MjModel of the G1 with keyframe `key`)."""
    import mujoco

    if name not in NAMES:
        raise unknown_name("built-in motion clip", name, NAMES)
    if name in RECORDED:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.csv")
        root_pos, root_quat, joint_pos = read_csv(path, len(robot_joints(model)), quat="wxyz")
        source = f"unienv.motion.clips.{name}: a trained policy's rollout (the CSV's header says which)"
        return from_frames(model, root_pos, root_quat, joint_pos, RECORDED[name], dt, source, name)
    offsets, duration = CLIPS[name]
    joints, data = robot_joints(model), mujoco.MjData(model)
    start = model.key(key).qpos.copy()
    feet = [model.body(f).id for f in FEET]
    times = np.arange(round(duration * SOURCE_FPS) + 1) / SOURCE_FPS
    qpos, anchor = np.tile(start, (len(times), 1)), None
    for i, t in enumerate(times):
        for suffix, value in offsets(t).items():
            qpos[i, 7:] += [value if j.endswith(suffix) else 0.0 for j in joints]
        data.qpos = qpos[i]
        mujoco.mj_kinematics(model, data)
        planted = data.xpos[feet].mean(0)
        anchor = planted if anchor is None else anchor
        qpos[i, :3] += anchor - planted
    source = f"unienv.motion.clips.{name}: joint poses interpolated on the model"
    return from_frames(model, qpos[:, :3], qpos[:, 3:7], qpos[:, 7:], SOURCE_FPS, dt, source, name)
