"""The env's own guards: sizes with a bound, a step that raised midway, a closed env, NumPy
actions of any layout. Each refusal leaves the env's whole state as it was."""

import numpy as np
import pytest
import torch

import unienv
from tests.contract.conftest import CPU_BACKENDS, SUITE_DEVICES
from tests.hardening.test_bad_input import _tensors, assert_unchanged, snapshot
from unienv.backends import BACKENDS as REGISTRY
from unienv.errors import ArgumentError, BackendClosedError, NeedsResetError
from unienv.tasks.gym.hopper import Hopper

BACKENDS = [name for name in CPU_BACKENDS if not REGISTRY[name].slow_build]  # genesis: its own suite
DR = {
    "mass": {"param": "body_mass", "range": [0.9, 1.1], "operation": "scale"},
    "latency": {"param": "action_latency", "range": [0, 1]},
}


def make(backend, **options):
    device = SUITE_DEVICES[backend]
    return unienv.make("hopper", backend=backend, device=device, num_envs=3, seed=1, dr=DR, **options)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "options, match",
    [
        ({"max_episode_steps": 2**70}, r"max_episode_steps: expected at most 2\*\*62"),
        ({"max_episode_steps": 2**62 + 1}, r"max_episode_steps: expected at most 2\*\*62"),
        ({"task_options": {"episode_length_s": 1e300}}, r"episode_length_s=1e\+300 / dt=.*at most 2\*\*62"),
        ({"max_episode_steps": 0}, "max_episode_steps: expected a positive int"),
        ({"max_episode_steps": 5.0}, "max_episode_steps: expected a positive int"),
        ({"render_size": (0, 0)}, r"render_size: expected \(height, width\)"),
        ({"render_size": (480, -640)}, "render_size"),
        ({"render_size": (10**6, 64)}, "render_size"),
        ({"render_size": (48.0, 64)}, "render_size"),
        ({"render_size": "480x640"}, "render_size"),
    ],
)
def test_sizes_beyond_their_bound_are_refused_at_construction(backend, options, match):
    with pytest.raises(ArgumentError, match=match):
        make(backend, **options)


def test_numpy_ints_are_sizes_like_ints():
    env = make("mujoco", max_episode_steps=np.int64(7), render_size=(np.int32(48), np.int64(64)))
    assert env.max_episode_steps == 7 and type(env.max_episode_steps) is int
    env.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_actions_of_any_layout_step_as_their_contiguous_copy(backend):
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-1, 1, (3, 3))[::-1] for _ in range(4)]  # negative strides
    outputs = []
    for layout in (lambda a: a, np.ascontiguousarray, lambda a: np.asfortranarray(a)):
        env = make(backend)
        env.reset(seed=1)
        outputs.append([env.step(layout(a))[0].clone() for a in actions])
        env.close()
    for other in outputs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(outputs[0], other, strict=True))


class FlakyHopper(Hopper):
    """A hopper whose reward raises once, on its `fail_at`-th call."""

    fail_at = 3

    def reward(self, s, prev, action, memory):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == self.fail_at:
            raise ZeroDivisionError("the task's own bug")
        return super().reward(s, prev, action, memory)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_step_that_raised_midway_needs_a_full_reset(backend):
    from unienv import backends
    from unienv.env import UniEnv

    task = FlakyHopper()
    device = SUITE_DEVICES[backend]
    sim = backends.create(backend, task.scene, 3, task.sim_dt, device=device)
    env = UniEnv(task, sim, seed=1)
    env.reset()
    a = torch.full((3, 3), 0.2)
    env.step(a)
    env.step(a)
    with pytest.raises(ZeroDivisionError):
        env.step(a)  # the physics moved, the episode counters did not
    before = snapshot(env)
    with pytest.raises(NeedsResetError, match="step: an earlier step raised midway"):
        env.step(a)
    with pytest.raises(NeedsResetError, match="reset every env"):
        env.reset(options={"reset_mask": torch.tensor([True, False, False])})
    assert_unchanged(before, snapshot(env))
    obs, _ = env.reset()
    assert torch.equal(env.episode_length, torch.zeros(3, dtype=torch.int64))
    obs, reward, *_ = env.step(a)
    assert torch.isfinite(obs).all() and torch.isfinite(reward).all()
    env.close()


def _state(env) -> dict[str, torch.Tensor]:
    """What a closed env still holds: its arrays and its DR manager's (no physics to read)."""
    out: dict[str, torch.Tensor] = {}
    _tensors(env, out, "env", set())
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_closed_env_refuses_step_and_reset_before_anything_moves(backend):
    env = make(backend)
    env.reset()
    env.step(torch.zeros(3, 3))
    env.close()
    before = _state(env)
    with pytest.raises(BackendClosedError, match="step: this env is closed"):
        env.step(torch.zeros(3, 3))
    with pytest.raises(BackendClosedError, match="reset: this env is closed"):
        env.reset(seed=5)
    with pytest.raises(BackendClosedError):
        env.reset()
    assert_unchanged(before, _state(env))
