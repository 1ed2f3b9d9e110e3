"""Motion files (unienv.motion): the built-in clips, CSV conversion in both quaternion orders,
slerp and velocities from MuJoCo's kinematics, a save/load round trip, and bad files, each one
line that names what is wrong, with nothing loaded or written."""

import dataclasses
import math
import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from unienv.errors import ArgumentError, UnknownNameError
from unienv.motion import Motion, clips, convert, load
from unienv.tasks.velocity.robots.g1 import G1
from unienv.tools import motion as tool


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_path(G1.build()[0])


@pytest.fixture(scope="module")
def squat(model):
    return clips.clip("squat", model)


def _csv(path, model, motion, quat="xyzw", frames=None, every=1):
    """The clip's root pose and joints as CSV rows (every `every`-th of its 50 fps frames, the
    first `frames`), in the given quaternion order."""
    pos, q = motion.body_pos[:, 0], motion.body_quat[:, 0]
    q = q if quat == "wxyz" else q[:, [1, 2, 3, 0]]
    rows = np.concatenate((pos, q, motion.joint_pos), 1)[::every][:frames]
    np.savetxt(path, rows, delimiter=",", fmt="%.17g", header="x,y,z,quat,joints")
    return rows


def test_squat_is_a_loop_with_planted_feet_at_the_control_rate(squat, model):
    assert squat.fps == 50.0 and squat.source_fps == clips.SOURCE_FPS and squat.frames == 201
    assert squat.joint_names == tuple(model.joint(j).name for j in range(1, 30))
    np.testing.assert_allclose(squat.joint_pos[0], squat.joint_pos[-1], atol=1e-12)
    feet = [squat.body_names.index(f) for f in clips.FEET]
    drift = squat.body_pos[:, feet] - squat.body_pos[:1, feet]
    assert np.abs(drift).max() < 2e-3  # planted (the root is solved per source frame)
    pelvis = squat.body_pos[:, 0, 2]
    assert pelvis.min() < pelvis[0] - 0.1  # it squats
    low, high = model.jnt_range[1:].T
    assert np.all(squat.joint_pos >= low) and np.all(squat.joint_pos <= high)


def test_walk_is_a_recorded_gait_that_travels_along_x_and_loops(model):
    """The built-in walk: 4 s at the control rate, 1.5 to 2.5 m along +x and little across, the
    pelvis at walking height, each foot lifted in turn (their heights anti-correlated), and its
    last pose near its first (five whole gait cycles), so the loop has no jump."""
    walk = clips.clip("walk", model)
    assert walk.fps == 50.0 and walk.frames == 201 and "rollout" in walk.source
    root = walk.body_pos[:, 0]
    assert 1.5 <= root[-1, 0] - root[0, 0] <= 2.5 and np.abs(root[:, 1]).max() < 0.2, root[-1]
    assert root[:, 2].min() >= 0.7 and root[:, 2].max() <= 0.85
    feet = walk.body_pos[:, [walk.body_names.index(f) for f in clips.FEET], 2]
    assert np.all(feet.max(0) - feet.min(0) > 0.05)  # each foot swings 5 cm up or more
    assert np.corrcoef(feet.T)[0, 1] < -0.3
    assert np.abs(walk.joint_pos[-1] - walk.joint_pos[0]).max() < 0.1
    with pytest.raises(UnknownNameError, match="unknown built-in motion clip .run."):
        clips.clip("run", model)


def test_velocities_are_the_derivatives_of_the_poses(squat):
    """Body velocities (MuJoCo's, of the frame origins) match central differences of the body
    positions; angular ones the differences of the orientations."""
    dt = 1.0 / squat.fps
    fd = (squat.body_pos[2:] - squat.body_pos[:-2]) / (2 * dt)
    np.testing.assert_allclose(squat.body_lin_vel[1:-1], fd, atol=0.03)
    assert np.abs(squat.body_lin_vel).max() > 0.1
    fd = (squat.joint_pos[2:] - squat.joint_pos[:-2]) / (2 * dt)
    np.testing.assert_allclose(squat.joint_vel[1:-1], fd, atol=1e-9)


