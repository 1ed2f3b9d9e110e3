"""The conformance suite runs on every backend installed on this machine."""

import importlib.util
import os

import pytest

from unienv.backends import create

SCENE = os.path.join(os.path.dirname(__file__), "scene.xml")
SIM_DT = 0.005

# backend name -> the engine module it needs
AVAILABLE = [
    name
    for name, module in [("mujoco", "mujoco"), ("genesis", "genesis")]
    if importlib.util.find_spec(module)
]


@pytest.fixture(params=AVAILABLE)
def backend_name(request):
    return request.param


@pytest.fixture
def make_backend(backend_name):
    """A factory of contract-scene backends, all closed at the end of the test."""
    made = []

    def make(num_envs=4, **options):
        backend = create(backend_name, SCENE, num_envs, SIM_DT, **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()
