"""Configuration is checked when the env is built, with messages that name the argument, what was
expected and what was given: task options, DR noise, env options, devices, sizes (mujoco; the
checks run before any engine-specific code)."""

import time

import pytest
import torch

import unienv
from unienv.backends import create
from unienv.errors import ArgumentError, UnknownNameError, install_command
from unienv.tasks.gym import cartpole


@pytest.mark.parametrize(
    "task, options, message",
    [
        ("cartpole", {"max_angle": -1}, "task.max_angle: expected a finite number > 0, got -1"),
        ("cartpole", {"rail": -1}, "task.rail: expected a finite number > 0, got -1"),
        ("cartpole", {"episode_length_s": -1}, "task.episode_length_s: expected a finite number > 0, got -1"),
        ("cartpole", {"swingup": "yes"}, "task.swingup: expected true or false, got 'yes'"),
        ("ant", {"healthy_z_range": (1.0, 0.2)}, r"task.healthy_z_range: expected \[lo, hi\] with lo < hi"),
        ("hopper", {"healthy_angle_range": [0.1, float("nan")]}, "task.healthy_angle_range: expected"),
        (
            "ant",
            {"reset_noise_scale": float("inf")},
            "task.reset_noise_scale: expected a finite number >= 0, got inf",
        ),
        ("walker2d", {"ctrl_cost_weight": float("nan")}, "task.ctrl_cost_weight: expected a finite number"),
        ("cartpole", {"episode_lenght_s": 3}, "did you mean 'episode_length_s'"),
        (
            "panda_lift",
            {"success_tolerance": -1},
            "task.success_tolerance: expected a finite number > 0, got -1",
        ),
        ("panda_lift", {"grasp_distance": 0}, "task.grasp_distance: expected a finite number > 0, got 0"),
        ("panda_place", {"place_scale": 0}, "task.place_scale: expected a finite number > 0, got 0"),
        ("panda_place", {"lifted_height": -0.01}, "task.lifted_height: expected a finite number > 0"),
        ("panda_place", {"target_box": [[0.6, 0.15], [0.5, 0.2]]}, r"task.target_box: expected \[\[x_low"),
        ("panda_place", {"target_height_range": [0.13, 0.07]}, "task.target_height_range: expected"),
        ("leap_cube_rotate", {"max_distance": -0.1}, "task.max_distance: expected a finite number > 0"),
        ("g1_tracking", {"adaptive_uniform": -0.5}, "task.adaptive_uniform: expected a finite number >= 0"),
    ],
)
def test_task_options_are_checked_before_anything_is_built(task, options, message):
    with pytest.raises((ArgumentError, UnknownNameError), match=message):
        unienv.make(task, task_options=options)


def test_an_open_upper_bound_is_a_valid_range():
    env = unienv.make("hopper", task_options={"healthy_z_range": [0.7, float("inf")]})
    assert env.task.healthy_z_range == (0.7, float("inf"))


def test_observation_noise_must_fit_the_observation_dtype():
    noise = {"param": "obs_noise", "distribution": "gaussian", "std": 1e39}
    with pytest.raises(
        ArgumentError, match="dr.noise: noise up to 8.6e\\+39 does not fit the observation's float32"
    ):
        unienv.make("cartpole", dr={"noise": noise})
    noise = {"param": "obs_noise", "distribution": "uniform", "range": [-1e3, 1e3], "bias": 1.0}
    env = unienv.make("cartpole", dr={"noise": noise}, seed=0)  # large but representable: accepted
    assert torch.isfinite(env.reset()[0]).all()


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"render_env_ids": [0.7]},
            r"render_env_ids: expected a non-empty list of int ids in \[0, 2\), got \[0.7\]",
        ),
        ({"render_env_ids": []}, "render_env_ids: expected a non-empty list"),
        ({"render_env_ids": 0}, "render_env_ids: expected a non-empty list"),
        ({"out_of_bounds_actions": "wrap"}, "out_of_bounds_actions: expected one of"),
        ({"device": "banana"}, "device: expected None, 'cpu', 'cuda' or 'cuda:<k>', got 'banana'"),
        ({"seed": 2**64}, r"seed: expected an int in \[0, 2\*\*32\) or None, got 18446744073709551616"),
    ],
)
def test_env_options_are_checked(options, message):
    with pytest.raises(ArgumentError, match=message):
        unienv.make("cartpole", num_envs=2, **options)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_on_a_machine_without_a_gpu_says_so():
    with pytest.raises(ArgumentError, match="'cuda' asks for a CUDA GPU, but this machine has none"):
        unienv.make("cartpole", device="cuda")


def test_sim_dt_must_be_a_number_not_a_bool():
    for bad in (True, "0.01", float("nan"), 0.0):
        with pytest.raises(ArgumentError, match="sim_dt: expected a positive finite number"):
            create("mujoco", cartpole.SCENE, 1, bad)


def test_a_num_envs_that_cannot_fit_is_refused_at_once_with_the_estimate():
    start = time.perf_counter()
    with pytest.raises(
        ArgumentError,
        match=r"num_envs: 1000000000 envs of ant.xml need at least [\d.]+ TiB \([\d.]+ KiB each\), more than the .* of available RAM; expected at most about \d+",
    ):
        unienv.make("ant", num_envs=10**9)
    assert time.perf_counter() - start < 5.0  # before: 42 s of allocation, then MemoryError


def test_unclear_messages_of_the_issue_are_clear():
    env = unienv.make("cartpole", num_envs=2, seed=0)
    env.reset()
    b = env.backend
    with pytest.raises(ArgumentError, match=r"state: expected a torch.Tensor \(2, \d+\), got ndarray"):
        b.set_physics_state(b.get_physics_state().numpy())
    b.set_state_tensor(
        [], torch.zeros(0, b.nq, dtype=torch.float64), torch.zeros(0, b.nv, dtype=torch.float64)
    )
    before = b.get_physics_state().clone()
    b.step_tensor(torch.zeros(2, b.nu, dtype=torch.bfloat16))  # any float dtype is converted
    assert not torch.equal(before, b.get_physics_state())
    with pytest.raises(
        ArgumentError,
        match="env_ids: expected a 1-D sequence or tensor of integer ids in \\[0, 2\\), got Tensor of complex64 ",
    ):
        b.set_state_tensor(torch.tensor([0j]), torch.zeros(1, b.nq), torch.zeros(1, b.nv))
    with pytest.raises(
        ArgumentError, match=r"got Tensor of uint64 \(1,\)$"
    ):  # dtypes named as users write them
        b.set_state_tensor(torch.tensor([0], dtype=torch.uint64), torch.zeros(1, b.nq), torch.zeros(1, b.nv))


def test_install_hints_match_a_checkout():
    """This suite runs from a checkout (pyproject.toml beside unienv/): the hint is pip install -e."""
    assert install_command("genesis").startswith("pip install -e '") and install_command("genesis").endswith(
        "[genesis]'"
    )
