"""unienv.training.checkpoint's env snapshot: an env restored from it steps bit for bit as the env it was taken
from (physics with solver state, random streams, task memory, curriculum, DR), and a snapshot of
another env layout is refused."""

import pytest
import torch

import unienv
from unienv.errors import ArgumentError
from unienv.training.checkpoint import env_state, load_env_state


def actions(env, count, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (env.num_envs, *env.single_action_space.shape)
    return [torch.rand(shape, generator=g) * 2 - 1 for _ in range(count)]


@pytest.mark.parametrize(
    ("task", "expected"),
    [("cartpole", "env.dr._bound.0.random._counts"), ("quadruped_rough", "env.task.curriculum.levels")],
)
def test_a_restored_env_steps_as_the_snapshotted_one(task, expected):
    a = unienv.make(task, num_envs=4, seed=3, dr="default")
    b = unienv.make(task, num_envs=4, seed=8, dr="default")  # other streams, other DR draws
    a.reset(seed=3)
    b.reset(seed=8)
    steps = actions(a, 160)
    for x in steps[:60]:
        a.step(x)
    for x in steps[:5]:
        b.step(x)
    snapshot = env_state(a)
    assert expected in snapshot["arrays"] and "env._random._counts" in snapshot["arrays"]
    load_env_state(b, snapshot)
    ended = 0
    for x in steps[60:]:
        out_a, out_b = a.step(x), b.step(x)
        for u, v in zip(out_a[:4], out_b[:4], strict=True):
            assert torch.equal(u, v)
        ended += int(out_a[2].sum() + out_a[3].sum())
    assert ended > 0  # resets drew from the restored streams too
    for name, values in a.dr_params().items():
        assert torch.equal(values, b.dr_params()[name])
    a.close()
    b.close()


def test_a_snapshot_of_another_layout_is_refused_and_changes_nothing():
    a = unienv.make("cartpole", num_envs=4, seed=0, dr="default")
    b = unienv.make("cartpole", num_envs=4, seed=0)
    a.reset(seed=0)
    obs, _ = b.reset(seed=0)
    before = b.backend.get_physics_state().clone()
    with pytest.raises(ArgumentError, match="does not fit this env"):
        load_env_state(b, env_state(a))
    assert torch.equal(b.backend.get_physics_state(), before)
    a.close()
    b.close()
