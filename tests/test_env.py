"""UniEnv: Gymnasium's vector API, autoreset modes, seeding, refusals, NumPy form."""

import cProfile
import os
import pstats
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import unienv
from tests.contract.conftest import MJWARP_DEVICE
from unienv.backends import create
from unienv.env import UniEnv
from unienv.env.forms import step_one, steps_as_one
from unienv.errors import ArgumentError
from unienv.tasks.gym.hopper import Hopper


def random_actions(env, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.rand(env.num_envs, *env.single_action_space.shape, generator=g) * 2 - 1 for _ in range(steps)
    ]


@pytest.mark.parametrize("task", ["cartpole", "ant"])
def test_single_env_passes_check_env(task):
    env = gym.make(unienv.tasks.gym_id(task))
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("task, steps", [("cartpole", 120), ("ant", 60), ("quadruped", 60)])
def test_sync_vector_env_of_single_envs_matches_next_step(task, steps):
    n = 3
    vec = unienv.make(task, num_envs=n, autoreset_mode=AutoresetMode.NEXT_STEP, max_episode_steps=40)
    sync = SyncVectorEnv(
        [lambda: unienv.make_single(task, max_episode_steps=40) for _ in range(n)],
        autoreset_mode=AutoresetMode.NEXT_STEP,
    )
    obs_v, _ = vec.reset(seed=7)
    obs_s, _ = sync.reset(seed=7)
    np.testing.assert_array_equal(obs_v.numpy(), obs_s)
    resets = 0
    for actions in random_actions(vec, steps):
        obs_v, rew_v, term_v, trunc_v, _ = vec.step(actions)
        obs_s, rew_s, term_s, trunc_s, _ = sync.step(actions.numpy())
        np.testing.assert_array_equal(obs_v.numpy(), obs_s)
        np.testing.assert_array_equal(rew_v.numpy(), rew_s)
        np.testing.assert_array_equal(term_v.numpy(), term_s)
        np.testing.assert_array_equal(trunc_v.numpy(), trunc_s)
        resets += int((term_v | trunc_v).sum())
    assert resets > 0  # the comparison covered autoresets
    vec.close()
    sync.close()


@pytest.mark.parametrize(
    "task", ["hopper", "inverted_double_pendulum", "dmc_cheetah_run", "dmc_walker_walk", "panda_lift"]
)
def test_the_single_envs_own_step_gives_the_vector_steps_outputs(task):
    """gymnasium.make's env steps by its one-env step (no episode sums, no autoreset), which
    must hand out what the vector env's step gives at one env, bit for bit, through episode
    ends and resets: a task with terminations, one with MuJoCo fields, DMC tasks reading
    sensors (one substep and ten), one with a control hook and a goal."""
    single = unienv.make_single(task, max_episode_steps=30)
    vector = unienv.make(task, num_envs=1, autoreset_mode=AutoresetMode.DISABLED, max_episode_steps=30)
    assert single._step.func is step_one and steps_as_one(vector)
    np.testing.assert_array_equal(single.reset(seed=3)[0], vector.reset(seed=3)[0][0].numpy())
    rng, ends = np.random.default_rng(0), 0
    space = single.action_space
    for _ in range(70):
        action = rng.uniform(space.low, space.high).astype(space.dtype)
        obs, reward, terminated, truncated, info = single.step(action)
        obs_v, reward_v, terminated_v, truncated_v, info_v = vector.step(torch.from_numpy(action[None]))
        np.testing.assert_array_equal(obs, obs_v[0].numpy())
        assert (reward, terminated, truncated) == (reward_v.item(), terminated_v.item(), truncated_v.item())
        assert {k: v for k, v in info.items() if k != "is_success"} == {
            k: v.item() for k, v in info_v["reward_terms"].items()
        }
        assert info.get("is_success") == (info_v["is_success"].item() if "is_success" in info_v else None)
        if terminated or truncated:
            ends += 1
            np.testing.assert_array_equal(single.reset()[0], vector.reset()[0][0].numpy())
    assert ends >= 2  # the comparison went through resets
    single.close()
    vector.close()