def test_slerp_halves_a_turn_and_velocity_is_its_rate(model):
    """Two frames a second apart, the root turned 90 degrees about z: at 0.5 s, 45 degrees."""
    pose = model.key("default").qpos
    quats = np.array([[1.0, 0, 0, 0], [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]])
    m = convert.from_frames(model, np.tile(pose[:3], (2, 1)), quats, np.tile(pose[7:], (2, 1)), 1.0, 0.25)
    assert m.frames == 5
    np.testing.assert_allclose(m.body_quat[2, 0], [np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)], atol=1e-12)
    np.testing.assert_allclose(m.body_ang_vel[2, 0], [0, 0, np.pi / 2], atol=1e-9)


@pytest.mark.parametrize("quat", ["xyzw", "wxyz"])
def test_a_csv_converts_to_the_clip_it_was_written_from(tmp_path, model, squat, quat):
    _csv(tmp_path / "clip.csv", model, squat, quat)
    tool.main(["convert", str(tmp_path / "clip.csv"), "--robot", "g1", "--fps", "50", "--quat", quat])
    back = load(tmp_path / "clip.npz")
    assert back.frames == squat.frames and back.source_fps == 50.0
    for f in ("joint_pos", "joint_vel", "body_pos", "body_quat", "body_lin_vel", "body_ang_vel"):
        np.testing.assert_allclose(getattr(back, f), getattr(squat, f), atol=1e-9, err_msg=f)


def test_a_10_fps_csv_is_resampled_to_50(tmp_path, model, squat):
    rows = _csv(tmp_path / "clip.csv", model, squat, every=5)  # 10 fps
    tool.main(
        ["convert", str(tmp_path / "clip.csv"), "--robot", "g1", "--fps", "10", "-o", str(tmp_path / "m.npz")]
    )
    m = load(tmp_path / "m.npz")
    assert m.frames == (len(rows) - 1) * 5 + 1 and m.source_fps == 10.0
    np.testing.assert_allclose(m.joint_pos[::5], rows[:, 7:], atol=1e-12)  # the source frames kept


