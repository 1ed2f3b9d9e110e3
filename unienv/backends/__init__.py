"""Backends: one batched-scene contract (`SimBackend`), one module per engine.

An engine module is imported only when its backend is created, so importing
unienv never imports genesis, warp or pinocchio.
"""

import importlib
import os
from typing import Any

from unienv.backends.base import (
    DR_TERMS,
    BodyViews,
    Capabilities,
    DRTerm,
    SceneInfo,
    SimBackend,
)
from unienv.errors import install_command, unknown_name

# name -> (module, class, the pip extra that installs its engine)
BACKENDS = {
    "mujoco": ("unienv.backends.mujoco", "MujocoBackend", None),
    "genesis": ("unienv.backends.genesis", "GenesisBackend", "genesis"),
    "mjwarp": ("unienv.backends.mjwarp", "MjwarpBackend", "mjwarp"),
}


def backend_class(name: str) -> type[SimBackend]:
    """The backend class for `name`, importing its module (and engine) now."""
    if name not in BACKENDS:
        raise unknown_name("backend", name, BACKENDS)
    module, cls, extra = BACKENDS[name]
    try:
        return getattr(importlib.import_module(module), cls)
    except ModuleNotFoundError as e:
        if extra is None or e.name is None or e.name.startswith("unienv"):
            raise
        raise ModuleNotFoundError(
            f"backend={name!r} needs the {e.name!r} package, which is not installed; "
            f"install it with: {install_command(extra)}",
            name=e.name,
        ) from e


def create(name: str, scene: str | os.PathLike, num_envs: int, sim_dt: float, **options: Any) -> SimBackend:
    """Construct the named backend: `create("mujoco", "scene.xml", num_envs=64, sim_dt=0.01)`."""
    return backend_class(name)(scene, num_envs, sim_dt, **options)


__all__ = [
    "BACKENDS",
    "DR_TERMS",
    "BodyViews",
    "Capabilities",
    "DRTerm",
    "SceneInfo",
    "SimBackend",
    "backend_class",
    "create",
]