def test_next_step_restarts_are_not_stepped_and_score_nothing():
    """NEXT_STEP: the step that resets an env steps only the others (the engine is asked for
    their ids alone), and the reset env's reward and every reward term are 0."""
    env = unienv.make("hopper", num_envs=3, seed=0, autoreset_mode="next_step", max_episode_steps=5)
    env.reset()
    stepped = []
    step = env.backend.step_unchecked
    env.backend.step_unchecked = lambda ctrl, n, ids=None: (stepped.append(ids), step(ctrl, n, ids))
    actions = torch.full((3, 3), 0.5)
    env.step(actions)
    env.episode_length[0] = 4
    _, _, _, truncated, _ = env.step(actions)
    assert truncated.tolist() == [True, False, False] and stepped == [None, None]
    _, reward, _, truncated, info = env.step(actions)
    assert stepped[-1].tolist() == [1, 2] and not truncated.any()
    assert reward[0] == 0 and all(t[0] == 0 and t[1] != 0 for t in info["reward_terms"].values())
    env.close()


def test_same_seed_same_trajectory_bit_for_bit():
    def trajectory(seed):
        env = unienv.make("ant", num_envs=4)
        obs, _ = env.reset(seed=seed)
        out = [obs]
        for a in random_actions(env, 30):
            out.append(env.step(a)[0])
        env.close()
        return torch.stack(out)

    a, b, c = trajectory(3), trajectory(3), trajectory(4)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_same_step_autoreset_reports_final_obs_and_episode_stats():
    env = unienv.make("cartpole", num_envs=4, seed=0)
    env.reset()
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    push = torch.ones(4, 1)  # full force: the pole falls within a second
    lengths = torch.zeros(4, dtype=torch.int64)
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(push)
        lengths += 1
        if "final_obs" in info:
            break
    done = info["_final_obs"]
    assert done.any() and torch.equal(done, terminated | truncated)
    assert torch.equal(info["_final_info"], done)
    episode = info["final_info"]["episode_stats"]
    assert torch.equal(episode["l"][done], lengths[done])
    assert torch.allclose(episode["r"][done], (lengths[done] - 1).double())  # +1 per upright step
    final = info["final_obs"][done]
    assert (final[:, 2].abs() > torch.sin(torch.tensor(0.2)) - 1e-6).all()  # terminal: pole past 0.2 rad
    assert (obs[done][:, 2].abs() < 0.06).all()  # returned obs: the next episode's first


def test_disabled_autoreset_and_reset_mask():
    env = unienv.make("cartpole", num_envs=3, autoreset_mode="disabled", seed=1)
    env.reset()
    for _ in range(10):
        env.step(torch.ones(3, 1))
    state = env.backend.get_physics_state().clone()
    mask = torch.tensor([False, True, False])
    obs, _ = env.reset(options={"reset_mask": mask})
    after = env.backend.get_physics_state()
    assert torch.equal(after[~mask], state[~mask])
    assert float(after[1, 0]) == 0.0  # env 1 starts over
    with pytest.raises(ArgumentError, match="reset_mask"):
        env.reset(options={"reset_mask": torch.tensor([1, 0, 1])})
    with pytest.raises(ArgumentError, match="options"):
        env.reset(options={"reset_mas": mask})


def test_truncation_at_max_episode_steps():
    env = unienv.make("ant", num_envs=2, max_episode_steps=5, seed=0)
    env.reset()
    for _ in range(5):
        _, _, terminated, truncated, info = env.step(torch.zeros(2, 8))
    assert truncated.all() and not terminated.any()
    assert torch.equal(info["final_info"]["episode_stats"]["l"], torch.tensor([5, 5]))


