"""Two envs used from two threads at once follow the trajectories they follow alone, on every
backend that runs on the CPU here (mjwarp's lock has its own test in tests/backends/test_mjwarp.py)."""

import pytest
import torch

import unienv
from tests.contract.conftest import CPU_BACKENDS, backend_params
from tests.threads import in_two_threads

BACKENDS = backend_params(CPU_BACKENDS)
STEPS = 40


def _trajectory(env, seed, start=None):
    obs, _ = env.reset(seed=seed)
    if start is not None:
        start.wait()  # both threads step at the same moment
    out = [obs]
    for k in range(STEPS):
        obs, *_ = env.step(torch.full((env.num_envs, 1), 0.5 if k % 7 else -0.5))
        out.append(obs)
    return torch.stack(out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_envs_step_from_two_threads(backend):
    envs = [unienv.make("cartpole", backend=backend, num_envs=2, device="cpu") for _ in range(2)]
    alone = [_trajectory(env, seed) for env, seed in zip(envs, (1, 2), strict=True)]
    results = in_two_threads(lambda i, start: _trajectory(envs[i], (1, 2)[i], start))
    assert not torch.equal(alone[0], alone[1])  # the two differ, so a mix-up would show
    for i in (0, 1):
        assert torch.equal(results[i], alone[i])
    for env in envs:
        env.close()
