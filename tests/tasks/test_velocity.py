"""The legged velocity task's parts: its reward terms as free functions tested alone, terms chosen
and weighted by name (an unknown one refused in one line, null dropping one, a new one added),
what a reading holds for the chosen terms, terrain, height scan and curriculum as options."""

import types

import numpy as np
import pytest
import torch

import unienv
from unienv.errors import ArgumentError, UnknownNameError
from unienv.tasks import task_class
from unienv.tasks.velocity.terms import READS, TERMS
from unienv.utils.arrays import NUMPY

N = 5


def _context(rng):
    """A task's constants, a reading (N envs, 2 feet, 3 joints) and a memory, in NumPy."""
    t = types.SimpleNamespace(xp=NUMPY, dt=0.02, base_height_target=0.3, air_time_threshold=0.5)
    t.min_feet_distance, t.q_low, t.q_high, t.default_q = 0.15, -np.ones(3), np.ones(3), np.zeros(3)
    t.tracking_sigma, t.yaw_sigma, t.gait_offsets = 0.25, 0.5, np.array([0.0, 0.5])
    t.foot_height, t.swing_height = 0.02, 0.08
    yaw = rng.uniform(-np.pi, np.pi, N)
    rot = np.zeros((N, 3, 3))
    rot[:, 0, 0], rot[:, 1, 0], rot[:, 0, 1], rot[:, 1, 1], rot[:, 2, 2] = (
        np.cos(yaw), np.sin(yaw), -np.sin(yaw), np.cos(yaw), 1.0)  # fmt: skip
    s = {
        "q": rng.normal(size=(N, 3)),
        "torque": rng.normal(size=(N, 3)),
        "height": rng.uniform(0.2, 0.4, N),
        "base": rng.normal(size=(N, 3, 3)),
        "rot": rot,
        "foot_contact": rng.uniform(size=(N, 2)) > 0.5,
        "foot_pos": rng.normal(size=(N, 2, 3)),
        "foot_vel": rng.normal(size=(N, 2, 3)),
        "torso_gravity": rng.normal(size=(N, 3)),
        "foot_gravity": rng.normal(size=(N, 2, 3)),
    }
    memory = {
        "command": rng.normal(size=(N, 3)),
        "last_action": rng.normal(size=(N, 3)),
        "air_time": rng.uniform(0, 1, (N, 2)),
        "phase": rng.uniform(0, 1, (N, 1)),
    }
    return t, s, memory


@pytest.mark.parametrize("name", sorted(TERMS))
def test_each_term_is_a_documented_pure_function_of_arrays(name):
    t, s, memory = _context(np.random.default_rng(0))
    before = {k: np.copy(v) for k, v in {**s, **memory}.items()}
    fn = TERMS[name]
    value = fn(t, s, s, np.random.default_rng(1).normal(size=(N, 3)), memory)
    assert fn.__doc__ and value.shape == (N,) and np.isfinite(value).all()
    assert all(np.array_equal(before[k], v) for k, v in {**s, **memory}.items())  # nothing changed
    assert set(fn.reads) <= set(READS)


def test_terms_give_what_their_docstrings_say():
    t, s, memory = _context(np.random.default_rng(2))
    memory["command"][:, :2] = s["base"][:, 0, :2]  # on the command: tracking 1
    assert np.allclose(TERMS["lin_vel"](t, s, s, None, memory), 1.0)
    memory["command"][:, 2] = s["base"][:, 1, 2] + 0.5**0.5  # off by sqrt(yaw_sigma), its own kernel
    assert np.allclose(TERMS["ang_vel"](t, s, s, None, memory), np.exp(-1.0))
    s["q"] = np.clip(s["q"], -0.5, 0.5)  # inside the soft range: no limit penalty
    assert np.array_equal(TERMS["joint_limits"](t, s, s, None, memory), np.zeros(N))
    s["foot_contact"][:] = False  # nothing on the ground slips
    assert np.array_equal(TERMS["feet_slip"](t, s, s, None, memory), np.zeros(N))
    heading = s["rot"][:, :2, 0]  # the left foot 0.3 m to the right of the right one: crossed
    left = np.stack((heading[:, 1], -heading[:, 0]), 1) * 0.3
    s["foot_pos"][:, 0, :2], s["foot_pos"][:, 1, :2] = left, 0.0
    assert np.allclose(TERMS["feet_distance"](t, s, s, None, memory), 0.15 + 0.3)
    memory["phase"][:] = 0.25  # foot 0 (offset 0) stands, foot 1 (offset 0.5) swings
    s["foot_contact"][:] = (True, False)
    s["foot_pos"][:, 1, 2] = t.foot_height + t.swing_height  # the swing foot lifted all the way
    assert np.allclose(TERMS["gait"](t, s, s, None, memory), 1.0)
    s["foot_contact"][:, 0], s["foot_pos"][:, 1, 2] = False, t.foot_height + t.swing_height / 2
    assert np.allclose(TERMS["gait"](t, s, s, None, memory), 0.25)  # (0 + 0.5) / 2
    s["foot_gravity"][:] = (0.0, 0.0, -1.0)  # soles level
    assert np.array_equal(TERMS["feet_flat"](t, s, s, None, memory), np.zeros(N))
    s["foot_gravity"][:, 1] = (0.0, np.sin(0.2), -np.cos(0.2))  # the right sole rolled 0.2 rad
    assert np.allclose(TERMS["feet_flat"](t, s, s, None, memory), np.sin(0.2) ** 2)
    s["q"] = np.tile(t.default_q + np.array([0.1, -0.2, 0.0]), (N, 1))  # 0.01 + 0.04 off the stance
    assert np.allclose(TERMS["pose"](t, s, s, None, memory), 0.05)


