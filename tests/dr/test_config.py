"""DR configs are checked before anything runs, and the shipped ones load."""

import os

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import unienv
from tests.dr.conftest import SCENE, ContractTask
from unienv import dr as domain_randomization
from unienv.backends import create
from unienv.backends.mujoco import MujocoBackend
from unienv.env import UniEnv
from unienv.errors import ArgumentError, CapabilityError, UnknownNameError

CFG = os.path.join(os.path.dirname(__file__), "..", "..", "cfg")
MASS = {"param": "body_mass", "range": [0.8, 1.2], "operation": "scale"}


def contract_env(config, backend_cls=MujocoBackend, randomize=None):
    terms = domain_randomization.parse(config)
    if randomize is None:
        randomize = domain_randomization.backend_params(terms)
    backend = backend_cls(SCENE, 2, ContractTask.sim_dt, randomize=randomize)
    return UniEnv(ContractTask(), backend, dr=terms)


@pytest.mark.parametrize(
    "config, match",
    [
        ({"m": {"param": "body_mas", "range": 1.0}}, "did you mean 'body_mass'"),
        ({"m": {**MASS, "rnage": [0, 1]}}, "unknown field of dr.m.*'rnage'.*did you mean 'range'"),
        ({"m": {"range": 1.0}}, r"dr.m.param: missing"),
        ({"m": {**MASS, "distribution": "normal"}}, "dr.m.distribution 'normal'"),
        ({"m": {**MASS, "operation": "mul"}}, "dr.m.operation 'mul'"),
        ({"m": {**MASS, "operation": None}}, "dr.m.operation: missing"),
        ({"m": {**MASS, "range": [1.2, 0.8]}}, "lo <= hi"),
        ({"m": {**MASS, "distribution": "log_uniform", "range": [0.0, 1.0]}}, "0 < lo"),
        ({"m": {**MASS, "distribution": "gaussian"}}, "range: not used by a gaussian"),
        ({"m": {**MASS, "schedule": "interval"}}, "dr.m.interval: missing"),
        ({"m": {**MASS, "interval": 10}}, "only used with schedule: interval"),
        ({"m": {**MASS, "schedule": "interval", "interval": 0}}, "whole env steps >= 1"),
        ({"l": {"param": "action_latency", "range": [0, 1.5]}}, "whole steps"),
        ({"n": {"param": "obs_noise", "distribution": "gaussian", "std": -1}}, "std: expected >= 0"),
        ({"n": {"param": "obs_noise", "std": 0.1, "distribution": "log_uniform"}}, "dr.n.distribution"),
        ({"p": {"param": "push", "range": 1.0, "interval": 5}}, "dr.p.body"),
        ({"i": {"param": "init_state", "range": 1.0}}, "dr.i.field: missing"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(config, match):
    with pytest.raises((ArgumentError, UnknownNameError), match=match):
        domain_randomization.parse(config)


def test_unknown_parameter_lists_the_valid_ones():
    with pytest.raises(UnknownNameError) as e:
        domain_randomization.parse({"x": {"param": "joint_stiffness", "range": 1.0}})
    for name in ("body_mass", "geom_friction", "obs_noise", "push"):
        assert name in str(e.value)


@pytest.mark.parametrize(
    "term, match",
    [
        ({**MASS, "range": [-0.5, 1.0]}, r"body_mass must be >= 0"),
        ({**MASS, "range": [0.0, 1.0]}, r"body_mass <= 0"),
        ({"param": "body_mass", "range": [-1.0, 1.0], "operation": "add"}, r"body_mass"),
        (
            {"param": "body_mass", "distribution": "gaussian", "std": 0.1, "mean": 1.0, "operation": "scale"},
            "mass",
        ),
        ({"param": "geom_friction", "range": [-2.0, 0.0], "operation": "add"}, r"geom_friction must be >= 0"),
        ({"param": "dof_damping", "range": [-1.0, 1.0], "operation": "abs"}, r"dof_damping must be >= 0"),
        ({"param": "actuator_kp", "range": [-1.0, 1.0], "operation": "scale"}, r"actuator_kp must be >= 0"),
    ],
)
def test_non_physical_ranges_are_refused_at_config_time(term, match):
    with pytest.raises(ArgumentError, match=match):
        contract_env({"t": term})


def test_clipped_gaussian_mass_is_accepted():
    term = {"param": "body_mass", "distribution": "gaussian", "mean": 1.0, "std": 0.5, "clip": [0.5, 1.5]}
    env = contract_env({"m": {**term, "operation": "scale"}})
    env.reset()
    scale = env.dr.params()["m"] / env.backend.get_dr_default("body_mass")[1:]
    assert float(scale.min()) >= 0.5 and float(scale.max()) <= 1.5


def test_names_that_match_nothing_list_the_valid_names():
    with pytest.raises(UnknownNameError, match=r"body in dr.m.objects 'pol'.*'pole'.*valid: 'box', 'cart'"):
        contract_env({"m": {**MASS, "objects": ["box", "pol"]}})
    with pytest.raises(UnknownNameError, match=r"joint in dr.d.objects"):
        contract_env(
            {"d": {"param": "dof_damping", "objects": "elbow.*", "range": 1.0, "operation": "scale"}}
        )
    with pytest.raises(UnknownNameError, match=r"body in dr.p.objects 'torso'"):
        contract_env({"p": {"param": "push", "body": "torso", "range": 1.0, "interval": 10}})


def test_regexes_pick_objects():
    env = contract_env(
        {"d": {"param": "dof_damping", "objects": "slider|hin.*", "range": 2.0, "operation": "abs"}}
    )
    assert env.dr.labels()["d"] == ("slider", "hinge")
    env = contract_env({"m": MASS})  # default: every body but the world
    assert env.dr.labels()["m"] == ("box", "cart", "pole")


class NoDampingBackend(MujocoBackend):
    name = "nodamping"

    def _dr_terms(self):
        return {k: v for k, v in super()._dr_terms().items() if k != "dof_damping"}


def test_a_term_the_backend_cannot_write_raises_capability_error():
    with pytest.raises(CapabilityError, match=r"dr.d: the nodamping backend cannot randomize 'dof_damping'"):
        contract_env({"d": {"param": "dof_damping", "range": 2.0, "operation": "abs"}}, NoDampingBackend, ())
    # body_com must be declared to the mujoco backend at construction; make() does it
    with pytest.raises(CapabilityError, match="body_com"):
        contract_env({"c": {"param": "body_com", "range": 0.01, "operation": "add"}}, randomize=())


def test_overlapping_terms_are_refused():
    with pytest.raises(ArgumentError, match=r"dr.b: body_mass entry 'pole' is already written by dr.a"):
        contract_env({"a": MASS, "b": {**MASS, "objects": "pole"}})
    with pytest.raises(ArgumentError, match="observation entry"):
        contract_env(
            {
                "a": {"param": "obs_noise", "range": [-0.1, 0.1]},
                "b": {"param": "obs_noise", "range": [-0.1, 0.1], "indices": [0, 3]},
            }
        )


def test_quaternions_are_never_perturbed():
    env = contract_env({"q": {"param": "init_state", "field": "qpos", "objects": "box_free", "range": 0.5}})
    assert env.dr.labels()["q"] == ("box_free:0", "box_free:1", "box_free:2")


def test_omegaconf_config_and_refused_config_build_nothing():
    env = unienv.make("cartpole", num_envs=2, dr=OmegaConf.create({"m": MASS}))
    assert set(env.dr_params()) == {"m"}
    env.close()
    with pytest.raises(ArgumentError):
        unienv.make("cartpole", dr={"m": {**MASS, "range": [1, 0]}})


@pytest.mark.parametrize("name", ["none", "default", "strong"])
def test_shipped_configs_run_on_the_ant(name):
    with initialize_config_dir(config_dir=os.path.abspath(CFG), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["task=ant", f"dr={name}"])
    env = unienv.make("ant", num_envs=2, seed=0, dr=cfg.dr, backend_options={"nthread": 1})
    env.reset()
    for _ in range(5):
        env.step(torch.zeros(2, 8))
    params = env.dr_params()
    assert (name == "none") == (not params)
    env.close()


def test_dr_params_without_dr_is_empty():
    env = unienv.make("cartpole", num_envs=2)
    assert env.dr is None and env.dr_params() == {}
    env.close()


def test_backend_create_refuses_an_undeclared_term_helpfully():
    with pytest.raises(UnknownNameError, match="randomize"):
        create("mujoco", SCENE, 2, ContractTask.sim_dt, randomize=["obs_noise"])
