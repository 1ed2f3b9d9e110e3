"""leap_cube_rotate: the cube at rest in the grasp under a zero action on every engine, a drop
ends the episode, the yaw rate in info and the episode stats, the hand-frame observation against
MuJoCo's own sites, the object DR preset by effect and per env, no host sync on MuJoCo Warp,
Gymnasium's env checker. Few envs; one build per engine for the session."""

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import unienv
from tests.robots.test_tasks import ENGINES
from unienv.tasks.manipulation.leap_cube_rotate import CUBE_REST, GRASP_SITE, LeapCubeRotate

TASK = "leap_cube_rotate"


@pytest.fixture(scope="session")
def leap():
    """A built env per (backend, dr), closed at the end of the session."""
    built = {}

    def get(backend="mujoco", num_envs=2, dr=None):
        if (backend, num_envs, dr) not in built:
            device = "cpu" if backend in ("mjwarp", "genesis") else None
            built[backend, num_envs, dr] = unienv.make(TASK, backend=backend, num_envs=num_envs, seed=0, device=device, dr=dr)  # fmt: skip
        return built[backend, num_envs, dr]

    yield get
    for env in built.values():
        env.close()


def _put(env, cube=None, qvel=None, hand=None):
    """Every env at the "grasp" keyframe (the cube at rest in the palm), the cube's qpos rows
    replaced by `cube` (N, 7), the hand's by `hand` (16,) and qvel by `qvel` (N, nv) where
    given; returns the reading."""
    b, n = env.backend, env.num_envs
    dtype = b.get_state_views()["qpos"].dtype
    qpos = torch.as_tensor(b.info.keyframes["grasp"], dtype=dtype).repeat(n, 1)
    if hand is not None:
        qpos[:, :16] = torch.as_tensor(hand, dtype=dtype)
    if cube is not None:
        qpos[:, 16:23] = torch.as_tensor(cube, dtype=dtype)
    qvel = torch.zeros(n, b.nv, dtype=dtype) if qvel is None else torch.as_tensor(qvel, dtype=dtype)
    b.set_state_tensor(torch.arange(n), qpos.to(b.device), qvel.to(b.device))
    env.observe()
    return env.task.read(b)


def _np(x):
    return torch.as_tensor(x).cpu().numpy()


@pytest.mark.parametrize("backend", ENGINES)
def test_the_cube_rests_in_the_grasp_2_s_under_a_zero_action(leap, backend):
    """From the "grasp" keyframe, 40 zero actions (2 s): no env ends, the cube moves less than
    1 mm and turns less than 0.01 rad, and its yaw rate stays under 0.01 rad/s."""
    env = leap(backend)
    env.reset(seed=0)
    before = _put(env)
    ended, yaw = np.zeros(env.num_envs, bool), []
    for _ in range(40):
        _, _, terminated, truncated, info = env.step(torch.zeros(env.action_space.shape))
        ended |= _np(terminated | truncated)
        yaw.append(_np(info["yaw_rate"]))
    after = env.task.read(env.backend)
    assert not ended.any()
    assert np.abs(_np(after["cube_pos"]) - _np(before["cube_pos"])).max() < 1e-3
    turned = 2 * np.arccos(np.clip(np.abs((_np(after["cube_quat"]) * _np(before["cube_quat"])).sum(1)), 0, 1))
    assert turned.max() < 0.01 and np.abs(yaw).max() < 0.01


def test_a_drop_ends_the_episode_and_costs_the_drop_term(leap):
    """Env 0 keeps the cube in the palm, env 1's is below drop_height, env 2's 0.2 m beside the
    palm at its height: the step ends envs 1 and 2 (terminated, not truncated), each with the drop
    term's -100 x dt."""
    env = leap(num_envs=3)
    env.reset(seed=0)
    cube = np.tile(CUBE_REST, (3, 1))
    cube[1, 2] = env.task.drop_height - 0.05
    cube[2, 1] += 0.2
    _put(env, cube)
    _, _, terminated, truncated, info = env.step(torch.zeros(3, 16))
    assert _np(terminated).tolist() == [False, True, True] and not _np(truncated).any()
    np.testing.assert_allclose(_np(info["reward_terms"]["drop"]), [0.0, -100 * 0.05, -100 * 0.05])
    assert _np(info["final_info"]["episode_stats"]["l"]).tolist() == [0, 1, 1]


