"""Backends: one batched-scene contract (`SimBackend`), one module per engine, one registry.

`BACKENDS` is the registry every caller reads (`create`, the CLI's `unienv list`, the
benchmark, sim2sim, the tests): per backend, its class, the pip extra of its engine, the
devices it runs on and its raw engine loop. `installed_backends()` and `backends_on(device)`
say which run here; `check_backend(backend)` runs the contract's invariants on one.

An engine module is imported only when its backend is created, so importing
unienv never imports genesis, warp or pinocchio.
"""

import dataclasses
import importlib
import importlib.util
import os
from typing import Any

import torch

from unienv.backends.base import (
    DR_TERMS,
    SUBSTEP_READS,
    BodyViews,
    Capabilities,
    DRTerm,
    SceneInfo,
    SimBackend,
)
from unienv.backends.check import check_backend
from unienv.errors import ArgumentError, CapabilityError, install_command, unknown_name


@dataclasses.dataclass(frozen=True)
class BackendEntry:
    """One backend in the registry: where its class and raw engine loop are, how its engine is
    installed, and where it runs (what the tests and the benchmark read)."""

    target: str  # "module:Class", imported when the backend is first created
    extra: str | None  # the pip extra that installs its engine (None: a core dependency)
    engine: tuple[str, ...]  # the engine's top-level modules: the backend is installed when all are
    devices: tuple[str, ...]  # the device types it runs on, the one it picks by default first
    # "module:function" -> bool: whether this install runs it on the CPU, for a backend built for
    # a GPU whose CPU path needs more than its engine (Warp's CPU kernels); None: it always does
    cpu_check: str | None = None
    slow_build: bool = False  # its first scene build compiles kernels for minutes (tests mark it slow)
    raw_loop: str | None = None  # "module:function": the engine alone, for `unienv.bench`
    # "module:function" (model, scene name) raising where the backend refuses the scene, without
    # starting the engine (`unienv list`); None: its features are all it needs
    scene_check: str | None = None

    @property
    def module(self) -> str:
        """The module that defines the backend class (the part of `target` before ':')."""
        return self.target.partition(":")[0]

    def installed(self) -> bool:
        """Whether every engine module it needs can be imported (without importing them)."""
        return all(importlib.util.find_spec(m) is not None for m in self.engine)

    def runs_on(self, device: str | torch.device) -> bool:
        """Whether it is installed and runs on `device`'s type here (imports the CPU check's module)."""
        kind = torch.device(device).type
        if not self.installed() or kind not in self.devices:
            return False
        return kind != "cpu" or self.cpu_check is None or bool(_resolve(self.cpu_check)())

    def accepts(self, model: Any, scene: str) -> bool:
        """Whether its scene check (where it has one) passes the compiled MuJoCo model of `scene`."""
        if self.scene_check is None:
            return True
        try:
            _resolve(self.scene_check)(model, scene)
        except (ArgumentError, CapabilityError):
            return False
        return True


BACKENDS: dict[str, BackendEntry] = {
    "mujoco": BackendEntry(
        "unienv.backends.mujoco:MujocoBackend", None, ("mujoco",), ("cpu",),
        raw_loop="unienv.backends.mujoco:raw_loop",
    ),
    "mjwarp": BackendEntry(
        "unienv.backends.mjwarp:MjwarpBackend", "mjwarp", ("warp", "mujoco_warp"), ("cuda", "cpu"),
        cpu_check="unienv.backends.mjwarp:cpu_available", raw_loop="unienv.backends.mjwarp:raw_loop",
    ),
    "genesis": BackendEntry(
        "unienv.backends.genesis:GenesisBackend", "genesis", ("genesis",), ("cuda", "cpu"),
        slow_build=True, raw_loop="unienv.backends.genesis:raw_loop",
        scene_check="unienv.backends.genesis_checks:check_scene",
    ),
}  # fmt: skip
"""The one registry of backends: name -> entry. A new backend adds its module, one entry here,
`cfg/backend/<name>.yaml` and its pip extra in pyproject.toml."""


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def installed_backends() -> list[str]:
    """The backends whose engines are installed, in registry order."""
    return [name for name, entry in BACKENDS.items() if entry.installed()]


def backends_on(device: str | torch.device) -> list[str]:
    """The installed backends that run on `device`'s type here, in registry order."""
    return [name for name, entry in BACKENDS.items() if entry.runs_on(device)]


def backend_class(name: str) -> type[SimBackend]:
    """The backend class for `name`, importing its module (and engine) now."""
    if name not in BACKENDS:
        raise unknown_name("backend", name, BACKENDS)
    entry = BACKENDS[name]
    try:
        return _resolve(entry.target)
    except ModuleNotFoundError as e:
        if entry.extra is None or e.name is None or e.name.startswith("unienv"):
            raise
        raise ModuleNotFoundError(
            f"backend={name!r} needs the {e.name!r} package, which is not installed; "
            f"install it with: {install_command(entry.extra)}",
            name=e.name,
        ) from e


def raw_loop(name: str) -> Any:
    """The backend's raw engine loop for `unienv.bench`: raw_loop(backend, decimation, replay)
    -> a step() that returns the (qpos, qvel) it read."""
    backend_class(name)  # an unknown name, or an engine not installed, says so here
    return _resolve(BACKENDS[name].raw_loop)


def create(name: str, scene: str | os.PathLike, num_envs: int, sim_dt: float, **options: Any) -> SimBackend:
    """Construct the named backend: `create("mujoco", "scene.xml", num_envs=64, sim_dt=0.01)`."""
    return backend_class(name)(scene, num_envs, sim_dt, **options)


__all__ = [
    "BACKENDS",
    "BackendEntry",
    "DR_TERMS",
    "SUBSTEP_READS",
    "BodyViews",
    "Capabilities",
    "DRTerm",
    "SceneInfo",
    "SimBackend",
    "backend_class",
    "backends_on",
    "check_backend",
    "create",
    "installed_backends",
    "raw_loop",
]