def test_a_saved_motion_loads_back_unchanged(tmp_path, squat):
    squat.save(tmp_path / "squat.npz")
    back = load(tmp_path / "squat.npz")
    for f in dataclasses.fields(Motion):
        a, b = getattr(back, f.name), getattr(squat, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name


# ---- bad files: one line naming what is wrong; nothing loaded, nothing written ---------


def _refused_csv(tmp_path, rows, match, fps="30", quat="xyzw"):
    path = tmp_path / "bad.csv"
    np.savetxt(path, rows, delimiter=",", fmt="%.17g")
    with pytest.raises(ArgumentError, match=match) as caught:
        tool.main(["convert", str(path), "--robot", "g1", "--fps", fps, "--quat", quat])
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
    assert not os.path.exists(tmp_path / "bad.npz")


@pytest.fixture
def rows(tmp_path, model, squat):
    return _csv(tmp_path / "good.csv", model, squat, frames=20)


def test_a_csv_with_the_wrong_joint_count_is_refused(tmp_path, rows):
    _refused_csv(tmp_path, rows[:, :-1], r"expected 36 columns \(root x y z, root quaternion xyzw, 29 joint")


def test_a_csv_with_nan_is_refused(tmp_path, rows):
    rows[7, 12] = np.nan
    _refused_csv(tmp_path, rows, "joint_pos: expected finite values, got NaN or inf in frame 7")


def test_a_layout_other_than_the_stated_one_gives_non_unit_quaternions(tmp_path, rows):
    """A file with the quaternion first (w x y z, then x y z) read as the stated layout: the
    quaternion columns hold part of the position, and the norms say so."""
    swapped = np.concatenate((rows[:, [6, 3, 4, 5]], rows[:, :3], rows[:, 7:]), 1)
    _refused_csv(
        tmp_path, swapped, r"expected unit quaternions, got norm .* in frame 0 \(is the stated", quat="wxyz"
    )


def test_a_csv_with_no_frames_or_a_zero_frame_rate_is_refused(tmp_path, rows):
    _refused_csv(tmp_path, rows[:0], "expected at least one frame, got 0")
    _refused_csv(tmp_path, rows, r"fps: expected a frame rate in \[1, 1000\] frames/s, got 0.0", fps="0")


@pytest.mark.parametrize(
    "field, value, match",
    [
        (
            "joint_pos",
            lambda m: m.joint_pos[:, :28],
            r"joint_pos: expected shape \(T=201, J=29\), got \(201, 28\)",
        ),
        (
            "body_pos",
            lambda m: np.where(np.arange(201)[:, None, None] == 9, np.nan, m.body_pos),
            "NaN or inf in frame 9",
        ),
        (
            "body_quat",
            lambda m: m.body_quat[..., [1, 2, 3, 0]] * 1.5,
            "expected unit quaternions .* got norm 1.5000",
        ),
        ("fps", lambda m: np.float64(0.0), r"fps: expected a frame rate in \[1, 1000\] frames/s, got 0.0"),
        ("joint_pos", lambda m: m.joint_pos[:0], "joint_pos: expected at least one frame, got 0"),
        (
            "joint_vel",
            lambda m: m.joint_vel.astype(np.int64),
            "joint_vel: expected float32 or float64, got int64",
        ),
    ],
)
def test_a_bad_npz_is_refused_in_one_line(tmp_path, squat, field, value, match):
    good = {f.name: getattr(squat, f.name) for f in dataclasses.fields(Motion)}
    np.savez(tmp_path / "bad.npz", **{**good, field: value(squat)})
    with pytest.raises(ArgumentError, match=match) as caught:
        load(tmp_path / "bad.npz")
    assert "\n" not in str(caught.value) and "bad.npz" in str(caught.value)


def test_the_command_line_prints_one_error_line(tmp_path):
    (tmp_path / "empty.csv").write_text("# nothing\n")
    done = subprocess.run(
        [sys.executable, "-m", "unienv", "motion", "convert", str(tmp_path / "empty.csv"), "--robot", "g1", "--fps", "30"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.strip().count("\n") == 0, done.stderr
    assert done.stderr.startswith("error: ") and "expected at least one frame, got 0" in done.stderr


@pytest.mark.parametrize("fps", [30, 100])
def test_a_motion_at_another_rate_is_resampled_to_the_control_rate(tmp_path, model, squat, fps):
    """A motion file at 30 or 100 frames/s is resampled to g1_tracking's 50 (never used as if it
    were 50): its duration and its frames at the shared times are kept."""
    from unienv.tasks.tracking.g1_tracking import G1Tracking

    pose = (squat.body_pos[:, 0], squat.body_quat[:, 0], squat.joint_pos)
    other = convert.from_frames(model, *pose, 50.0, 1 / fps, f"squat at {fps}", "squat")
    other.save(tmp_path / "other.npz")
    reference = G1Tracking(motion=str(tmp_path / "other.npz")).reference
    assert reference.fps == 50.0 and reference.source_fps == fps
    assert reference.frames == int((other.frames - 1) / fps * 50 + 1e-9) + 1
    shared = math.gcd(fps, 50)  # frames/s of the times both rates hit
    ours, theirs = reference.joint_pos[:: 50 // shared], other.joint_pos[:: fps // shared]
    np.testing.assert_allclose(ours, theirs[: len(ours)], atol=1e-12)


def test_evaluate_plays_a_policy_on_the_clip_it_was_trained_on(tmp_path, capsys):
    """`motion evaluate --policy FILE` with no --motion: the policy file's own clip (here a clip of
    our own, not the default squat), so a policy trained on one's own motion evaluates as is."""
    import torch

    import unienv
    from unienv.training.policy import save_policy

    clip = tmp_path / "mine.npz"
    assert tool.main(["clip", "arm_swing", "-o", str(clip)]) == 0
    env = unienv.make("g1_tracking", num_envs=1, task_options={"motion": str(clip)})
    n_obs, n_act = env.single_observation_space.shape[0], env.single_action_space.shape[0]
    path = str(tmp_path / "policy.safetensors")
    save_policy(
        path, torch.nn.Sequential(torch.nn.Linear(n_obs, n_act), torch.nn.Tanh()), env, backend="mujoco"
    )
    env.close()
    capsys.readouterr()
    result = tool.evaluate(path, None, num_envs=2, steps=3, seed=0)
    assert f"g1_tracking ({clip})" in capsys.readouterr().out
    assert np.isfinite(result["body_pos_error_m"])
    tool.evaluate("zero", None, num_envs=2, steps=3, seed=0)  # no policy file: the squat
    assert "g1_tracking (squat)" in capsys.readouterr().out


def _g1_policy(tmp_path, task="g1_velocity", options=None):
    """A G1 policy file whose actor outputs zero (the stance's targets): it stands about 1.3 s."""
    import torch

    import unienv
    from unienv.training.policy import save_policy

    env = unienv.make(task, num_envs=1, task_options=options or {})
    n_obs, n_act = env.single_observation_space.shape[0], env.single_action_space.shape[0]
    actor = torch.nn.Sequential(torch.nn.Linear(n_obs, n_act), torch.nn.Tanh())
    torch.nn.init.zeros_(actor[0].weight), torch.nn.init.zeros_(actor[0].bias)
    path = str(tmp_path / f"{task}.safetensors")
    save_policy(path, actor, env, backend="mujoco")
    env.close()
    return path


def test_record_writes_a_policys_rollout_as_the_motion_it_played(tmp_path, model):
    """`motion record`: the frames are the env's states from --skip on, at 50 fps, on the policy
    file's own options (here a reset without noise: the stance, then sinking as it starts to tip)."""
    policy = _g1_policy(tmp_path, options={"reset_noise_scale": 0.0})
    out = str(tmp_path / "stand.npz")
    assert tool.main(["record", policy, "--seconds", "0.4", "--skip", "0.2", "-o", out]) == 0
    m = load(out)
    assert m.frames == 21 and m.fps == 50.0 and "g1_velocity" in m.source
    import torch

    import unienv

    env = unienv.make("g1_velocity", num_envs=1, task_options={"reset_noise_scale": 0.0})
    env.reset(seed=0)
    played = []
    for _ in range(30):  # the zero action, as the file's actor gives it
        env.step(torch.zeros(1, 29))
        played.append(np.asarray(env.backend.get_state_views()["qpos"])[0, 7:].copy())
    env.close()
    np.testing.assert_allclose(m.joint_pos, played[9:], atol=1e-6)  # after step 10 (0.2 s) on
    assert not np.allclose(m.joint_pos[0], m.joint_pos[-1], atol=1e-3)  # the robot moved
    assert m.body_pos[:, 0, 2].min() > 0.5 and m.body_pos[:, 0, 2].max() < 0.8


def test_record_refuses_a_rollout_that_falls_or_a_policy_of_another_robot(tmp_path):
    policy = _g1_policy(tmp_path)
    out = tmp_path / "fall.npz"
    with pytest.raises(
        ArgumentError, match=r"the episode fell at \d\.\d+ s, before the 6 s to record; nothing written"
    ):
        tool.record(policy, 4.0, 2.0, 0, str(out))
    assert not out.exists()
    with pytest.raises(ArgumentError, match=r"--seconds: expected seconds in \[0.02, 600\], got nan"):
        tool.record(policy, float("nan"), 2.0, 0, str(out))
    with pytest.raises(ArgumentError, match="is not a G1 task"):
        tool.record("go1_trot", 1.0, 0.0, 0, str(out))
    with pytest.raises(ArgumentError, match="expected a G1 policy file"):
        tool.record("zero", 1.0, 0.0, 0, str(out))
    assert not out.exists() and os.listdir(tmp_path) == ["g1_velocity.safetensors"]