def test_the_feet_reading_gives_each_soles_tilt():
    """feet_flat reads the feet bodies' orientation: level soles in the G1's stance (hip pitch,
    knee and ankle pitch sum to -0.006 rad), tilted by the reset noise of the joints above them."""
    options = {"reward_weights": {"feet_flat": -1.0}, "reset_noise_scale": 0.0}
    env = unienv.make("g1_velocity", num_envs=2, seed=0, task_options=options)
    try:
        env.reset()
        s = env.task.read(env.backend)
        tilt = np.arccos(np.clip(-np.asarray(s["foot_gravity"])[..., 2], -1, 1))
        assert s["foot_gravity"].shape == (2, 2, 3) and np.allclose(tilt, 0.006, atol=1e-3)
        env.task.reset_noise_scale = 0.1
        env.reset(seed=1)
        tilt = np.arccos(np.clip(-np.asarray(env.task.read(env.backend)["foot_gravity"])[..., 2], -1, 1))
        assert (tilt > 0.01).any()
    finally:
        env.close()


def test_an_unknown_term_is_refused_in_one_line_with_the_closest():
    with pytest.raises(
        UnknownNameError, match="task.reward_weights 'feet_slp'; did you mean 'feet_slip'"
    ) as e:
        task_class("go1_velocity")(reward_weights={"feet_slp": -0.1})
    assert "\n" not in str(e.value)
    with pytest.raises(ArgumentError, match=r"task.reward_weights.torques: expected a finite number or null"):
        task_class("quadruped")(reward_weights={"torques": "a lot"})
    with pytest.raises(UnknownNameError, match="task.command_ranges 'lin_vel_z'"):
        task_class("quadruped")(command_ranges={"lin_vel_z": [0, 1]})


def test_weights_by_name_drop_add_and_reweigh_terms():
    """null drops a term, a new name adds one (after the robot's), a number reweighs one; a chosen
    term's reads join the reading, and info["reward_terms"] names each term."""
    options = {"reward_weights": {"feet_air_time": None, "feet_slip": -0.5, "lin_vel": 2.0}}
    env = unienv.make("quadruped", num_envs=2, seed=0, task_options=options)
    try:
        task = env.task
        assert task.terms[-1] == "feet_slip" and "feet_air_time" not in task.terms
        assert task.reads == ("feet",) and task_class("quadruped")().reads == ()
        env.reset()
        _, reward, _, _, info = env.step(torch.zeros(2, 12))
        assert set(info["reward_terms"]) == set(task.terms)
        assert "foot_vel" in env.task.read(env.backend)
        total = sum(torch.as_tensor(v) for v in info["reward_terms"].values())
        torch.testing.assert_close(torch.as_tensor(reward), total)
    finally:
        env.close()


def test_terrain_height_scan_and_curriculum_are_options():
    """go1_velocity with the terrain option is go1_velocity_rough; height_scan=false keeps the
    terrain out of the observation, terrain_curriculum=false keeps every env on its level."""
    terrain = {"types": ["rough"], "num_levels": 3, "tile_size": 2.0}
    flat = task_class("go1_velocity")(terrain=terrain)
    rough = task_class("go1_velocity_rough")(terrain=terrain)
    assert (
        flat.observation_blocks() == rough.observation_blocks() and "height_scan" in flat.observation_layout
    )
    quadruped = task_class("quadruped")(terrain=terrain)
    assert (
        quadruped.only_positive_rewards is False and rough.only_positive_rewards is True
    )  # the ids' defaults
    blind = task_class("quadruped")(terrain=terrain, height_scan=False)
    assert "height_scan" not in blind.observation_layout
    env = unienv.make(
        "quadruped", num_envs=4, seed=0, max_episode_steps=3,
        task_options={"terrain": terrain, "terrain_curriculum": False, "max_init_level": 2},
    )  # fmt: skip
    try:
        env.reset()
        levels = np.array(env.task.curriculum.levels, copy=True)
        for _ in range(7):  # two ends of episodes
            env.step(torch.zeros(4, 12))
        assert np.array_equal(np.asarray(env.task.curriculum.levels), levels)
    finally:
        env.close()