@pytest.mark.parametrize(
    "actions, match",
    [
        (torch.zeros(2, 7), "shape"),
        (torch.zeros(3, 8), "shape"),
        (torch.zeros(2, 8, dtype=torch.int64), "float"),
        ([[0.0] * 8] * 2, "tensor or array"),
        (torch.full((2, 8), float("nan")), "NaN"),
        (np.zeros((2, 8), object), "float array"),
        (np.zeros((2, 8, 1)), "shape"),
    ],
)
def test_step_refuses_bad_actions_and_changes_nothing(actions, match):
    env = unienv.make("ant", num_envs=2, seed=0)
    env.reset()
    before = env.backend.get_physics_state().clone()
    with pytest.raises(ArgumentError, match=match):
        env.step(actions)
    assert torch.equal(env.backend.get_physics_state(), before)


def test_actions_of_every_float_dtype_step_as_their_float64_values():
    """Tensors and arrays in any float dtype (bfloat16, which NumPy lacks, included) give the
    step that their values in float64 give."""
    values = torch.tensor([[0.5, -0.25, 0.125, 1.0, -1.0, 0.0, 0.75, -0.5]] * 2)
    results = []
    for actions in (
        values.double(),
        values.to(torch.bfloat16),
        values.half(),
        values.numpy().astype(np.float16),
        values.numpy().astype(np.longdouble),
        values.clone().requires_grad_(),
    ):
        env = unienv.make("ant", num_envs=2, seed=0)
        env.reset(seed=1)
        results.append(env.step(actions))
    for obs, reward, *_ in results[1:]:
        assert torch.equal(obs, results[0][0]) and torch.equal(reward, results[0][1])


def test_nonfinite_actions_can_be_zeroed_and_reported():
    env = unienv.make("ant", num_envs=2, seed=0, nonfinite_actions="zero")
    env.reset()
    actions = torch.zeros(2, 8)
    actions[1, 3] = float("inf")
    obs, *_, info = env.step(actions)
    assert info["_nonfinite_action"].tolist() == [False, True]
    assert torch.isfinite(obs).all()


def test_diverged_env_is_reset_and_flagged():
    env = unienv.make("ant", num_envs=2, seed=0)
    env.reset()
    s = env.backend.get_state_views()
    qpos, qvel = s["qpos"].clone(), s["qvel"].clone()
    qvel[1] = 1e9  # under MuJoCo's limit (1e10) now, over it within the step: MuJoCo resets the env
    env.backend.set_state_tensor(torch.tensor([1]), qpos[[1]], qvel[[1]])
    obs, reward, terminated, truncated, info = env.step(torch.zeros(2, 8))
    assert info["_diverged"].tolist() == [False, True]
    assert truncated[1] and torch.isfinite(obs).all()
    assert info["_final_obs"][1]


@pytest.mark.skipif(not MJWARP_DEVICE, reason="needs mujoco_warp (the mjwarp extra)")
@pytest.mark.parametrize("mode", ["next_step", "disabled"])
def test_device_backend_masks_a_diverged_env_while_another_resets(mode):
    """A NaN state on mjwarp (no host reads in the step): the diverged env's observation is
    zeros and it is flagged, whatever another env's reset does in the same step; the action
    rows that are not finite are zeroed and flagged, and raise at the next reset()."""
    env = unienv.make(
        "hopper",
        backend="mjwarp",
        device=MJWARP_DEVICE,
        num_envs=3,
        seed=0,
        autoreset_mode=mode,
        max_episode_steps=3,
    )
    env.reset()
    actions = torch.zeros(3, 3)
    env.step(actions)
    env.episode_length[0] = 2
    _, _, _, truncated, _ = env.step(actions)  # env 0 ends: with NEXT_STEP it resets next step
    assert truncated.tolist() == [True, False, False]
    s = env.backend.get_state_views()
    qpos, qvel = s["qpos"].clone(), s["qvel"].clone()
    qvel[1] = float("nan")
    mask = torch.tensor([False, True, False], device=env.device)
    env.backend.set_state_tensor_mask(mask, qpos, qvel)
    bad = actions.clone()
    bad[2, 0] = float("inf")
    obs, reward, terminated, truncated, info = env.step(bad)
    assert info["_diverged"].tolist() == [False, True, False]
    assert torch.equal(obs[1], torch.zeros_like(obs[1])) and reward[1] == 0 and truncated[1]
    assert torch.isfinite(obs).all()
    assert info["_nonfinite_action"].tolist() == [False, False, True]
    with pytest.raises(ArgumentError, match="NaN or inf in an earlier step"):
        env.reset()
    env.close()


