"""The kinds registry: a new kind of term is one class and one entry in KINDS, and the
config, the manager and the env take it with no other change."""

import pytest
import torch

from tests.dr.conftest import SCENE, ContractTask
from unienv import dr as domain_randomization
from unienv.backends import DR_TERMS, create
from unienv.dr import KINDS, PARAMS, Kind, Term
from unienv.dr import spec as read
from unienv.env import UniEnv
from unienv.errors import UnknownNameError


class ActionScale(Kind):
    """Each env's actions scaled by a factor drawn at its reset."""

    name = "action_scale"
    params = ("action_scale",)
    fields = ("param", "range")

    @classmethod
    def parse(cls, name, where, spec):
        return Term(name, "action_scale", cls.name, distribution=read.distribution(where, spec))

    def bind(self, backend, task, current):
        return [0], ["factor"], torch.ones(backend.num_envs, 1, dtype=torch.float64, device=backend.device)

    def apply(self, rows):
        rows.put(self.value, self.sample(rows, 1))

    def act(self, actions, delayed):
        return actions * self.value


@pytest.fixture
def with_action_scale(monkeypatch):
    monkeypatch.setitem(KINDS, ActionScale.name, ActionScale)


def test_the_shipped_kinds_cover_every_param():
    assert list(KINDS) == ["model", "obs_noise", "action_latency", "push", "init_state"]
    assert (*DR_TERMS, "obs_noise", "action_latency", "push", "init_state") == PARAMS  # as errors list them


def test_a_registered_kind_is_parsed_bound_scheduled_and_acts(with_action_scale):
    config = {
        "scale": {"param": "action_scale", "range": [0.5, 2.0]},
        "latency": {"param": "action_latency", "range": [1, 1]},
    }
    terms = domain_randomization.parse(config)
    assert [t.kind for t in terms] == ["action_scale", "action_latency"]
    assert domain_randomization.backend_params(terms) == ()
    backend = create("mujoco", SCENE, 4, ContractTask.sim_dt)
    try:
        env = UniEnv(ContractTask(), backend, dr=terms, seed=2)
        env.reset()
        factor = env.dr_params()["scale"]
        assert env.dr.labels()["scale"] == ("factor",)
        assert bool(((factor >= 0.5) & (factor <= 2.0)).all()) and factor.unique().numel() == 4
        first, second = torch.rand(4, 2, dtype=torch.float64), torch.rand(4, 2, dtype=torch.float64)
        assert torch.equal(env.dr.actions(first), torch.zeros(4, 2, dtype=torch.float64))  # one step late
        assert torch.equal(env.dr.actions(second), first * factor)  # then scaled, in term order
        env.reset(options={"reset_mask": torch.tensor([True, False, False, False])})
        assert not torch.equal(env.dr_params()["scale"][0], factor[0])
        assert torch.equal(env.dr_params()["scale"][1:], factor[1:])
    finally:
        backend.close()


def test_an_unknown_param_lists_the_registered_kinds(with_action_scale):
    with pytest.raises(UnknownNameError, match=r"did you mean 'action_scale'"):
        domain_randomization.parse({"s": {"param": "action_scal", "range": 1.0}})
    with pytest.raises(UnknownNameError, match=r"unknown field of dr.s \(a action_scale term\) 'axes'"):
        domain_randomization.parse({"s": {"param": "action_scale", "range": 1.0, "axes": [0]}})
