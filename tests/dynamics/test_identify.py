"""Identification: a randomized payload mass is recovered per env from rollouts of the real
simulator (the batched MuJoCo backend), from (q, v, a, tau) alone; base parameters, the
conditioning check and physically consistent estimates."""

from __future__ import annotations

import numpy as np
import pytest

from unienv.dynamics import MujocoDynamics, PoorExcitationError, identify, spatial
from unienv.dynamics.payload import ARM7, add_noise, identify_payloads, record_rollouts
from unienv.errors import ArgumentError

SIM_DT = 0.002
NOISY_TOLERANCE = 0.02  # relative, with payload.NOISE sensor noise (observed about 0.2%)


@pytest.fixture(scope="module")
def log():
    masses = np.random.default_rng(7).uniform(0.5, 3.0, 8)
    return record_rollouts(masses, seconds=3.0, sim_dt=SIM_DT, seed=3)


@pytest.fixture(scope="module")
def model():
    return MujocoDynamics(ARM7)


def samples(log, env, stride=6, skip=0.5):
    start = int(skip / SIM_DT)
    return tuple(log[k][env, start::stride] for k in ("q", "v", "a", "tau"))


def test_payload_mass_from_noiseless_rollouts(log, model):
    estimates = identify_payloads(model, log, stride=6, sim_dt=SIM_DT)
    error = np.abs(estimates / log["mass"] - 1)
    assert error.max() < 1e-6, error  # acceptance: 1%


def test_payload_mass_from_noisy_rollouts(log, model):
    noisy = add_noise(log, SIM_DT, seed=11)
    estimates = identify_payloads(model, noisy, stride=6, sim_dt=SIM_DT)
    error = np.abs(estimates / log["mass"] - 1)
    assert error.max() < NOISY_TOLERANCE, error


def test_payload_mass_with_pinocchio(log):
    pytest.importorskip("pinocchio")
    from unienv.dynamics import PinocchioDynamics

    two = {k: log[k][:2] for k in ("q", "v", "a", "tau", "mass")}
    estimates = identify_payloads(PinocchioDynamics(ARM7), two, stride=6, sim_dt=SIM_DT)
    assert np.abs(estimates / two["mass"] - 1).max() < 1e-6


def test_base_parameters_on_random_states(model):
    """All bodies unknown, synthetic exciting data: K theta_true = beta, residual ~ 0."""
    rng = np.random.default_rng(5)
    q = model.random_configuration(60, rng)
    v, a = rng.normal(size=(60, 7)), rng.normal(size=(60, 7))
    truth = model.inertial_parameters()
    result = identify(model, q, v, a, model.inverse_dynamics(q, v, a))
    assert result.residual_rms < 1e-9 and result.condition_number < 1e4
    assert not any(n.startswith("base.") for n in result.base_names)  # welded to the world
    assert np.abs(result.base_map @ truth - result.base_parameters).max() < 1e-8 * np.abs(truth).max()
    # the payload moves with the last link: its mass alone is not identifiable
    assert not result.identifiable[result.names.index("payload.m")]


def test_base_parameters_of_the_whole_arm_from_a_rollout(log, model):
    """Every link, armature and damping unknown: the base parameters are recovered exactly."""
    q, v, a, tau = samples(log, 0)
    result = identify(model, q, v, a, tau, armature=True, damping=True)
    truth = model.inertial_parameters()
    truth[model.body_parameter_slice("payload")] *= log["mass"][0]  # nominal payload: 1 kg
    damping = np.array([1.0] * 4 + [0.5] * 3)
    armature = np.array([0.1] * 4 + [0.05] * 3) + SIM_DT * damping  # the Euler step's
    beta = result.base_map @ np.concatenate([truth, armature, damping])
    assert result.residual_rms < 1e-9 and result.condition_number < 1e4
    assert np.abs(beta - result.base_parameters).max() < 1e-8 * np.abs(beta).max()


def test_conditioning_check_refuses_a_still_robot(model):
    q = np.tile(np.array([0, 0.5, 0, -1.2, 0, 0.8, 0.0]), (50, 1))
    zeros = np.zeros((50, 7))
    tau = model.gravity(q)
    with pytest.raises(PoorExcitationError, match="condition number"):
        identify(model, q, zeros, zeros, tau, bodies=["payload"])


def test_consistent_estimate(log, model):
    q, v, a, tau = samples(log, 1)
    result = identify(model, q, v, a, tau, bodies=["payload"], armature=True, damping=True, consistent=True)
    theta = result.parameters[:10]
    assert np.linalg.eigvalsh(spatial.pseudo_inertia(theta)).min() > 0
    assert abs(result["payload.m"] / log["mass"][1] - 1) < 0.01


def test_identify_names_the_bad_argument(model):
    q = np.zeros((5, 7))
    with pytest.raises(ArgumentError, match=r"tau: expected shape \(5, 7\)"):
        identify(model, q, q, q, np.zeros((4, 7)))
    with pytest.raises(KeyError, match="payload"):
        identify(model, q, q, q, q, bodies=["paylod"])
