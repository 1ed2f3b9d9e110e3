"""g1_tracking: a kinematic replay of the reference (its states written each step) tracks it
exactly and earns the most reward on every engine that runs the task; the adaptive start
sampler counts failures into their bins and draws from them; a motion of another robot is
refused. One backend per engine for the module (a G1 compile on Warp's CPU device is slow)."""

import numpy as np
import pytest
import torch

from tests.robots.test_tasks import ENGINES
from unienv import backends
from unienv.errors import ArgumentError
from unienv.motion import clips
from unienv.tasks.tracking.g1_tracking import SIGMAS, WEIGHTS, G1Tracking
from unienv.utils.random import EnvRandom

N = 2


@pytest.fixture(scope="module")
def built():
    """(task, backend) for an engine and task options: one backend per engine, a task each."""
    engines, tasks = {}, {}

    def get(engine, **options):
        key = (engine, tuple(sorted(options.items())))
        if key not in tasks:
            task = G1Tracking(reset_noise_scale=0.0, **options)
            if engine not in engines:
                device = "cpu" if engine != "mujoco" else None
                engines[engine] = backends.create(
                    engine, task.scene, num_envs=N, sim_dt=task.sim_dt, device=device
                )
            task.setup(engines[engine])
            tasks[key] = task, engines[engine]
        return tasks[key]

    yield get
    for backend in engines.values():
        backend.close()


def _start(task, backend):
    """A reset through the task's own functions: (memory, reading) of N envs at start phases."""
    xp, rng = (
        task.xp,
        EnvRandom(N, "cpu").for_envs(np.arange(N) if task.xp.name == "numpy" else torch.arange(N)),
    )
    qpos, qvel, memory = task.reset_episode(xp.asarray(np.arange(N)), rng)
    backend.set_state_tensor(torch.arange(N), torch.as_tensor(qpos), torch.as_tensor(qvel))
    return memory, task.read(backend)


@pytest.mark.parametrize("motion", ["squat", "arm_swing"])
@pytest.mark.parametrize("engine", [e for e in ENGINES if getattr(e, "values", (e,))[0] != "genesis"])
def test_kinematic_replay_tracks_exactly_and_earns_the_most_reward(built, engine, motion):
    """Each step the state is written from the frame the task scores (set_state, no physics):
    every tracking error is 0 (to the backend's float precision), every tracking term its full
    weight x dt, the penalties 0, no env ends, over 1.2 loops of the clip (its wrap included)."""
    task, backend = built(engine, motion=motion)
    memory, s = _start(task, backend)
    full = np.array([task.reward_weights[k] * task.dt for k in task.terms[:6]])
    tolerance = 1e-20 if task.dtype in (np.float64, torch.float64) else 1e-9
    zero = task.xp.zeros((N, 29), task.dtype)
    for _ in range(round(1.2 * len(task.ref_q))):
        f = task.frame(memory)
        backend.set_state_tensor(
            torch.arange(N), torch.as_tensor(task.ref_qpos[f]), torch.as_tensor(task.ref_qvel[f])
        )
        prev, s = s, task.read(backend)
        errors = np.asarray(torch.as_tensor(task.errors(s, memory)))
        assert errors.max() < tolerance, errors.max(0)
        total, terms = task.reward(s, prev, zero, memory)
        got = np.stack([np.asarray(torch.as_tensor(terms[k])) for k in task.terms], 1)
        np.testing.assert_allclose(got[:, :6], np.broadcast_to(full, (N, 6)), rtol=1e-6)
        assert np.all(got[:, 6:] == 0.0)
        np.testing.assert_allclose(np.asarray(torch.as_tensor(total)), full.sum(), rtol=1e-6)
        assert not np.asarray(torch.as_tensor(task.terminated(s, memory))).any()
        memory = task.remember(s, zero, memory)


