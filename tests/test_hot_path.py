"""The env step on device backends reads nothing back to the host from unienv's code.

mjwarp and genesis run here on the CPU, where a host read costs nothing, so the
test counts the conversions themselves (`tests/syncs.py`): on CUDA each one
would stall the GPU queue. The step runs with cfg/dr/default.yaml (every kind
of DR term: reset-time model terms, pushes at intervals, observation noise,
latency) and with episodes short enough that envs end and reset in most steps.
"""

import pytest
import torch

import unienv
from tests.contract.conftest import DEVICE_BACKENDS, MJWARP_DEVICE, backend_params
from tests.syncs import count_host_syncs
from unienv.dr import preset

BACKENDS = backend_params(DEVICE_BACKENDS)  # built for a GPU, run here on the CPU


def device_env(backend, task, autoreset_mode="same_step", dr=True, **task_options):
    if task == "ant":
        task_options.setdefault("include_cfrc_ext_in_observation", backend != "genesis")
    config = None
    if dr:
        config = preset("default")
        config["push"]["interval"] = [2, 4]  # fire often
    return unienv.make(
        task,
        backend=backend,
        device="cpu" if backend == "mjwarp" else None,
        num_envs=6,
        seed=0,
        dr=config,
        max_episode_steps=5,
        autoreset_mode=autoreset_mode,
        task_options=task_options,
    )


def steps_without_syncs(env, steps=24):
    g = torch.Generator().manual_seed(0)
    actions = [
        torch.rand(env.num_envs, *env.single_action_space.shape, generator=g) * 2 - 1 for _ in range(steps)
    ]
    env.reset()
    for a in actions[:8]:  # warm-up: graph captures, first resets and firings
        env.step(a)
    dones = torch.zeros((), dtype=torch.int64)
    with count_host_syncs() as counts:
        for a in actions[8:]:
            _, _, terminated, truncated, _ = env.step(a)
            dones = dones + (terminated | truncated).sum()
    assert int(dones) > 0, "no env ended: the count did not cover autoresets"
    return counts


@pytest.mark.parametrize("backend", BACKENDS)
def test_ant_step_with_default_dr_makes_no_host_sync(backend):
    env = device_env(backend, "ant")
    try:
        counts = steps_without_syncs(env)
        assert not counts, f"host conversions in env.step: {counts.most_common()}"
    finally:
        env.close()


def test_ramped_dr_makes_no_host_sync():
    """Ramped terms (a push and a reset-time friction scale) count steps and scale their draws
    on the device, as the rest of DR does."""
    if not MJWARP_DEVICE:
        pytest.skip("needs mujoco_warp (the mjwarp extra)")
    config = preset("default")
    config["push"] |= {"interval": [2, 4], "ramp": 10}
    config["friction"]["ramp"] = 10
    env = unienv.make(
        "ant", backend="mjwarp", device="cpu", num_envs=6, seed=0, dr=config, max_episode_steps=5
    )
    try:
        counts = steps_without_syncs(env)
        assert not counts, f"host conversions in env.step: {counts.most_common()}"
        assert int(env.unwrapped.dr._ramped[0].age) == 24
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["next_step", "disabled"])
@pytest.mark.parametrize("task", ["cartpole", "quadruped", "reach"])
def test_other_tasks_and_modes_make_no_host_sync(task, mode):
    if not MJWARP_DEVICE:
        pytest.skip("needs mujoco_warp (the mjwarp extra)")
    env = device_env("mjwarp", task, autoreset_mode=mode, dr=task != "reach")
    try:
        counts = steps_without_syncs(env)
        assert not counts, f"host conversions in env.step: {counts.most_common()}"
    finally:
        env.close()


def test_rough_terrain_quadruped_makes_no_host_sync():
    """Height scans (MuJoCo Warp's ray casts), the curriculum at reset and DR together."""
    if not MJWARP_DEVICE:
        pytest.skip("needs mujoco_warp (the mjwarp extra)")
    terrain = {"types": ["stairs_up", "rough"], "num_levels": 2, "tile_size": 2.0}
    env = device_env("mjwarp", "quadruped_rough", terrain=terrain, max_init_level=1)
    try:
        counts = steps_without_syncs(env)
        assert not counts, f"host conversions in env.step: {counts.most_common()}"
    finally:
        env.close()
