"""Observation noise on named observation blocks (`blocks:`), beside column indices."""

import pytest
import torch

from tests.dr.conftest import SCENE, ContractTask, state
from unienv import dr as domain_randomization
from unienv.backends import create
from unienv.env import UniEnv
from unienv.errors import ArgumentError

NOISE = {"param": "obs_noise", "range": [-0.1, 0.1], "bias": 0.05}


class BlockTask(ContractTask):
    """The contract task with its observation [qpos, qvel] named as two blocks."""

    @property
    def observation_layout(self):
        return {"qpos": slice(0, 9), "qvel": slice(9, 17)}


class NoBlocks(ContractTask):
    """A task that names no observation blocks."""

    observation_layout = None


@pytest.fixture
def block_env():
    made = []

    def make(config, task=None, seed=0):
        terms = domain_randomization.parse(config)
        randomize = domain_randomization.backend_params(terms)
        backend = create("mujoco", SCENE, 3, ContractTask.sim_dt, randomize=randomize)
        made.append(backend)
        env = UniEnv(task or BlockTask(), backend, dr=terms, seed=seed)
        env.reset()
        return env

    yield make
    for backend in made:
        backend.close()


def test_noise_on_a_block_changes_only_its_columns(block_env):
    env = block_env({"n": {**NOISE, "blocks": ["qvel"]}})
    assert env.dr.labels()["n"] == tuple(f"qvel[{k}]" for k in range(8))
    obs, *_ = env.step(torch.ones(3, 2))
    qpos, qvel = state(env)
    assert torch.equal(obs[:, :9], qpos)
    noise = obs[:, 9:] - qvel
    assert bool((noise != 0).all()) and float(noise.abs().max()) <= 0.15 + 1e-12


def test_a_block_draws_what_its_columns_by_index_draw(block_env):
    by_block = block_env({"n": {**NOISE, "blocks": "qvel"}}, seed=4)  # one name as a string
    by_index = block_env({"n": {**NOISE, "indices": [9, 17]}}, seed=4)
    for _ in range(3):
        obs_block, *_ = by_block.step(torch.ones(3, 2))
        obs_index, *_ = by_index.step(torch.ones(3, 2))
        assert torch.equal(obs_block, obs_index)
    assert torch.equal(by_block.dr_params()["n"], by_index.dr_params()["n"])
    assert by_index.dr.labels()["n"] == tuple(f"obs[{i}]" for i in range(9, 17))


def test_blocks_take_the_observation_order(block_env):
    env = block_env({"n": {**NOISE, "blocks": ["qvel", "qpos"]}})
    labels = env.dr.labels()["n"]
    assert labels[:9] == tuple(f"qpos[{k}]" for k in range(9)) and labels[9:] == tuple(
        f"qvel[{k}]" for k in range(8)
    )


def test_an_unknown_block_is_refused_with_the_closest_names(block_env):
    with pytest.raises(ArgumentError, match=r"observation block in dr.n.blocks 'qvell'; did you mean 'qvel'"):
        block_env({"n": {**NOISE, "blocks": ["qvell"]}})
    with pytest.raises(ArgumentError, match=r"dr.n.blocks: task 'contract' names no observation blocks"):
        block_env({"n": {**NOISE, "blocks": ["qvel"]}}, task=NoBlocks())


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"blocks": ["qvel"], "indices": [0, 3]}, r"dr.n: expected blocks or indices, not both"),
        ({"blocks": ["qvel", "qvel"]}, r"dr.n.blocks: expected distinct block names"),
        ({"blocks": [1]}, r"dr.n.blocks: expected a name, or a list of names"),
        ({"blocks": []}, r"dr.n.blocks: expected a name, or a list of names"),
    ],
)
def test_bad_blocks_are_refused_by_the_config_alone(fields, match):
    with pytest.raises(ArgumentError, match=match):
        domain_randomization.parse({"n": {**NOISE, **fields}})


def test_a_block_and_indices_may_not_overlap(block_env):
    with pytest.raises(
        ArgumentError, match=r"dr.b: observation entry 'obs\[10\]' is already written by dr.a"
    ):
        block_env({"a": {**NOISE, "blocks": ["qvel"]}, "b": {**NOISE, "indices": [10, 12]}})