def test_a_displaced_robot_loses_reward_and_ends(built):
    """The same replay with the robot 0.1 m to the side: the anchor term falls to its exp, the
    aligned body terms stay full (they move with the anchor); 0.3 m down ends the episode."""
    task, backend = built("mujoco", motion="squat")
    memory, _ = _start(task, backend)
    qpos = np.copy(task.ref_qpos[task.frame(memory)])
    qpos[:, 1] += 0.1
    backend.set_state_tensor(
        torch.arange(N), torch.as_tensor(qpos), torch.as_tensor(task.ref_qvel[task.frame(memory)])
    )
    s = task.read(backend)
    _, terms = task.reward(s, s, np.zeros((N, 29)), memory)
    expected = task.reward_weights["anchor_pos"] * task.dt * np.exp(-(0.1**2) / SIGMAS["anchor_pos"] ** 2)
    np.testing.assert_allclose(terms["anchor_pos"], expected, rtol=1e-9)
    np.testing.assert_allclose(terms["body_pos"], task.reward_weights["body_pos"] * task.dt, rtol=1e-9)
    assert not task.terminated(s, memory).any()
    qpos[:, 2] -= 0.3
    backend.set_state_tensor(
        torch.arange(N), torch.as_tensor(qpos), torch.as_tensor(task.ref_qvel[task.frame(memory)])
    )
    assert task.terminated(task.read(backend), memory).all()


def test_adaptive_sampling_counts_failures_in_their_bin_and_starts_there(built):
    task, _ = built("mujoco", motion="squat")
    assert task.bins == 5  # one a second of the 4 s clip, and one more (BeyondMimic's count)
    saved = task.failures
    try:
        task.failures = np.zeros(task.bins)
        frame = np.array([125.0, 125.0])  # after its step: the episodes ended at frame 124 (bin 3)
        steps = np.array([10.0, task.max_episode_steps])  # env 1 ran out of time: no failure
        task.on_reset(np.array([True, True]), {}, {"frame": frame, "steps": steps, "last_action": None})
        assert np.flatnonzero(task.failures).tolist() == [3]
        assert task.failures[3] == pytest.approx(task.adaptive_alpha)
        task.failures = np.array([0.0, 0.0, 0.0, 1.0, 0.0])  # bin 3 failing: most starts there
        rng = EnvRandom(1000, "cpu").for_envs(np.arange(1000))
        qpos, _, memory = task.reset_episode(np.arange(1000), rng)
        starts = memory["frame"] - 1
        in_bin = np.floor(starts * task.bins / (len(task.ref_q) - 1)).astype(int)
        share = np.bincount(in_bin, minlength=task.bins) / 1000
        uniform = task.adaptive_uniform / task.bins / (1 + task.adaptive_uniform)
        np.testing.assert_allclose(share, [uniform] * 3 + [1 - 4 * uniform, uniform], atol=0.02)
        np.testing.assert_allclose(qpos, task.ref_qpos[starts.astype(int)])  # the robot at its frame
    finally:
        task.failures = saved


def test_future_frames_add_a_block_of_joint_targets(built):
    task, backend = built("mujoco", motion="arm_swing", future_frames=2)
    layout = task.observation_layout
    assert layout["future_joint_pos"].stop - layout["future_joint_pos"].start == 58
    memory, s = _start(task, backend)
    obs = task.observe(s, memory)
    f = task.frame(memory)
    np.testing.assert_allclose(
        obs[:, layout["future_joint_pos"]][:, 29:], task.ref_q[(f + 2) % len(task.ref_q)] - task.default_q
    )


def test_a_motion_of_another_robot_is_refused(tmp_path, built):
    task, backend = built("mujoco", motion="squat")
    other = clips.clip("squat", __import__("mujoco").MjModel.from_xml_path(task.scene))
    renamed = {**other.__dict__, "joint_names": tuple(n.replace("knee", "kn") for n in other.joint_names)}
    type(other)(**renamed).save(tmp_path / "other.npz")
    with pytest.raises(
        ArgumentError,
        match=r"task.motion: .*other.npz.* expected the robot's joints and bodies .*, missing \['left_knee_joint', 'right_knee_joint'\]",
    ):
        G1Tracking(motion=str(tmp_path / "other.npz")).setup(backend)


@pytest.mark.parametrize(
    "options, match",
    [
        (
            {"future_frames": -1},
            r"task.future_frames: expected a whole number of frames in \[0, 250\], got -1",
        ),
        (
            {"future_frames": 1.5},
            r"task.future_frames: expected a whole number of frames in \[0, 250\], got 1.5",
        ),
        (
            {"adaptive_uniform": 0.0},
            r"task.adaptive_uniform, task.adaptive_alpha: expected > 0 and in \[0, 1\]",
        ),
        ({"motion": "squats"}, r"built-in motion clip|file not found: .squats."),
        (
            {"reward_weights": {"body_position": 1.0}},
            r"task.reward_weights: expected terms of .*got \['body_position'\]",
        ),
    ],
)
def test_bad_options_are_refused_at_construction(options, match):
    assert G1Tracking(reward_weights={"body_pos": 2.0}).reward_weights == {**WEIGHTS, "body_pos": 2.0}
    with pytest.raises((ArgumentError, FileNotFoundError), match=match):
        G1Tracking(**options)