class FaultyHopper(Hopper):
    """Hopper with one bug: a NaN ctrl when any action is above 0.5 ("ctrl"), or reset states
    that are short a column ("shape") or hold an inf ("inf")."""

    def __init__(self, bug: str):
        super().__init__()
        self.bug = bug

    def action_to_ctrl(self, action):
        ctrl = super().action_to_ctrl(action)
        return np.where((action > 0.5).any(1, keepdims=True), np.nan, ctrl) if self.bug == "ctrl" else ctrl

    def reset_state(self, env_ids, rng):
        qpos, qvel = super().reset_state(env_ids, rng)
        if self.bug == "shape":
            return qpos, qvel[:, 1:]
        if self.bug == "inf":
            qpos[-1, 2] = np.inf
        return qpos, qvel


def test_task_that_gives_bad_ctrl_or_reset_state_is_refused_naming_it():
    """The CPU engine's env passes its task's ctrl and reset states to the backend past the
    contract's checks: a task's bug is still refused, named, before the physics sees it."""
    env = UniEnv(FaultyHopper("ctrl"), create("mujoco", Hopper.scene, 3, Hopper.sim_dt), seed=0)
    env.reset()
    before = env.backend.get_physics_state().clone()
    actions = torch.zeros(3, 3)
    actions[1, 2] = 0.75
    with pytest.raises(ArgumentError, match=r"ctrl: FaultyHopper.action_to_ctrl gave NaN or inf"):
        env.step(actions)
    assert torch.equal(env.backend.get_physics_state(), before)
    env.step(actions * 0.5)  # the same env steps on with good ctrl
    for bug, match in (
        ("shape", r"qvel: FaultyHopper.reset_state gave shape \(3, 5\), expected \(3, 6\)"),
        ("inf", r"qpos: FaultyHopper.reset_state gave NaN or inf"),
    ):
        env = UniEnv(FaultyHopper(bug), create("mujoco", Hopper.scene, 3, Hopper.sim_dt), seed=0)
        before = env.backend.get_physics_state().clone()
        with pytest.raises(ArgumentError, match=match):
            env.reset()
        assert torch.equal(env.backend.get_physics_state(), before)


def test_constructor_refusals():
    with pytest.raises(ArgumentError, match="autoreset_mode"):
        unienv.make("cartpole", autoreset_mode="sometimes")
    with pytest.raises(ArgumentError, match="max_episode_steps"):
        unienv.make("cartpole", max_episode_steps=0)
    with pytest.raises(ArgumentError, match="device"):
        unienv.make("cartpole", device="cuda")
    with pytest.raises(KeyError, match="'cartpole'"):
        unienv.make("cartpol")


def test_numpy_form_and_gymnasium_wrappers():
    env = gym.wrappers.vector.RecordEpisodeStatistics(
        unienv.numpy_env(unienv.make("cartpole", num_envs=2, seed=0))
    )
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, np.ndarray) and obs.shape == (2, 5) and obs.dtype == np.float32
    ended = 0
    for _ in range(150):
        obs, reward, terminated, truncated, info = env.step(np.ones((2, 1), np.float32))
        assert isinstance(reward, np.ndarray) and isinstance(terminated, np.ndarray)
        if "episode" in info:
            ended += int(info["_episode"].sum())
    assert ended > 0


