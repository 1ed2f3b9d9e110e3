"""Observation blocks: every task's `observe` returns exactly its blocks' total width, on
every installed backend; the layout and the space derive from the blocks; a block holds
what its name says.

The mujoco cases run by default; the other backends' are marked slow (mjwarp on Warp's
CPU device compiles its kernels per task).
"""

import gymnasium as gym
import numpy as np
import pytest
import torch

import unienv
from tests.contract.conftest import AVAILABLE, backend_options
from unienv.errors import ArgumentError, CapabilityError
from unienv.task import Task
from unienv.tasks import TASKS, task_class

# (backend, task) -> options that make a task the backend refuses by default run there
PORTABLE = {("genesis", "ant"): {"include_cfrc_ext_in_observation": False}}
CASES = [
    pytest.param(backend, name, marks=() if backend == "mujoco" else pytest.mark.slow, id=f"{backend}-{name}")
    for backend in AVAILABLE
    for name in TASKS
]


def make(name, backend="mujoco", num_envs=2, **task_options):
    options = backend_options(backend)
    return unienv.make(
        name,
        backend=backend,
        num_envs=num_envs,
        seed=0,
        device=options.pop("device", None),
        backend_options=options,
        task_options=task_options,
    )


def random_actions(env, generator):
    space = env.single_action_space
    low, high = (torch.as_tensor(x, device=env.device) for x in (space.low, space.high))
    return low + (high - low) * torch.rand(env.num_envs, len(low), generator=generator, device=env.device)


@pytest.mark.parametrize(("backend", "name"), CASES)
def test_observation_width_is_the_sum_of_the_blocks(backend, name):
    try:
        env = make(name, backend, **PORTABLE.get((backend, name), {}))
    except CapabilityError:
        pytest.skip(f"{backend} refuses {name} (tests/tasks/test_tasks.py checks why)")
    try:
        task = env.task
        blocks = task.observation_blocks()
        width = sum(blocks.values())
        assert env.single_observation_space == gym.spaces.Box(
            -np.inf, np.inf, (width,), task.observation_dtype
        )
        obs, _ = env.reset(seed=0)
        assert obs.shape == (env.num_envs, width)
        generator = torch.Generator(env.device).manual_seed(0)
        for _ in range(3):
            obs, *_ = env.step(random_actions(env, generator))
            assert obs.shape == (env.num_envs, width)
    finally:
        env.close()


def test_ant_without_cfrc_ext_observes_qpos_and_qvel_only():
    env = make("ant", include_cfrc_ext_in_observation=False)
    try:
        assert list(env.task.observation_blocks()) == ["qpos", "qvel"]
        obs, _ = env.reset(seed=0)
        assert obs.shape == (2, env.single_observation_space.shape[0])
    finally:
        env.close()


@pytest.mark.parametrize("name", list(TASKS))
def test_layout_tiles_the_observation_in_block_order(name):
    task = task_class(name)()
    blocks, layout = task.observation_blocks(), task.observation_layout
    assert list(layout) == list(blocks)
    stop = 0
    for block, cut in layout.items():
        assert (cut.start, cut.stop) == (stop, stop + blocks[block]), block
        stop = cut.stop
    assert task.single_observation_space.shape == (stop,)


def test_blocks_hold_what_their_names_say():
    """Quadruped: last_action is the action just taken, command the scaled command; v5 tasks:
    qvel is the state's (unclipped on the ant), qpos the state's without the dropped root."""
    env = make("quadruped", num_envs=4)
    try:
        layout = env.task.observation_layout
        obs, _ = env.reset(seed=0)
        action = random_actions(env, torch.Generator().manual_seed(1))
        obs, *_ = env.step(action)
        torch.testing.assert_close(obs[:, layout["last_action"]], action.to(obs.dtype), rtol=0, atol=0)
        gravity = obs[:, layout["gravity"]]
        assert torch.allclose(gravity.norm(dim=1), torch.ones(4), atol=1e-5)  # a unit vector
    finally:
        env.close()
    env = make("ant", num_envs=4)
    try:
        layout = env.task.observation_layout
        obs, _ = env.reset(seed=0)
        obs, *_ = env.step(random_actions(env, torch.Generator().manual_seed(1)))
        state = env.backend.get_state_views()
        torch.testing.assert_close(obs[:, layout["qvel"]], state["qvel"], rtol=0, atol=0)
        torch.testing.assert_close(obs[:, layout["qpos"]], state["qpos"][:, 2:], rtol=0, atol=0)
        assert obs[:, layout["cfrc_ext"]].abs().max() <= 1.0  # clipped to contact_force_range
    finally:
        env.close()


class _Declared(Task):
    """A task that sets its space as a class attribute, as a plain torch task may."""

    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (7,), np.float64)
    read = observe = reward = terminated = reset_state = None


class _SetsItsSpace(Task):
    read = observe = reward = terminated = reset_state = None

    def __init__(self, width):
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (width,), np.float32)


class _Blocks(Task):
    read = observe = reward = terminated = reset_state = None

    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def observation_blocks(self):
        return self.blocks


def test_a_declared_space_is_one_block_and_bad_widths_are_refused():
    assert _Declared().observation_layout == {"obs": slice(0, 7)}
    assert _SetsItsSpace(3).observation_layout == {"obs": slice(0, 3)}
    assert _SetsItsSpace(3).single_observation_space.shape == (3,)
    with pytest.raises(NotImplementedError, match="_Blocks: declare observation_blocks"):
        _ = Task.observation_blocks(_Blocks({}))
    assert _Blocks({"a": 2, "b": 3}).single_observation_space.shape == (5,)
    assert _Blocks({"a": 2}).single_observation_space.dtype == np.float32  # the default dtype
    for width in (0, 2.0, True, -1):
        with pytest.raises(ArgumentError, match=r"_Blocks.observation_blocks: expected a width >= 1 for 'b'"):
            _ = _Blocks({"a": 2, "b": width}).observation_layout
