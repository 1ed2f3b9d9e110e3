"""The conformance suite runs on every backend installed on this machine.

The device is a parameter: UNIENV_TEST_DEVICE ("cpu", "cuda", "cuda:0"; default: CUDA where
torch sees a GPU, else the CPU) places the mjwarp and genesis backends (mujoco is CPU-only).
UNIENV_TEST_GENESIS_PRECISION ("32" or "64"; default: Genesis's for the device) sets Genesis's
precision, which is one per process. Every backend of the suite is made by `create_backend`,
so these settings reach them all; tests build expected tensors on `backend.device` and compare
on the CPU, so a CUDA run tests the backend, not the test.
"""

import os

import pytest
import torch

from unienv.backends import BACKENDS, backends_on, create

SCENE = os.path.join(os.path.dirname(__file__), "scene.xml")
SIM_DT = 0.005
DEVICE = os.environ.get("UNIENV_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
GENESIS_PRECISION = os.environ.get("UNIENV_TEST_GENESIS_PRECISION") or None
if torch.device(DEVICE).type == "cuda" and not torch.cuda.is_available():
    raise RuntimeError(f"UNIENV_TEST_DEVICE={DEVICE!r}, but torch sees no CUDA device")


def _suite_device(name: str) -> str | None:
    """Where the suite runs backend `name` (the registry says where it can run): on DEVICE if it
    runs there, on its own default if it runs on the CPU only; MISSING where it cannot run here."""
    entry = BACKENDS[name]
    if entry.devices == ("cpu",):
        return None if entry.installed() else MISSING
    return DEVICE if entry.runs_on(DEVICE) else MISSING


MISSING = "missing"
# backend name -> the device option the suite gives it, for every backend that runs here
SUITE_DEVICES = {name: device for name in BACKENDS if (device := _suite_device(name)) != MISSING}
AVAILABLE = list(SUITE_DEVICES)
MJWARP_DEVICE = SUITE_DEVICES.get("mjwarp")
CPU_BACKENDS = backends_on("cpu")  # those that run on the CPU here (tests that compare on the CPU)
# built for a GPU (a sync-free hot path) and run on the CPU here
DEVICE_BACKENDS = [name for name in CPU_BACKENDS if BACKENDS[name].devices != ("cpu",)]


def backend_params(names):
    """pytest params of backend names, marked slow where the backend's first build takes minutes."""
    return [pytest.param(n, marks=pytest.mark.slow) if BACKENDS[n].slow_build else n for n in names]


def backend_options(name: str) -> dict:
    """The device (and Genesis's precision) the suite gives backend `name`."""
    options = {"device": SUITE_DEVICES[name]} if SUITE_DEVICES.get(name) else {}
    if name == "genesis" and GENESIS_PRECISION:
        options["precision"] = GENESIS_PRECISION
    return options


def create_backend(name: str, num_envs: int = 4, scene: str = SCENE, sim_dt: float = SIM_DT, **options):
    """A contract-scene backend on the suite's device; `options` override."""
    return create(name, scene, num_envs, sim_dt, **{**backend_options(name), **options})


@pytest.fixture(params=AVAILABLE)
def backend_name(request):
    return request.param


@pytest.fixture
def make_backend(backend_name):
    """A factory of contract-scene backends, all closed at the end of the test."""
    made = []

    def make(num_envs=4, **options):
        backend = create_backend(backend_name, num_envs, **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()
