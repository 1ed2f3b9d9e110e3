"""The conformance suite runs on every backend installed on this machine."""

import importlib.util
import os

import pytest
import torch

from unienv.backends import create

SCENE = os.path.join(os.path.dirname(__file__), "scene.xml")
SIM_DT = 0.005


def _mjwarp_device() -> str | None:
    """Where the suite runs mjwarp: CUDA when there is a GPU, else Warp's CPU device
    if this warp-lang has its CPU kernels (warp-clang), else nowhere (None)."""
    if not importlib.util.find_spec("mujoco_warp"):
        return None
    if torch.cuda.is_available():
        return "cuda"
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


@pytest.fixture(autouse=True)
def _mjwarp_on_cpu(monkeypatch):
    """Without a GPU, every mjwarp backend of the suite gets device="cpu" by default."""
    if MJWARP_DEVICE == "cpu":
        from unienv.backends import mjwarp

        class MjwarpOnCpu(mjwarp.MjwarpBackend):
            def __init__(self, *args, device="cpu", **options):
                super().__init__(*args, device=device, **options)

        monkeypatch.setattr(mjwarp, "MjwarpBackend", MjwarpOnCpu)


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