def test_a_reset_leaves_no_state_on_the_task(built):
    """A reset's start frames go to the memory it returns (reset_episode) and nowhere else: the
    task's attributes are those it had (a checkpoint saves the task's arrays: only the start bins'
    failures live across resets)."""
    task, backend = built("mujoco", motion="squat")
    before = set(vars(task))
    _start(task, backend)
    assert set(vars(task)) == before


def test_videos_draw_the_reference_as_a_translucent_ghost(built):
    """The renderer adds the moving bodies at the ghost's pose in light blue over what is behind."""
    from unienv.render import Renderer
    from unienv.render.pool import GHOST_RGBA

    task, backend = built("mujoco", motion="squat")
    renderer = Renderer(task.scene, width=160, height=120, camera=task.camera)
    try:
        qpos = np.asarray(backend.info.keyframes["default"])[None]
        ghost = np.copy(qpos)
        ghost[0, 1] += 0.6  # beside the robot
        plain, drawn = renderer.render_rows(qpos), renderer.render_rows(qpos, ghost=ghost)
        changed = np.abs(drawn.astype(int) - plain).sum(-1) > 30
        assert changed.mean() > 0.01  # a robot's worth of pixels
        colour = drawn[changed].mean(0)
        assert colour[2] > colour[0] and 0.0 < GHOST_RGBA[3] < 1.0  # blue over the floor, translucent
    finally:
        renderer.close()


def test_a_clip_that_moves_goes_on_from_where_it_ended(tmp_path, built):
    """A walking clip loops on from its end, not back to its start: a 2 s clip of the stance
    gliding forward at 0.5 m/s while turning at 0.3 rad/s, replayed where the task places it,
    tracks with no error across each wrap, its anchor's path continuous (no step longer than the
    clip's own), and each wrap turns it by the clip's 0.6 rad."""
    from unienv.motion.convert import from_frames

    model = __import__("mujoco").MjModel.from_xml_path(G1Tracking().scene)
    t = np.arange(101) / 50.0
    yaw = 0.3 * t
    root = np.stack((0.5 * np.sin(yaw) / 0.3, 0.5 * (1 - np.cos(yaw)) / 0.3, np.full_like(t, 0.76)), 1)
    quat = np.stack((np.cos(yaw / 2), 0 * t, 0 * t, np.sin(yaw / 2)), 1)
    joints = np.tile(model.key("default").qpos[7:], (len(t), 1))
    path = str(tmp_path / "glide.npz")
    from_frames(model, root, quat, joints, 50.0).save(path)
    task, backend = built("mujoco", motion=path)
    memory, s = _start(task, backend)
    zero, anchors, wraps = task.xp.zeros((N, 29), task.dtype), [], np.zeros(N)
    for _ in range(round(2.5 * len(task.ref_q))):
        qpos = np.copy(task.ref_qpos[task.frame(memory)])
        qpos[:, :3], qpos[:, 3:7] = task.in_world(memory["origin"], qpos[:, :3], qpos[:, 3:7])
        backend.set_state_tensor(
            torch.arange(N), torch.as_tensor(qpos), torch.as_tensor(task.ref_qvel[task.frame(memory)])
        )
        s = task.read(backend)
        assert np.asarray(task.errors(s, memory))[:, :2].max() < 1e-20  # the anchor where the clip says
        anchors.append(np.asarray(s["pos"])[:, 7, :2].copy())
        memory = task.remember(s, zero, memory)
        wraps += np.asarray(memory["frame"]) == 0
    steps = np.linalg.norm(np.diff(anchors, axis=0), axis=-1)
    assert steps.max() < 0.5 * 0.02 * 1.5  # at most the clip's own speed, with margin: no jump back
    assert (wraps >= 2).all()
    np.testing.assert_allclose(memory["origin"][:, 2], wraps * 0.6, atol=1e-9)  # 0.6 rad a loop
