"""The env's three execution paths, each by name: host ids with NumPy arrays (the CPU engine and a
task in NumPy), host ids with torch (the CPU engine and a torch task) and device masks (a device
backend run on the CPU: mjwarp).

Each runs the same task with `dr=default` through resets in every autoreset mode. The two host
paths compute the same physics, so their outputs agree to the last bits that NumPy's and torch's
math may differ in; the device path computes in float32 (mjwarp) and is checked for the reset
semantics the paths share: which rows reset, what DR redraws, and what carries over.
"""

import numpy as np
import pytest
import torch

import unienv
from tests.contract.conftest import DEVICE_BACKENDS, SUITE_DEVICES
from unienv import backends
from unienv.backends import BACKENDS as REGISTRY
from unienv.env import UniEnv
from unienv.env.paths import DevicePath, HostNumpyPath, HostTorchPath
from unienv.tasks import task_class

NUM_ENVS, STEPS, EPISODE = 4, 60, 7
# a device backend that builds in seconds on the CPU (mjwarp on Warp's CPU device)
DEVICE = next((name for name in DEVICE_BACKENDS if not REGISTRY[name].slow_build), None)


def torch_task(name: str, **options):
    """A shipped task computing in torch on every backend (what a user's plain-torch task does)."""
    cls = task_class(name)
    return type(f"Torch{cls.__name__}", (cls,), {"arrays": "torch"})(**options)


def make(path: str, task: str, mode: str):
    options = dict(num_envs=NUM_ENVS, seed=3, dr="default", autoreset_mode=mode, max_episode_steps=EPISODE)
    if path == "host_numpy":
        return unienv.make(task, **options)
    if path == "device_masks":
        return unienv.make(task, backend=DEVICE, device=SUITE_DEVICES[DEVICE], **options)
    the_task = torch_task(task)
    from unienv import dr as domain_randomization

    terms = domain_randomization.parse("default")
    sim = backends.create(
        "mujoco",
        the_task.scene,
        NUM_ENVS,
        the_task.sim_dt,
        randomize=domain_randomization.backend_params(terms),
    )
    return UniEnv(the_task, sim, dr=terms, seed=3, autoreset_mode=mode, max_episode_steps=EPISODE)


def rollout(env, mode: str) -> list[dict]:
    """STEPS steps of fixed actions; the DISABLED mode resets the even envs every 10 steps."""
    g = torch.Generator().manual_seed(0)
    out = []
    obs, _ = env.reset(seed=3)
    for step in range(STEPS):
        if mode == "disabled" and step % 10 == 9:
            obs, _ = env.reset(options={"reset_mask": torch.arange(NUM_ENVS) % 2 == 0})
            out.append({"obs": obs.clone()})
        a = torch.rand(NUM_ENVS, *env.single_action_space.shape, generator=g, dtype=torch.float64) * 2 - 1
        obs, reward, terminated, truncated, info = env.step(a)
        row = {
            "obs": obs,
            "reward": reward,
            "done": terminated | truncated,
            "length": env.episode_length.clone(),
        }
        row |= {f"dr.{k}": v for k, v in env.dr_params().items()}
        if "final_obs" in info:
            row["final_obs"] = info["final_obs"]
        out.append({k: v.clone() for k, v in row.items()})
    env.close()
    return out


PATHS = {"host_numpy": HostNumpyPath, "host_torch": HostTorchPath, "device_masks": DevicePath}
MODES = ("same_step", "next_step", "disabled")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", list(PATHS))
def test_each_path_resets_only_ended_envs_and_redraws_their_dr(path, mode):
    if path == "device_masks" and DEVICE is None:
        pytest.skip("no device backend that runs on the CPU is installed (mujoco-warp with CPU kernels)")
    env = make(path, "hopper", mode)
    assert type(env._path) is PATHS[path]
    rows = rollout(env, mode)
    steps = [r for r in rows if "reward" in r]
    ended = torch.stack([r["done"] for r in steps])
    assert ended.any(1).sum() >= 3, "too few episode ends to test resets"
    if mode == "disabled":
        return  # nothing resets in a step; the caller's resets are compared across paths below
    for before, after in zip(steps, steps[1:], strict=False):
        # SAME_STEP resets an env in the step that ends it, NEXT_STEP in the step after
        reset = after["done"] if mode == "same_step" else before["done"]
        assert torch.equal(after["dr.mass"][~reset], before["dr.mass"][~reset])
        assert torch.equal(after["length"][~reset], before["length"][~reset] + 1)
        assert (after["length"][reset] == 0).all()
        assert not torch.equal(after["dr.mass"][reset], before["dr.mass"][reset]) or not reset.any()
        if mode == "same_step" and reset.any():
            assert torch.isfinite(after["final_obs"][reset]).all()


@pytest.mark.parametrize("mode", MODES)
def test_the_host_paths_give_the_same_trajectories(mode):
    numpy_rows = rollout(make("host_numpy", "hopper", mode), mode)
    torch_rows = rollout(make("host_torch", "hopper", mode), mode)
    assert len(numpy_rows) == len(torch_rows)
    for a, b in zip(numpy_rows, torch_rows, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=1e-9, atol=1e-9, err_msg=k)


@pytest.mark.parametrize("path", list(PATHS))
def test_an_env_dropped_is_freed_at_once(path):
    """No reference cycle through the env, its path or its DR manager: dropping the last
    reference frees the env, and with it the engine's memory, without the garbage collector
    (a cycle made 200 make/close cycles grow by 70 MiB)."""
    import gc
    import weakref

    if path == "device_masks" and DEVICE is None:
        pytest.skip("no device backend that runs on the CPU is installed (mujoco-warp with CPU kernels)")
    gc.collect()
    gc.disable()
    try:
        env = make(path, "hopper", "same_step")
        env.reset()
        env.step(torch.zeros(NUM_ENVS, 3))
        env.close()
        alive = weakref.ref(env)
        del env
        assert alive() is None, gc.get_referrers(alive())
    finally:
        gc.enable()
