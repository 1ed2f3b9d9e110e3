"""panda_lift (Menagerie's Panda and its box): the box at rest stays at rest, a scripted grasp
lifts it and succeeds, success is False until the box is at the target height, the box's
size and mass DR acts on exactly the envs asked (and collision follows the size), the engines
that run or refuse it, no host sync on MuJoCo Warp, Gymnasium's env checker. Few envs, one
build per engine for the session."""

import json
import os
import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import unienv
from tests.robots.test_tasks import _has
from unienv.errors import ArgumentError, CapabilityError
from unienv.tasks.manipulation.panda_lift import ARM, REST_HEIGHT

ENGINES = [
    "mujoco",
    pytest.param("mjwarp", marks=pytest.mark.skipif(not _has("mujoco_warp"), reason="the mjwarp extra")),
]
BOX = slice(ARM + 2, ARM + 5)  # the box's position in qpos
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def envs():
    """One 3-env panda_lift per engine, closed at the end of the session."""
    built = {}

    def get(backend):
        if backend not in built:
            device = "cpu" if backend == "mjwarp" else None
            built[backend] = unienv.make(  # 3 s episodes: the 2 s at rest within one
                "panda_lift", backend=backend, num_envs=3, seed=0, device=device, max_episode_steps=150
            )
        return built[backend]

    yield get
    for env in built.values():
        env.close()


def _box(env):
    return torch.as_tensor(env.task.read(env.backend)["qpos"])[:, BOX].double()


def _obs(env, obs, block):
    return torch.as_tensor(obs)[:, env.task.observation_layout[block]].double()


def _grasp_and_lift(env, steps=100):
    """A scripted grasp through the task's own actions: over the box open, down, close, up to
    the target height. Returns each step's info["is_success"] and |target - box height| (from the
    observation), the last observation and the ended episodes' stats."""
    obs, _ = env.reset(seed=3)
    successes, errors, stats = [], [], None
    for t in range(steps):
        rel = _obs(env, obs, "cube_to_gripper")  # box minus gripper site
        action = torch.zeros(env.num_envs, 4, dtype=torch.float64)
        action[:, 3] = 1.0 if t < 50 else -1.0  # open, then closed from step 50
        if t < 65:  # over the box 8 cm up, down onto it once above it, held while the fingers close
            above = (t < 25) | (rel[:, :2].norm(dim=1) > 0.01)
            goal = rel + torch.where(above[:, None], torch.tensor([0.0, 0.0, 0.08]), torch.zeros(3))
        else:
            goal = torch.zeros_like(rel)
            goal[:, 2] = _obs(env, obs, "height_to_target")[:, 0]
        action[:, :3] = torch.clip(goal / 0.02, -1.0, 1.0)
        obs, _, _, _, info = env.step(action.float())
        successes.append(torch.as_tensor(info["is_success"]).clone())
        errors.append(_obs(env, obs, "height_to_target")[:, 0].abs())
        if "final_info" in info:
            stats = info["final_info"]["episode_stats"]
    return torch.stack(successes), torch.stack(errors), obs, stats


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


def test_scripted_grasp_lifts_the_box_and_succeeds(envs):
    env = envs("mujoco")
    successes, errors, obs, _ = _grasp_and_lift(env)
    assert not successes[:50].any()  # on the table until the fingers close
    assert torch.equal(successes, errors < env.task.success_tolerance)  # success is the criterion
    assert successes[-1].all()  # held at the target height
    height = _box(env)[:, 2]
    assert torch.all(height > REST_HEIGHT + 0.1)
    error = _obs(env, obs, "height_to_target")[:, 0].abs()
    assert torch.all(error < env.task.success_tolerance)


def test_success_is_the_height_criterion_and_ends_in_the_episode_stats(envs):
    env = envs("mujoco")
    *_, stats = _grasp_and_lift(env, steps=env.max_episode_steps)
    assert stats is not None and stats["is_success"].all()  # the last step's, at the time limit
    env.reset(seed=3)
    task, s = env.task, env.task.read(env.backend)
    target = env._memory["target"][:, 2]
    for offset, expected in ((0.0, True), (0.019, True), (-0.019, True), (0.021, False), (-0.021, False)):
        s["qpos"][:, ARM + 4] = target + offset
        assert (np.asarray(task.success(s, env._memory)) == expected).all(), offset
    s["qpos"][:, ARM + 4] = REST_HEIGHT
    assert not np.asarray(task.success(s, env._memory)).any()


def test_a_motion_action_moves_the_gripper_that_way_and_keeps_it_pointing_down(envs):
    env = envs("mujoco")
    obs, _ = env.reset(seed=0)
    start = _obs(env, obs, "gripper_pos")
    for axis in range(3):
        env.reset(seed=0)
        action = torch.zeros(env.num_envs, 4)
        action[:, axis] = 1.0
        for _ in range(15):
            obs, *_ = env.step(action)
        moved = _obs(env, obs, "gripper_pos") - start
        along = moved[:, axis].abs()
        assert torch.all(along > 0.05) and torch.all(moved.abs().amax(1) == along)
        quat = torch.as_tensor(env.task.read(env.backend)["hand_quat"])
        down = torch.as_tensor(env.task.down)
        assert torch.all((quat * down).sum(1).abs() > np.cos(0.15 / 2))  # within 0.15 rad, moving


