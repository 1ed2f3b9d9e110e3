"""panda_place (panda_lift's Panda carrying its box to a target position): the box at rest stays
at rest, a scripted pick-and-place succeeds where success was False before and ends in the
episode stats, the target lies beside the box's area and above the table, Gymnasium's env
checker. Few envs, one build per engine for the session (the option checks, the mjwarp
host-sync count and the golden case are with the other tasks')."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import unienv
from tests.robots.test_tasks import _has
from unienv.tasks.manipulation.panda_lift import ARM, REST_HEIGHT

ENGINES = [
    "mujoco",
    pytest.param("mjwarp", marks=pytest.mark.skipif(not _has("mujoco_warp"), reason="the mjwarp extra")),
]
BOX = slice(ARM + 2, ARM + 5)  # the box's position in qpos


@pytest.fixture(scope="session")
def envs():
    """One 4-env panda_place per engine, closed at the end of the session."""
    built = {}

    def get(backend):
        if backend not in built:
            device = "cpu" if backend == "mjwarp" else None
            built[backend] = unienv.make("panda_place", backend=backend, num_envs=4, seed=0, device=device)
        return built[backend]

    yield get
    for env in built.values():
        env.close()


def _box(env):
    return torch.as_tensor(env.task.read(env.backend)["qpos"])[:, BOX].double()


def _obs(env, obs, block):
    return torch.as_tensor(obs)[:, env.task.observation_layout[block]].double()


@pytest.mark.parametrize("backend", ENGINES)
def test_box_at_rest_stays_at_rest_2_s_under_a_zero_action(envs, backend):
    env = envs(backend)
    env.reset(seed=1)
    start = _box(env)
    assert torch.allclose(start[:, 2], torch.tensor(REST_HEIGHT, dtype=torch.float64), atol=1e-3)
    for _ in range(round(2.0 / env.task.dt)):
        env.step(torch.zeros(env.num_envs, 4))
    assert (_box(env) - start).abs().max() < 2e-3
    speed = torch.as_tensor(env.task.read(env.backend)["qvel"])[:, ARM + 2 : ARM + 8].abs().max()
    assert speed < 0.01


def test_targets_lie_beside_the_box_area_on_both_sides_and_above_the_table(envs):
    env = envs("mujoco")
    task, targets = env.task, []
    for seed in range(8):
        obs, _ = env.reset(seed=seed)
        targets.append(_obs(env, obs, "target_pos"))
        assert torch.allclose(_obs(env, obs, "cube_to_target"), targets[-1] - _box(env))
    target = torch.cat(targets)
    (x0, y0), (x1, y1) = task.target_box
    assert torch.all((target[:, 0] >= x0) & (target[:, 0] < x1))
    assert torch.all((target[:, 1].abs() >= y0) & (target[:, 1].abs() < y1))
    assert (target[:, 1] > 0).any() and (target[:, 1] < 0).any()
    low, high = task.target_height_range
    assert torch.all((target[:, 2] >= low) & (target[:, 2] < high))
    assert low - REST_HEIGHT > task.success_tolerance  # a box left on the table never succeeds
    marker = torch.as_tensor(env.backend.get_mocap_views()[0])[:, 0].double()
    assert torch.allclose(marker, targets[-1])  # the marker shows this episode's target


def _pick_and_place(env):
    """A scripted pick-and-place through the task's own actions over one episode: over the box
    open, down, close, up, carry to the target and hold it there. Returns each step's
    info["is_success"] and |target - box| (from the observation), and the episode stats."""
    obs, _ = env.reset(seed=3)
    successes, errors, stats = [], [], None
    for t in range(env.max_episode_steps):
        rel, to_target = _obs(env, obs, "cube_to_gripper"), _obs(env, obs, "cube_to_target")
        action = torch.zeros(env.num_envs, 4, dtype=torch.float64)
        action[:, 3] = 1.0 if t < 50 else -1.0  # open, then closed from step 50
        if t < 65:  # over the box 8 cm up, down onto it once above it, held while the fingers close
            above = (t < 25) | (rel[:, :2].norm(dim=1) > 0.01)
            goal = rel + torch.where(above[:, None], torch.tensor([0.0, 0.0, 0.08]), torch.zeros(3))
            gain = 0.02
        else:  # straight up to 3 cm above the target's height, then across, gentler (no overshoot)
            goal = to_target.clone()
            if t < 80:
                goal[:, :2], goal[:, 2] = 0.0, to_target[:, 2] + 0.03
            gain = 0.05
        action[:, :3] = torch.clip(goal / gain, -1.0, 1.0)
        obs, _, _, _, info = env.step(action.float())
        successes.append(torch.as_tensor(info["is_success"]).clone())
        if "final_info" in info:
            stats = info["final_info"]["episode_stats"]
        else:
            errors.append(_obs(env, obs, "cube_to_target").norm(dim=1))
    return torch.stack(successes), torch.stack(errors), stats


def test_scripted_pick_and_place_succeeds_and_ends_in_the_episode_stats(envs):
    env = envs("mujoco")
    successes, errors, stats = _pick_and_place(env)
    assert not successes[:80].any()  # not before the box is carried
    assert torch.equal(successes[:-1], errors < env.task.success_tolerance)  # success is the criterion
    assert successes[-20:].all()  # held at the target
    assert stats is not None and stats["is_success"].all()  # the last step's, at the time limit


def test_success_is_the_distance_criterion(envs):
    env = envs("mujoco")
    env.reset(seed=3)
    task, s = env.task, env.task.read(env.backend)
    target = env._memory["target"]
    cases = (((0.0, 0.0, 0.0), True), ((0.014, 0.0, 0.014), True), ((0.0, 0.026, 0.0), False))
    for offset, expected in cases:
        s["qpos"][:, BOX] = target + np.asarray(offset)
        assert (np.asarray(task.success(s, env._memory)) == expected).all(), offset
        *_, terms = task.reward(s, s, np.zeros((4, 4)), env._memory)
        assert (np.asarray(terms["success"] > 0) == expected).all()
    s["qpos"][:, BOX] = target
    s["qpos"][:, ARM + 4] = REST_HEIGHT  # under the target, on the table: no place reward either
    *_, terms = task.reward(s, s, np.zeros((4, 4)), env._memory)
    assert not np.asarray(task.success(s, env._memory)).any() and np.all(terms["place"] == 0)


def test_single_env_passes_check_env():
    env = gym.make(unienv.tasks.gym_id("panda_place"))
    try:
        check_env(env.unwrapped, skip_render_check=True)
        env.reset(seed=0)
        *_, info = env.step(env.action_space.sample())
        assert info["is_success"] is False
    finally:
        env.close()
