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