def test_yaw_rate_is_the_world_z_spin_in_info_and_episode_stats():
    """A cube spun at 2 rad/s about the world z beside the hand (max_distance 1 m, so that only
    the fall ends it) falls freely and keeps its spin (a cube's inertia is isotropic):
    info["yaw_rate"] is 2 at each step, and the episode stats' yaw_rate, the episode's mean, is
    2 when the fall ends it. The free joint's angular velocity is in the body frame: R^T (0, 0, 2)."""
    env = unienv.make(TASK, num_envs=2, seed=0, task_options={"max_distance": 1.0})
    try:
        env.reset(seed=0)
        quat = np.array([0.9238795, 0.3826834, 0.0, 0.0])  # 45 degrees about x: body z is not world z
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, quat)
        qvel = np.zeros((2, env.backend.nv))
        qvel[:, 19:22] = rot.reshape(3, 3).T @ [0.0, 0.0, 2.0]
        _put(env, np.tile([0.11, 0.25, 0.03, *quat], (2, 1)), qvel)
        yaw, steps = [], 0
        while steps < 10:
            _, _, terminated, _, info = env.step(torch.zeros(2, 16))
            yaw.append(_np(info["yaw_rate"]))
            steps += 1
            if terminated.all():
                break
        assert terminated.all() and steps >= 3  # it fell 8 cm below the start: about 0.13 s
        np.testing.assert_allclose(yaw, 2.0, rtol=1e-6)
        np.testing.assert_allclose(_np(info["final_info"]["episode_stats"]["yaw_rate"]), 2.0, rtol=1e-6)
    finally:
        env.close()


def test_observation_is_in_the_hands_frame_and_the_fingertips_are_mujocos_sites(leap):
    env = leap()
    env.reset(seed=0)
    s = _put(env)
    t, layout = env.task, env.task.observation_layout
    obs = _np(t.observe(s, env._memory))
    model = mujoco.MjModel.from_xml_path(t.scene)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key("grasp").id)
    mujoco.mj_forward(model, data)
    palm = data.site("grasp_site")
    origin, axes = palm.xpos, palm.xmat.reshape(3, 3)  # the hand's frame: the grasp site's
    np.testing.assert_allclose(origin, GRASP_SITE, atol=1e-6)  # the XML keeps 6 digits
    tips = [data.site(f"{f}_tip").xpos for f in ("th", "if", "mf", "rf")]
    np.testing.assert_allclose(
        obs[0, layout["fingertip_pos"]], ((np.array(tips) - origin) @ axes).ravel(), atol=1e-6
    )
    np.testing.assert_allclose(
        obs[0, layout["cube_pos"]], (np.array(CUBE_REST[:3]) - origin) @ axes, atol=1e-6
    )
    relative = np.zeros(4)
    mujoco.mju_mulQuat(
        relative, np.array([1, -1, -1, -1]) * data.xquat[model.body("palm").id], data.body("cube").xquat
    )
    np.testing.assert_allclose(obs[0, layout["cube_quat"]], relative * np.sign(relative[0]), atol=1e-6)
    assert np.abs(obs[:, layout["joint_pos"]]).max() < 1e-6  # the grasp pose is the default


def test_dr_preset_draws_the_cubes_size_mass_and_friction_for_exactly_the_envs_reset(leap):
    """dr=leap_cube_rotate: the cube's size, mass and friction differ per env in the engine and
    are the manager's values (one size scale for the three half sizes), the hand's masses stay the
    model's; resetting env 1 alone redraws env 1's and leaves env 0's bit for bit."""
    env = leap(dr="leap_cube_rotate")
    env.reset(seed=0)
    b = env.backend
    body, geom = b.find("body", "cube")[0], b.find("geom", "cube")[0]

    def engine():
        return _np(b.get_dr_param("body_mass")), _np(b.get_dr_param("geom_friction"))[:, geom, 0]

    def half_sizes():
        return _np(b.get_dr_param("geom_size"))[:, geom]

    size = half_sizes()
    np.testing.assert_allclose(size, np.repeat(size[:, :1], 3, 1), rtol=0)  # a cube stays a cube
    assert size[0, 0] != size[1, 0] and np.all(
        (size >= 0.95 * 0.035 - 1e-12) & (size <= 1.05 * 0.035 + 1e-12)
    )
    masses, friction = engine()
    mass, params = masses[:, body], env.dr_params()
    np.testing.assert_array_equal(mass, _np(params["cube_mass"])[:, 0])
    np.testing.assert_array_equal(friction, _np(params["cube_friction"])[:, 0])
    assert mass[0] != mass[1] and friction[0] != friction[1]
    assert np.all((mass >= 0.8 * 0.108) & (mass <= 1.2 * 0.108)) and np.all(
        (friction >= 0.15) & (friction <= 0.6)
    )
    default = np.broadcast_to(_np(b.get_dr_default("body_mass")), masses.shape)
    np.testing.assert_array_equal(np.delete(masses, body, 1), np.delete(default, body, 1))
    env.reset(options={"reset_mask": torch.tensor([False, True])})
    masses2, friction2 = engine()
    assert half_sizes()[0, 0] == size[0, 0] and half_sizes()[1, 0] != size[1, 0]
    assert masses2[0, body] == mass[0] and friction2[0] == friction[0]
    assert masses2[1, body] != mass[1] and friction2[1] != friction[1]


