"""The conformance suite runs on every backend installed on this machine.

The device is a parameter: UNIENV_TEST_DEVICE ("cpu", "cuda", "cuda:0"; default: CUDA where
torch sees a GPU, else the CPU) places the mjwarp and genesis backends (mujoco is CPU-only).
UNIENV_TEST_GENESIS_PRECISION ("32" or "64"; default: Genesis's for the device) sets Genesis's
precision, which is one per process. Every backend of the suite is made by `create_backend`,
so these settings reach them all; tests build expected tensors on `backend.device` and compare
on the CPU, so a CUDA run tests the backend, not the test.
"""

import importlib.util
import os

import pytest
import torch

from unienv.backends import create

SCENE = os.path.join(os.path.dirname(__file__), "scene.xml")
SIM_DT = 0.005
DEVICE = os.environ.get("UNIENV_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
GENESIS_PRECISION = os.environ.get("UNIENV_TEST_GENESIS_PRECISION") or None
if torch.device(DEVICE).type == "cuda" and not torch.cuda.is_available():
    raise RuntimeError(f"UNIENV_TEST_DEVICE={DEVICE!r}, but torch sees no CUDA device")


def _mjwarp_device() -> str | None:
    """Where the suite runs mjwarp: DEVICE if it is CUDA; on the CPU, Warp's CPU device if this
    warp-lang has its CPU kernels (warp-clang); else nowhere (None)."""
    if not importlib.util.find_spec("mujoco_warp"):
        return None
    if torch.device(DEVICE).type == "cuda":
        return DEVICE
    import warp

    warp.config.quiet = True
    return "cpu" if warp.is_cpu_available() else None


MJWARP_DEVICE = _mjwarp_device()

# backend name -> the engine module it needs
AVAILABLE = [
    name
    for name, module in [("mujoco", "mujoco"), ("genesis", "genesis")]
    if importlib.util.find_spec(module)
] + (["mjwarp"] if MJWARP_DEVICE else [])


def backend_options(name: str) -> dict:
    """The device (and Genesis's precision) the suite gives backend `name`."""
    if name == "mjwarp":
        return {"device": MJWARP_DEVICE}
    if name == "genesis":
        return {"device": DEVICE, **({"precision": GENESIS_PRECISION} if GENESIS_PRECISION else {})}
    return {}


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