def assert_same_outputs(numpy_out, torch_out, where):
    """NumPy outputs equal the torch env's bit for bit, through the tuple and nested info dicts
    (but episodes' wall-clock time, `t`)."""
    if where.endswith("['t']"):
        return
    if isinstance(torch_out, tuple):
        for i, (a, b) in enumerate(zip(numpy_out, torch_out, strict=True)):
            assert_same_outputs(a, b, f"{where}[{i}]")
    elif isinstance(torch_out, dict):
        assert numpy_out.keys() == torch_out.keys(), where
        for k in torch_out:
            assert_same_outputs(numpy_out[k], torch_out[k], f"{where}[{k!r}]")
    elif isinstance(torch_out, torch.Tensor):
        assert isinstance(numpy_out, np.ndarray), where
        np.testing.assert_array_equal(numpy_out, torch_out.numpy(), err_msg=where)
    else:
        assert numpy_out == torch_out, where


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
@pytest.mark.parametrize("task", ["inverted_double_pendulum", "quadruped"])
def test_the_numpy_form_steps_as_the_torch_env_without_torch_on_the_cpu_engine(task, mode):
    """numpy_env steps the env in its own arrays (NumPy on the CPU engine): outputs, infos
    and ended episodes' final observations equal the torch env's, and at one env the step
    calls no torch at all (each call costs a few microseconds inside a NumPy step)."""
    envs = [unienv.make(task, num_envs=3, seed=4, max_episode_steps=6, autoreset_mode=mode) for _ in range(2)]
    numpy_form, torch_form = unienv.numpy_env(envs[0]), envs[1]
    obs, _ = numpy_form.reset(seed=4)
    np.testing.assert_array_equal(obs, torch_form.reset(seed=4)[0].numpy())
    ended = 0
    for t, a in enumerate(random_actions(torch_form, 14)):
        out = numpy_form.step(a.numpy())
        assert_same_outputs(out, torch_form.step(a), f"step {t}")
        ended += int((out[2] | out[3]).sum())
    assert ended > 0, "no episode ended: final observations not compared"
    single = unienv.numpy_env(unienv.make(task, num_envs=1, seed=0, max_episode_steps=6, autoreset_mode=mode))
    single.reset(seed=0)
    actions = [a[:1].numpy() for a in random_actions(torch_form, 14)]
    single.step(actions[0])  # first reads bind outputs and find ids
    profile = cProfile.Profile()
    profile.runcall(lambda: [single.step(a) for a in actions])
    calls = [f"{file}:{name}" for file, _, name in pstats.Stats(profile).stats]
    assert [c for c in calls if "torch" in c] == []


def test_make_vec_and_render():
    env = gym.make_vec(
        "unienv/Cartpole-v0", num_envs=2, vectorization_mode="vector_entry_point", render_mode="rgb_array"
    )
    env.reset(seed=0)
    frames = env.render()
    assert len(frames) == 2  # one per env by default, as Gymnasium's vector RecordVideo expects
    for frame in frames:
        assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8
        assert frame.std() > 10  # a scene, not a blank image
    env.close()


def test_renders_headless_even_when_mujoco_was_imported_first():
    """MuJoCo picks GLFW when imported first with MUJOCO_GL unset; with no display unienv uses EGL."""
    code = (
        "import mujoco, unienv\n"
        "env = unienv.make('cartpole', num_envs=1, render_mode='rgb_array')\n"
        "env.reset(seed=0)\n"
        "(frame,) = env.render()\n"
        "print(frame.shape, frame.std() > 10)\n"
    )
    environ = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "PYOPENGL_PLATFORM")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(480, 640, 3) True"


@pytest.mark.parametrize(
    "task",
    [
        "inverted_pendulum",
        "inverted_double_pendulum",
        "cartpole",
        "half_cheetah",
        "reacher",
        "quadruped",
        "dmc_finger_turn_easy",
        "reach",
    ],
)
@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_one_envs_reset_draws_are_the_general_paths(task, mode, monkeypatch):
    """At one env the resets draw through OneEnvSampler (Python ints): episodes, autoresets and
    resets by seed give the general NumPy draws' observations bit for bit."""
    import unienv.utils.random as random_module

    def run():
        env = unienv.make(task, num_envs=1, autoreset_mode=mode, max_episode_steps=7)
        out = [env.reset(seed=5)[0]]
        for i, action in enumerate(random_actions(env, 30)):
            out.append(env.step(action)[0])
            if i == 20:
                out.append(env.reset()[0])
        env.close()
        return b"".join(x.numpy().tobytes() for x in out)

    fast = run()
    monkeypatch.setattr(random_module, "OneEnvSampler", random_module.NumpySampler)
    assert run() == fast