def test_dr_preset_shifts_the_cubes_start_position_and_nothing_else_of_the_reset(leap):
    """The same seed with and without dr=leap_cube_rotate: the cube starts where the task's reset
    puts it plus the cube_pose term's draw, within 1 cm per axis; its orientation, the hand and
    the velocities are the task's, bit for bit."""
    plain, randomized = leap(), leap(dr="leap_cube_rotate")
    plain.reset(seed=3)
    randomized.reset(seed=3)
    q0, q1 = (_np(e.backend.get_state_views()["qpos"]).copy() for e in (plain, randomized))
    shift = _np(randomized.dr_params()["cube_pose"])
    np.testing.assert_allclose(q1[:, 16:19] - q0[:, 16:19], shift, atol=1e-15)
    assert np.all(np.abs(shift) <= 0.01) and np.all(shift != 0.0) and not np.array_equal(shift[0], shift[1])
    np.testing.assert_array_equal(np.delete(q1, [16, 17, 18], 1), np.delete(q0, [16, 17, 18], 1))
    np.testing.assert_array_equal(_np(randomized.backend.get_state_views()["qvel"]), 0.0)


def test_the_cubes_mass_and_friction_change_its_physics_in_the_envs_written(leap):
    """Mass: the cube alone in the air, pushed up by 3 N for one physics step, gains (F/m - g) dt
    with m its own env's mass (twice the cube's in env 1). Friction: dropped on the open hand's
    tilted palm (the joints at 0, held there), the cube with friction 1.0 (env 0) stays on it; with 0.05 (env 1:
    the palm's 0.2 then holds, below tan 20 degrees) it slides off and falls."""
    env = leap()
    env.reset(seed=0)
    b = env.backend
    body, geom = b.find("body", "cube")[0], b.find("geom", "cube")[0]
    mass = torch.as_tensor(b.get_dr_default("body_mass"), dtype=torch.float64).clone()[None]
    mass[0, body] = 0.216
    b.set_dr_param("body_mass", [1], mass)
    _put(env, np.tile([0.3, 0.3, 0.5, 1, 0, 0, 0], (2, 1)))
    b.apply_body_wrench([body], torch.tensor([[[0.0, 0.0, 3.0]]] * 2), torch.zeros(2, 1, 3))
    b.step_tensor(torch.as_tensor(env.task.default_q).repeat(2, 1), 1)
    vz = _np(b.get_state_views()["qvel"])[:, 18]
    np.testing.assert_allclose(vz, (3.0 / np.array([0.108, 0.216]) - 9.81) * 0.01, rtol=1e-6)

    friction = np.tile(_np(b.get_dr_default("geom_friction")), (2, 1, 1))
    friction[:, geom, 0] = (1.0, 0.05)
    b.set_dr_param("geom_friction", [0, 1], torch.as_tensor(friction))
    _put(env, np.tile([0.07, 0.0, 0.05, 1, 0, 0, 0], (2, 1)), hand=np.zeros(16))
    dtype = b.get_state_views()["qpos"].dtype
    for _ in range(200):  # 2 s, the fingers held open
        b.step_tensor(torch.zeros(2, 16, dtype=dtype), 1)
    z = _np(env.task.read(b)["cube_pos"])[:, 2]
    assert z[0] > 0.02 and z[1] < env.task.drop_height
    for term in ("body_mass", "geom_friction"):  # the session's env as it was, for the tests after
        b.set_dr_param(term, [0, 1], torch.as_tensor(np.stack([_np(b.get_dr_default(term))] * 2)))


def test_single_env_passes_check_env():
    env = gym.make(unienv.tasks.gym_id(TASK))
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_actions_are_absolute_targets_around_the_grasp_pose(leap):
    env = leap()
    t = env.task
    assert isinstance(t, LeapCubeRotate) and t.dt == pytest.approx(0.05)
    ctrl = np.asarray(t.action_to_ctrl(np.eye(16, dtype=np.float32)[:2]))
    expected = np.asarray(t.default_q) + 0.6 * np.eye(16)[:2]
    np.testing.assert_allclose(ctrl, expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t.default_q), [0.8, 0, 0.8, 0.8] * 3 + [0.8, 0.8, 0.8, 0.0])
