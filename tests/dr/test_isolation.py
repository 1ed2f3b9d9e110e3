"""Reset-time terms touch only the envs reset; the same seed gives the same draws."""

import torch
import yaml

import unienv
from tests.dr.conftest import SCENE, ContractTask
from tests.dr.test_config import CFG
from unienv import dr as domain_randomization
from unienv.backends import create
from unienv.env import UniEnv

RESET_TERMS = {
    "mass": {"param": "body_mass", "range": [0.5, 2.0], "operation": "scale"},
    "com": {"param": "body_com", "range": [-0.05, 0.05], "operation": "add"},
    "friction": {"param": "geom_friction", "range": [0.5, 1.5], "operation": "scale"},
    "damping": {"param": "dof_damping", "range": [0.0, 1.0], "operation": "abs"},
    "kp": {"param": "actuator_kp", "range": [0.5, 1.5], "operation": "scale"},
    "latency": {"param": "action_latency", "range": [0, 3]},
    "noise": {"param": "obs_noise", "range": [-0.1, 0.1], "bias": 0.1},
}


def contract_env(config, num_envs=6, seed=0):
    terms = domain_randomization.parse(config)
    backend = create(
        "mujoco", SCENE, num_envs, ContractTask.sim_dt, randomize=domain_randomization.backend_params(terms)
    )
    return UniEnv(ContractTask(), backend, dr=terms, seed=seed, autoreset_mode="disabled")


def backend_values(env):
    """What the engine holds, not what the manager remembers."""
    return {p: env.backend.get_dr_param(p) for p in ("body_mass", "body_com", "geom_friction", "dof_damping")}


def test_reset_terms_change_only_the_envs_reset():
    env = contract_env(RESET_TERMS)
    obs0, _ = env.reset(seed=1)
    for _ in range(3):
        env.step(torch.ones(6, 2))
    before_engine, before = backend_values(env), env.dr_params()
    obs_before = env.step(torch.ones(6, 2))[0]
    mask = torch.tensor([False, True, False, False, True, False])
    obs, _ = env.reset(options={"reset_mask": mask})
    after_engine, after = backend_values(env), env.dr_params()
    for name in before:
        assert torch.equal(before[name][~mask], after[name][~mask]), name  # bit for bit
        if name != "noise":
            assert not torch.equal(before[name][mask], after[name][mask]), name
    for param in before_engine:
        assert torch.equal(before_engine[param][~mask], after_engine[param][~mask]), param
        assert not torch.equal(before_engine[param][mask], after_engine[param][mask]), param
    # the envs not reset keep their observation, noise included
    assert torch.equal(obs[~mask], obs_before[~mask])


def test_values_come_from_the_default_and_never_accumulate():
    env = contract_env({"com": RESET_TERMS["com"]}, num_envs=2)
    default = env.backend.get_dr_default("body_com")
    for seed in range(20):
        env.reset(seed=seed)
        offset = env.backend.get_dr_param("body_com") - default
        assert float(offset.abs().max()) <= 0.05 + 1e-12


def test_interval_terms_fire_for_the_due_envs_only():
    config = {"d": {"param": "dof_damping", "range": [0.0, 1.0], "operation": "abs", "schedule": "interval",
                    "interval": [2, 5]}}  # fmt: skip
    env = contract_env(config)
    env.reset(seed=0)
    last = env.dr_params()["d"]
    fired = torch.zeros(6, dtype=torch.long)
    for _ in range(20):
        countdown = env.dr._interval[0].countdown.clone()
        env.step(torch.zeros(6, 2))
        now = env.dr_params()["d"]
        changed = (now != last).any(1)
        assert torch.equal(changed, countdown == 1), (changed, countdown)
        fired += changed
        last = now
    assert bool((fired >= 4).all()) and bool((fired <= 10).all())  # every 2-5 steps over 20


def _rollout(seed, steps=60, num_envs=4):
    with open(f"{CFG}/dr/strong.yaml") as f:
        dr = yaml.safe_load(f)
    env = unienv.make("ant", num_envs=num_envs, seed=seed, dr=dr, backend_options={"nthread": 1})
    obs, _ = env.reset()
    actions = torch.Generator().manual_seed(0)
    trajectory = [obs]
    for _ in range(steps):
        obs, *_ = env.step(torch.rand(num_envs, 8, generator=actions) * 2 - 1)
        trajectory.append(obs)
    params = env.dr_params()
    env.close()
    return torch.stack(trajectory), params


def test_same_seed_same_parameters_and_trajectories():
    (traj_a, params_a), (traj_b, params_b) = _rollout(3), _rollout(3)
    assert torch.equal(traj_a, traj_b)
    assert params_a.keys() == params_b.keys()
    for name in params_a:
        assert torch.equal(params_a[name], params_b[name]), name
    traj_c, params_c = _rollout(4)
    assert not torch.equal(params_a["mass"], params_c["mass"])
    assert not torch.equal(traj_a, traj_c)


def test_env_i_draws_as_a_single_env_seeded_seed_plus_i():
    vector = contract_env(RESET_TERMS, num_envs=4, seed=10)
    vector.reset(seed=10)
    single = contract_env(RESET_TERMS, num_envs=1, seed=12)
    single.reset(seed=12)
    for name, value in single.dr_params().items():
        assert torch.equal(vector.dr_params()[name][2:3], value), name


def test_a_reset_of_no_env_changes_nothing():
    """An empty reset mask (host rows select nothing): no draw, no write, the same noise."""
    env = contract_env({**RESET_TERMS, "v": {"param": "init_state", "field": "qvel", "range": [-1.0, 1.0]}})
    env.reset(seed=2)
    last, *_ = env.step(torch.ones(6, 2))
    before, engine, physics = env.dr_params(), backend_values(env), env.backend.get_physics_state()
    obs, _ = env.reset(options={"reset_mask": torch.zeros(6, dtype=torch.bool)})
    assert torch.equal(obs, last)
    assert torch.equal(env.backend.get_physics_state(), physics)
    for name, value in env.dr_params().items():
        assert torch.equal(value, before[name]), name
    for param, value in backend_values(env).items():
        assert torch.equal(value, engine[param]), param