@pytest.mark.parametrize("backend", ENGINES)
def test_box_size_and_mass_dr_act_on_exactly_the_envs_asked(envs, backend):
    env = envs(backend)
    b = env.backend
    geom, body = int(b.find("geom", "box")[0]), int(b.find("body", "box")[0])
    size0, mass0 = b.get_dr_default("geom_size"), b.get_dr_default("body_mass")
    try:
        size, mass = size0.expand(3, *size0.shape).clone(), mass0.expand(3, *mass0.shape).clone()
        size[1, geom] *= 1.3  # env 1: a bigger box
        mass[2, body] *= 3.0  # env 2: a heavier one
        b.set_dr_param("geom_size", torch.tensor([1, 2]), size[1:])
        b.set_dr_param("body_mass", torch.tensor([2]), mass[2:])
        got_size, got_mass = b.get_dr_param("geom_size"), b.get_dr_param("body_mass")
        assert torch.allclose(got_size[:, geom], size[:, geom].float().double())
        assert torch.equal(got_size[[0, 2]], got_size[[0, 0]])  # every other geom of every env as compiled
        assert torch.allclose(got_mass[:, body], mass[:, body].float().double())
        assert torch.equal(got_mass[:2], got_mass[[0, 0]])
        # collision follows the size: the bigger box rests 30 % higher, the others where they were
        env.reset(seed=1)
        for _ in range(50):
            env.step(torch.zeros(3, 4))
        height = _box(env)[:, 2]
        assert height[0] == pytest.approx(REST_HEIGHT, abs=1e-3)
        assert height[2] == pytest.approx(REST_HEIGHT, abs=1e-3)
        assert height[1] == pytest.approx(1.3 * REST_HEIGHT, abs=1.5e-3)
        # and the mass acts: an upward push of 1.5 N lifts the 96 g box, not the 288 g one
        force = torch.zeros(3, 1, 3, dtype=b.get_state_views()["qpos"].dtype, device=b.device)
        force[:, 0, 2] = 1.5
        for _ in range(10):
            b.apply_body_wrench([body], force, torch.zeros_like(force))
            b.step_tensor(b.get_state_views()["ctrl"].clone(), 1)
        height = _box(env)[:, 2]
        assert height[0] > REST_HEIGHT + 1e-3 and height[2] < REST_HEIGHT + 1e-3
    finally:
        everyone = torch.arange(3)
        b.set_dr_param("geom_size", everyone, size0.expand(3, *size0.shape))
        b.set_dr_param("body_mass", everyone, mass0.expand(3, *mass0.shape))


def test_geom_size_of_a_mesh_or_plane_is_refused_and_changes_nothing(envs):
    b = envs("mujoco").backend
    before = b.get_dr_param("geom_size")
    size = before.clone()
    size[:, int(b.find("geom", "floor")[0]), 2] += 0.1
    with pytest.raises(ArgumentError, match="geom_size changes only box.*floor"):
        b.set_dr_param("geom_size", torch.arange(3), size)
    assert torch.equal(b.get_dr_param("geom_size"), before)


def test_the_dr_preset_randomizes_the_box_by_name():
    env = unienv.make("panda_lift", num_envs=4, seed=0, dr="panda_lift")
    try:
        env.reset()
        b = env.backend
        geom = int(b.find("geom", "box")[0])
        size = b.get_dr_param("geom_size")
        scale = size[:, geom] / b.get_dr_default("geom_size")[geom]
        assert torch.allclose(scale, scale[:, :1].expand(4, 3))  # one scale per env for its three sizes
        assert len(set(scale[:, 0].tolist())) == 4 and torch.all((scale > 0.85) & (scale < 1.15))
        others = torch.ones(size.shape[1], dtype=torch.bool)
        others[geom] = False
        assert torch.equal(size[:, others], b.get_dr_default("geom_size")[others].expand(4, -1, -1))
    finally:
        env.close()


@pytest.mark.skipif(not _has("genesis"), reason="the genesis extra")
def test_genesis_refuses_the_gravity_compensated_arm_before_building():
    with pytest.raises(CapabilityError, match="gravcomp"):
        unienv.make("panda_lift", backend="genesis", num_envs=1, device="cpu")


def test_single_env_passes_check_env():
    env = gym.make(unienv.tasks.gym_id("panda_lift"))
    try:
        check_env(env.unwrapped, skip_render_check=True)
        env.reset(seed=0)
        *_, info = env.step(env.action_space.sample())
        assert info["is_success"] is False
    finally:
        env.close()


def _run(tmp_path, *command):
    done = subprocess.run(
        [sys.executable, *command], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.skipif(not _has("rsl_rl"), reason="the train extra")
def test_the_training_commands_run_and_report_the_success_rate(tmp_path):
    """train.py's preset and examples/sac.py on panda_lift, tiny: 4 envs, a few steps each."""
    run = tmp_path / "ppo"
    tiny = ["num_envs=4", "train.iterations=1", "train.runner.num_steps_per_env=4", "train.eval_steps=100"]
    out = _run(
        tmp_path, os.path.join(ROOT, "train.py"), "train=ppo_panda_lift", *tiny, f"hydra.run.dir={run}"
    )
    assert "is_success " in out  # the eval line's mean of the episodes' is_success: the success rate
    evaluation = json.loads((run / "metrics.json").read_text())["eval"]
    assert evaluation["episodes"] == 4 and 0.0 <= evaluation["is_success_mean"] <= 1.0
    sac = [os.path.join(ROOT, "examples", "sac.py"), "--task", "panda_lift", "--num-envs", "4"]
    sac += ["--total-steps", "64", "--learning-starts", "32", "--log-every", "32", "--eval-envs", "2"]
    figures = dict(re.findall(r"(\w+) (-?[\d.]+)", _run(tmp_path, *sac).strip().splitlines()[-1]))
    assert 0.0 <= float(figures["eval_success"]) <= 1.0 and float(figures["random_success"]) == 0.0
