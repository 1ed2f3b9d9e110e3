"""DR tests run on the contract scene (a free box over a floor; a cart-pole with a
position servo on the cart and a motor on the pole) through a small task.

`make_env(config, ...)` builds a UniEnv with that config on the parametrized
backend: a fresh mujoco backend each time, or, for genesis (whose scene builds
take seconds to minutes), shared backends that declare every term, one per
env a test makes (a test's first env gets the first, an unrandomized twin the
second), so the genesis builds stay two per session.
"""

import os

import gymnasium as gym
import numpy as np
import pytest
import torch

from tests.contract.conftest import CPU_BACKENDS, MJWARP_DEVICE
from unienv import dr as domain_randomization
from unienv.backends import DR_TERMS, create
from unienv.env import UniEnv
from unienv.task import Task

SCENE = os.path.join(os.path.dirname(__file__), "..", "contract", "scene.xml")
BACKENDS = CPU_BACKENDS  # tests compare on the CPU
# qpos: box free joint 0..6, slider 7, hinge 8; qvel: box 0..5, slider 6, hinge 7
BOX_Z, BOX_VX, SLIDER_Q, HINGE_Q, SLIDER_V, HINGE_V = 2, 0, 7, 8, 6, 7
POLE_MASS, POLE_COM = 0.2, 0.3  # kg; m along the pole from the hinge


class ContractTask(Task):
    """Actions are the two actuators' ctrl; the observation is [qpos, qvel]; the
    reset state is fixed: the box resting (or at box_z) with x velocity box_vx,
    the cart at 0 and the pole at angle `pole` (0 upright)."""

    name = "contract"
    scene = SCENE
    sim_dt = 0.005
    decimation = 2
    episode_length_s = 100.0
    single_action_space = gym.spaces.Box(-5.0, 5.0, (2,), np.float32)
    single_observation_space = gym.spaces.Box(-np.inf, np.inf, (17,), np.float64)

    def __init__(self, box_z=0.1, box_vx=0.0, pole=0.0):
        self.box_z, self.box_vx, self.pole = box_z, box_vx, pole

    def setup(self, backend):
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nv = backend.nv

    def action_to_ctrl(self, action):
        return action.to(self.dtype)

    def read(self, backend):
        s = backend.get_state_views()
        return {"obs": torch.cat((s["qpos"], s["qvel"]), dim=1)}

    def observe(self, s, memory):
        return s["obs"]

    def reward(self, s, prev, action, memory):
        return torch.zeros(len(s["obs"]), dtype=self.dtype, device=self.device), {}

    def terminated(self, s, memory):
        return torch.zeros(len(s["obs"]), dtype=torch.bool, device=self.device)

    def reset_state(self, env_ids, rng):
        qpos = self.qpos0.repeat(len(env_ids), 1)
        qpos[:, BOX_Z], qpos[:, SLIDER_Q], qpos[:, HINGE_Q] = self.box_z, 0.0, self.pole
        qvel = torch.zeros(len(env_ids), self.nv, dtype=self.dtype, device=self.device)
        qvel[:, BOX_VX] = self.box_vx
        return qpos, qvel


_shared = {}


@pytest.fixture(params=BACKENDS)
def backend_name(request):
    return request.param


@pytest.fixture
def make_env(backend_name):
    """make_env(config, num_envs=4, seed=0, **task_options) -> a reset UniEnv, per backend."""
    yield from _factory(backend_name)


@pytest.fixture
def make_mujoco_env():
    """make_env on mujoco only, for env-level terms (latency, obs noise, init state)."""
    yield from _factory("mujoco")


@pytest.fixture
def dr_backend(backend_name):
    """A 4-env backend that declares every DR term it has (genesis: the first shared one,
    its defaults restored)."""
    if backend_name == "genesis":
        yield _shared_genesis(0)
        return
    device = {"mjwarp": MJWARP_DEVICE}.get(backend_name)
    backend = create(backend_name, SCENE, 4, ContractTask.sim_dt, device=device, randomize=DR_TERMS)
    yield backend
    backend.close()


# every term but the contact solver parameters and geom sizes, which Genesis keeps the same for all envs
GENESIS_TERMS = tuple(t for t in DR_TERMS if t not in ("geom_solref", "geom_solimp", "geom_size"))


def _shared_genesis(slot):
    """The session's genesis backend number `slot` (4 envs, every term declared), defaults restored."""
    backend = _shared.get(slot)
    if backend is None:
        backend = _shared[slot] = create(
            "genesis", SCENE, 4, ContractTask.sim_dt, device="cpu", randomize=GENESIS_TERMS
        )
    _restore_defaults(backend)
    return backend


def _factory(backend_name):
    made, shared_used = [], []

    def make(config, num_envs=4, seed=0, **task_options):
        terms = domain_randomization.parse(config)
        if backend_name == "genesis":
            if num_envs != 4:
                pytest.skip("genesis runs share 4-env scenes")
            slot = len(shared_used)  # a test's second env (e.g. an unrandomized twin) gets its own scene
            backend = _shared_genesis(slot)
            shared_used.append(slot)
            missing = set(domain_randomization.backend_params(terms)) - set(backend.get_dr_capabilities())
            if missing:
                pytest.skip(f"the genesis backend does not declare {sorted(missing)}")
        else:
            randomize = domain_randomization.backend_params(terms)
            device = {"mjwarp": MJWARP_DEVICE}.get(backend_name)
            backend = create(
                backend_name, SCENE, num_envs, ContractTask.sim_dt, device=device, randomize=randomize
            )
            made.append(backend)
        env = UniEnv(ContractTask(**task_options), backend, dr=terms, seed=seed)
        env.reset()
        return env

    yield make
    for backend in made:
        backend.close()


def _restore_defaults(backend):
    """Undo an earlier test's DR on the shared backend."""
    ids = torch.arange(backend.num_envs)
    for term in backend.get_dr_capabilities():
        default = backend.get_dr_default(term).expand(backend.num_envs, *backend.get_dr_default(term).shape)
        if not torch.equal(backend.get_dr_param(term).to(default.dtype), default):
            backend.set_dr_param(term, ids, default.clone())


def state(env):
    """(qpos, qvel) copies in float64, whatever the backend's dtype."""
    s = env.backend.get_state_views()
    return tuple(s[k].to("cpu", torch.float64, copy=True) for k in ("qpos", "qvel"))
