"""Every divergence is flagged, again after the env's reset, in all three autoreset modes, on
every backend; no NaN or huge value (beyond MuJoCo's 1e10) is ever returned as an observation.

The hopper is pushed beyond MuJoCo's limit (a joint speed of 1e11) three times in a row; each
time the env must end (truncated), be flagged in info["diverged"] and, after its reset (by
autoreset, or by the test in DISABLED mode), be flagged again when it diverges again.
"""

import pytest
import torch

import unienv
from tests.contract.conftest import AVAILABLE, SUITE_DEVICES, backend_params

BACKENDS = backend_params(AVAILABLE)


@pytest.mark.parametrize("mode", ["same_step", "next_step", "disabled"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_divergence_is_flagged_and_never_observed(backend, mode):
    device = SUITE_DEVICES[backend]
    options = {"integrator": "euler"} if backend == "genesis" else {}
    env = unienv.make(
        "hopper",
        backend=backend,
        device=device,
        num_envs=3,
        seed=0,
        autoreset_mode=mode,
        backend_options=options,
    )
    try:
        env.reset()
        actions = torch.zeros(3, 3, device=env.device)
        for blow_up in range(3):
            views = env.backend.get_state_views()
            qpos, qvel = views["qpos"][[1]].clone(), views["qvel"][[1]].clone()
            qvel[0, 3] = 1e11  # the thigh joint: beyond MuJoCo's limit of 1e10
            env.backend.set_state_tensor(torch.tensor([1]), qpos, qvel)
            env.observe()
            obs, reward, terminated, truncated, info = env.step(actions)
            assert info["_diverged"].tolist() == [False, True, False], blow_up
            assert bool(truncated[1]) and float(reward[1]) == 0.0
            assert torch.isfinite(obs).all() and float(obs.abs().max()) < 1e10, blow_up
            # the env's reset: SAME_STEP did it in this step; NEXT_STEP does it in the next one;
            # DISABLED waits for ours. The next blow-up follows it at once.
            if mode == "next_step":
                obs, *_ = env.step(actions)
            elif mode == "disabled":
                obs, _ = env.reset(options={"reset_mask": torch.tensor([False, True, False])})
            assert torch.isfinite(obs).all() and float(obs.abs().max()) < 1e10, blow_up
    finally:
        env.close()


@pytest.mark.skipif("mjwarp" not in AVAILABLE, reason="the mjwarp extra")
def test_a_diverged_robot_on_terrain_is_flagged_and_its_height_scan_indexes_nothing():
    """On MuJoCo Warp a diverged world keeps its NaN state until the env resets it, and the
    task reads it first: the rough quadruped's height scan must look up no heightfield cell
    from its NaN base position. The env ends and flags that env, hands out no NaN (observation,
    reward, reward terms) and the other env steps on as it would have."""
    terrain = {"types": ["rough"], "num_levels": 2, "tile_size": 2.0}
    make = dict(backend="mjwarp", device="cpu", num_envs=2, seed=0, task_options={"terrain": terrain})
    env, twin = unienv.make("quadruped_rough", **make), unienv.make("quadruped_rough", **make)
    try:
        env.reset(seed=0)
        twin.reset(seed=0)
        env.backend.get_state_views()["qpos"][1, :3] = float("nan")  # env 1's base position, in place
        actions = torch.zeros(2, 12)
        obs, reward, terminated, truncated, info = env.step(actions)
        assert info["_diverged"].tolist() == [False, True] and bool(truncated[1])
        assert torch.isfinite(obs).all() and float(reward[1]) == 0.0
        assert all(torch.isfinite(term).all() for term in info["reward_terms"].values())
        expected, *_ = twin.step(actions)
        torch.testing.assert_close(obs[0], expected[0], rtol=0, atol=0)
    finally:
        env.close()
        twin.close()
