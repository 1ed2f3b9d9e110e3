"""check_backend passes on every backend this machine runs, and catches backends that break the
contract: subclasses of the mujoco backend, each with one deliberate bug."""

import re

import pytest
import torch

from tests.contract.conftest import AVAILABLE, SCENE, SIM_DT, backend_params, create_backend
from unienv.backends import DR_TERMS, check_backend
from unienv.backends.mujoco import MujocoBackend
from unienv.errors import ArgumentError, ContractError


@pytest.mark.parametrize("name", backend_params(AVAILABLE))
def test_check_backend_passes_on_every_installed_backend(name):
    terms = list(create_backend(name, 2).get_dr_capabilities())
    backend = create_backend(name, 3, randomize=terms)
    check_backend(backend)
    assert backend.closed  # the lifecycle check closes it


class WritesEveryRow(MujocoBackend):
    """set_state_tensor of some envs writes the first row's state into all of them."""

    def _set_state(self, ids, qpos, qvel):
        n = self.num_envs
        super()._set_state(torch.arange(n), qpos[:1].expand(n, -1), qvel[:1].expand(n, -1))


class DefaultsFollowWrites(MujocoBackend):
    """get_dr_default returns env 0's current (randomized) values."""

    def get_dr_default(self, term):
        super().get_dr_default(term)  # its checks
        return self.get_dr_param(term, [0])[0]


class RefusedCallStillWrites(MujocoBackend):
    """set_state_tensor moves every env's clock before checking its arguments."""

    def set_state_tensor(self, env_ids, qpos, qvel):
        self.get_state_views()["time"].add_(1.0)
        super().set_state_tensor(env_ids, qpos, qvel)
        self.get_state_views()["time"].sub_(1.0)


class StaleAfterWrite(MujocoBackend):
    """Body views after a state write describe the state before it."""

    def _set_state(self, ids, qpos, qvel):
        super()._set_state(ids, qpos, qvel)
        self._stale[:] = False  # forgets that the written rows need mj_forward


class ClosesTwice(MujocoBackend):
    """A second close() releases the engine again, and fails."""

    def close(self):
        if self._closed:
            raise RuntimeError("already closed")
        super().close()


@pytest.mark.parametrize(
    "cls, check",
    [
        (WritesEveryRow, "set state (set_state_tensor): rows [0, 1], not selected, changed"),
        (DefaultsFollowWrites, "DR: body_mass: get_dr_default returned"),
        (RefusedCallStillWrites, "bad input: set_state_tensor with an id out of range raised, but changed"),
        (StaleAfterWrite, "set state (set_state_tensor_mask): body positions right after the write"),
        (ClosesTwice, "close: a second close() raised RuntimeError"),
    ],
)
def test_check_backend_names_the_broken_invariant(cls, check):
    backend = cls(SCENE, 3, SIM_DT, randomize=list(DR_TERMS))
    with pytest.raises(ContractError, match="^" + re.escape(f"check_backend, {check}")):
        check_backend(backend)
    assert isinstance(ContractError("x"), AssertionError)


def test_check_backend_refuses_what_it_cannot_check():
    with pytest.raises(ArgumentError, match="num_envs >= 2"):
        check_backend(create_backend("mujoco", 1))
    with pytest.raises(ArgumentError, match="expected a SimBackend"):
        check_backend(object())
