"""The SimBackend contract: one batched scene, many environments, torch tensors.

A backend owns `num_envs` copies of one scene and steps them together. Its
model is cold-path metadata (NumPy, `backend.info`); its state is hot-path
torch tensors on `backend.device` with the batch dimension first.

Lifecycle: the constructor parses and compiles the scene and validates every
option (`substep_reads=` names the derived quantities to serve as the last physics
substep left them, not at the returned state: `scene.SUBSTEP_READS`; an engine that
cannot serves them at the state, and declares and warns of it); `materialize()` builds the batched state (idempotent, run by the first
state access); `close()` releases the engine (idempotent); any later hot-path
call raises BackendClosedError. Backends are context managers.

Conventions, whatever the engine: SI units; MJCF order for bodies, joints,
dofs and actuators; quaternions (w, x, y, z), body to world; a free joint's
qpos is [px py pz qw qx qy qz] and its qvel [vx vy vz] in the world frame then
[wx wy wz] in the body frame, as in MuJoCo. An engine that differs converts at
its boundary.

Invariants this class enforces for every backend, once, here:
  * every public call validates its arguments before anything is written, so a
    call that raises has changed nothing;
  * `set_state_tensor*` writes only the selected rows, and derived quantities
    (body poses, sensors) are current right after it, without a step;
  * a feature the backend does not declare in `get_capabilities()` raises
    CapabilityError, as does a DR term it cannot write.

Two execution models: where host reads are free, a non-finite input is refused
at once; on a backend whose capabilities say `sync_free`, nothing is read on the
host and such input is zeroed or left unwritten and flagged by `pop_diverged`.
The backend picks its input policy (`checks.HostInputs` or `checks.DeviceInputs`)
once, from its capabilities; the methods here are the same code for both.

The contract has three parts, one module each: this class (lifecycle, the
state's hot path, snapshots, and `Metadata`: sizes, names, ids),
`randomization.Randomization` (per-env DR terms) and `features.Features` (the
optional features, one Capabilities flag each: body views, sensors, contact
forces, Jacobians, wrenches, MuJoCo fields, mocap bodies, height scans).
`SimBackend` inherits them all. Engines implement the
underscored hooks at the bottom of each. The argument checks live in
`checks`, the MJCF helpers in `scene`, the device and memory checks in
`system`; `unienv.backends.check_backend` runs this contract's invariants on
any backend.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from unienv.backends import checks
from unienv.backends.dr_rules import DR_TERMS, DRTerm  # noqa: F401 (re-exported)
from unienv.backends.features import SCAN_ABOVE, SCAN_BELOW, TERRAIN_GROUP, Features  # noqa: F401
from unienv.backends.randomization import Randomization
from unienv.backends.scene import (  # noqa: F401 (re-exported: their import path before the split)
    MJ_FIELDS,
    SUBSTEP_READS,
    BodyViews,
    SceneInfo,
    compile_spec,
    load_mjmodel,
    mj_body_views,
    mujoco_warnings_as_python,
)
from unienv.backends.system import MEMORY_CHECK_FROM, check_memory, checked_device
from unienv.errors import BackendClosedError, CapabilityError, unknown_name

OBJECT_KINDS = ("body", "joint", "actuator", "site", "geom", "sensor")


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a backend does; a feature declared False raises CapabilityError."""

    backend: str
    device: str
    dtype: torch.dtype
    deterministic: bool  # same inputs give bit-identical trajectories
    body_views: bool = True
    sensors: bool = True
    contact_forces: bool = True
    site_jacobian: bool = True
    body_wrench: bool = True
    mj_fields: bool = False  # get_mj_field: MuJoCo's own derived quantities (MJ_FIELDS)
    mocap: bool = False  # set_mocap_pose_tensor*, get_mocap_views: the scene's mocap bodies moved per env
    height_scan: bool = False  # get_height_scan: the engine's ray casts onto the terrain (TERRAIN_GROUP)
    # the engine's state lives on a device that a host read would wait for (CUDA, or an engine
    # built for it run on the CPU): unienv then drives it with masks and static shapes and never
    # reads a device value on the host in the hot path (no bool(t), .item(), .cpu(), nonzero)
    sync_free: bool = False
    # the hot path (steps, state writes, reads, DR writes) can be recorded into one CUDA
    # graph by the caller (torch.cuda.graph), as UniEnv does for a whole env step
    cuda_graph: bool = False
    # where the backend knowingly differs from MuJoCo on this scene (integrator, contact model,
    # a substep read served at the state), one line each; the backend also warns with them at
    # construction
    differences: tuple[str, ...] = ()
    # the derived quantities (SUBSTEP_READS) this backend serves as its last substep left them
    substep_reads: frozenset[str] = frozenset()


class Metadata:
    """The scene's sizes, names and ids (cold path, NumPy), read from `info`."""

    info: SceneInfo

    @property
    def nq(self) -> int:
        """Generalized coordinates per env (MuJoCo's nq)."""
        return self.info.nq

    @property
    def nv(self) -> int:
        """Degrees of freedom per env (MuJoCo's nv)."""
        return self.info.nv

    @property
    def nu(self) -> int:
        """Actuators per env: the width of `ctrl` (MuJoCo's nu)."""
        return self.info.nu

    def names(self, kind: str) -> tuple[str, ...]:
        """Names of all objects of `kind` (body, joint, actuator, site, geom, sensor)."""
        if kind not in OBJECT_KINDS:
            raise unknown_name("object kind", kind, OBJECT_KINDS)
        return self.info.names[kind]

    def find(self, kind: str, names: str | Sequence[str]) -> np.ndarray:
        """int64 ids of the named objects; a misspelled name lists close matches."""
        valid = self.names(kind)
        single = isinstance(names, str)
        ids = []
        for n in [names] if single else names:
            if n not in valid:
                raise unknown_name(kind, n, valid)
            ids.append(valid.index(n))
        return np.asarray(ids, dtype=np.int64)

    def joint_qpos_slice(self, joint: str) -> slice:
        """The qpos columns of a joint."""
        return self._joint_slice(joint, self.info.joint_qpos_adr, {0: 7, 1: 4})

    def joint_qvel_slice(self, joint: str) -> slice:
        """The qvel (dof) columns of a joint."""
        return self._joint_slice(joint, self.info.joint_dof_adr, {0: 6, 1: 3})

    def _joint_slice(self, joint: str, adr: np.ndarray, width: dict[int, int]) -> slice:
        j = int(self.find("joint", joint)[0])
        start = int(adr[j])
        return slice(start, start + width.get(int(self.info.joint_type[j]), 1))


class SimBackend(Metadata, Randomization, Features, abc.ABC):
    """num_envs copies of one scene, stepped together; see the module docstring."""

    name: str = "abstract"
    # the unchecked entries take NumPy arrays as they are (an engine whose state is in host
    # arrays); elsewhere they are wrapped as tensors first
    takes_numpy: bool = False
    # the quantities of SUBSTEP_READS that the engine can serve as its last substep left them
    serves_substep: frozenset[str] = frozenset()

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize: Iterable[str] = (),
        substep_reads: Iterable[str] = (),
    ):
        checks.checked_counts(num_envs, sim_dt)
        if device is not None:
            checked_device(device)
        if num_envs > MEMORY_CHECK_FROM:
            check_memory(scene, int(num_envs), sim_dt, device)
        self.scene = os.fspath(scene)
        self.num_envs = int(num_envs)
        self.dt = float(sim_dt)
        self._closed = False
        self._materialized = False
        if isinstance(randomize, str):
            randomize = (randomize,)
        self._requested_dr = tuple(randomize)
        self._substep_reads, self._substep_differences = self._checked_substep_reads(substep_reads)
        self._dr_compiled: dict[str, torch.Tensor] = {}  # compiled DR values on the device, for checks
        self._sensor_ids: dict[str, int] = {}  # get_sensor_view's ids by name, as found

    def _checked_substep_reads(self, names: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
        """The substep reads this engine serves, and one line (also warned) for each it serves
        at the returned state instead."""
        names = (names,) if isinstance(names, str) else tuple(names)
        for name in names:
            if name not in SUBSTEP_READS:
                raise unknown_name("substep_reads: quantity", name, SUBSTEP_READS)
        unserved = [name for name in names if name not in self.serves_substep]
        lines = tuple(
            f"reads {name} at the returned state, not as the last substep left it" for name in unserved
        )
        for line in lines:
            warnings.warn(f"{self.name} backend: {line}", stacklevel=4)
        return frozenset(names) & self.serves_substep, lines

    # bumped whenever the engine moves the memory its hot path uses (e.g. a model field made
    # per env on its first DR write): a CUDA graph recorded before then is stale
    graph_epoch: int = 0

    device: torch.device

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities:
        """The backend's features, device, dtype and determinism."""

    # ---- lifecycle ----------------------------------------------------------

    def materialize(self) -> None:
        """Build the batched state. Idempotent."""
        self._check_open()
        if not self._materialized:
            self._materialize()
            self._materialized = True

    def close(self) -> None:
        """Release the engine. Idempotent; later hot-path calls raise."""
        if not self._closed:
            self._closed = True
            if self._materialized:
                self._close()

    @property
    def closed(self) -> bool:
        """Whether `close()` has run; every hot-path call then raises `BackendClosedError`."""
        return self._closed

    def __enter__(self) -> SimBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:  # noqa: SIM105 (at interpreter shutdown even contextlib may be gone)
            self.close()
        except Exception:
            pass

    def _check_open(self) -> None:
        if self._closed:
            raise BackendClosedError(f"this {self.name} backend is closed")

    def _ready(self) -> None:
        if self._closed:
            raise BackendClosedError(f"this {self.name} backend is closed")
        if not self._materialized:
            self.materialize()

    # ---- hot path -----------------------------------------------------------

    def step_tensor(self, ctrl: torch.Tensor, nsteps: int = 1) -> None:
        """Hold `ctrl` (num_envs, nu) for `nsteps` physics steps.

        A ctrl row with NaN or inf is refused (ArgumentError) by a backend whose
        host reads are free; on a `sync_free` backend it is checked on the device
        instead: that env is held at zero ctrl and flagged by pop_diverged.
        """
        self._ready()
        ctrl = checks.checked_rows(ctrl, "ctrl", self.num_envs, self.nu, self._dtype, self.device)
        self._step(self._inputs.ctrl(ctrl), checks.checked_nsteps(nsteps))

    def step_unchecked(
        self, ctrl: torch.Tensor | np.ndarray, nsteps: int, env_ids: torch.Tensor | None = None
    ) -> None:
        """step_tensor without its argument checks, for a caller that made its arguments
        itself: ctrl a finite (num_envs, nu) tensor in the backend's dtype on its device (or a
        NumPy array of that dtype on a CPU backend), nsteps a positive int. The env's fast path
        on the CPU engine, where those checks cost as much as a small model's physics; a wrong
        argument is undefined behaviour.

        env_ids (a sorted int64 tensor of distinct ids, or such a NumPy array on a CPU
        backend, or None: every env): the envs that need the physics. An engine that can step
        a subset holds the others still; their derived quantities are then undefined until the
        caller writes their state, which it must (NEXT_STEP's resets: the env steps only the
        envs it does not restart)."""
        self._ready()
        if ctrl.__class__ is np.ndarray and not self.takes_numpy:
            ctrl = torch.from_numpy(ctrl)
        if env_ids.__class__ is np.ndarray and not self.takes_numpy:
            env_ids = torch.from_numpy(env_ids)
        if env_ids is None:
            self._step(ctrl, nsteps)
        else:
            self._step_rows(ctrl, nsteps, env_ids)

    def set_state_unchecked(self, env_ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """set_state_tensor without its argument checks, for a caller that made its
        arguments itself: env_ids a sorted int64 tensor of distinct ids, qpos (len(ids), nq)
        and qvel (len(ids), nv) finite, in the backend's dtype on its device; or all three
        NumPy arrays, on a CPU backend."""
        self._ready()
        if env_ids.__class__ is np.ndarray and not self.takes_numpy:
            env_ids, qpos, qvel = torch.from_numpy(env_ids), torch.from_numpy(qpos), torch.from_numpy(qvel)
        if len(env_ids):
            self._set_state(env_ids, qpos, qvel)

    def get_state_views(self) -> Mapping[str, torch.Tensor]:
        """Live tensors time (N,), qpos (N,nq), qvel (N,nv), ctrl (N,nu)."""
        self._ready()
        return self._state_views()

    def set_state_tensor(self, env_ids: Any, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Start the selected envs from (qpos, qvel); other rows stay bit-identical.

        The selected rows begin anew: time 0, ctrl 0, applied forces and solver
        warm start cleared. Derived quantities are current on return.
        """
        self._ready()
        ids, order = checks.checked_ids(env_ids, self.num_envs)
        qpos = self._finite_rows(qpos, "qpos", len(ids), self.nq)
        qvel = self._finite_rows(qvel, "qvel", len(ids), self.nv)
        if order is not None:
            qpos, qvel = qpos[order], qvel[order]
        if len(ids):
            self._set_state(ids, qpos, qvel)

    def set_state_tensor_mask(self, mask: Any, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """As set_state_tensor, for the rows where `mask` (num_envs,) is True, with static
        shapes: qpos (num_envs, nq) and qvel (num_envs, nv) hold a row for every env,
        and the rows outside the mask are ignored.

        On a `sync_free` backend nothing is read on the host: a masked row with
        NaN or inf is written as is and flagged by pop_diverged.
        """
        self._ready()
        mask = checks.checked_mask(mask, self.num_envs, self.device)
        qpos = checks.checked_rows(qpos, "qpos", self.num_envs, self.nq, self._dtype, self.device)
        qvel = checks.checked_rows(qvel, "qvel", self.num_envs, self.nv, self._dtype, self.device)
        self._inputs.states(mask, qpos, qvel)
        self._set_state_mask(mask, qpos, qvel)

    def pop_diverged(self) -> torch.Tensor:
        """(num_envs,) bool: envs whose physics diverged since the last call, left
        non-finite or reset by the engine itself (as MuJoCo does on a bad state), or
        that were handed a non-finite ctrl or state on a sync_free backend."""
        self._ready()
        return self._inputs.diverged(self._pop_diverged())

    def pop_diverged_host(self) -> np.ndarray | None:
        """pop_diverged as a NumPy mask, or None where no env diverged: the env's step on a
        backend whose host reads are free, whose usual step then makes no array."""
        self._ready()
        return self._pop_diverged_host()

    # ---- snapshots ----------------------------------------------------------

    def get_physics_state(self) -> torch.Tensor:
        """(N, S) rows: [time, qpos, qvel] then any solver state the engine needs
        for an exact restore (see `physics_state_size`)."""
        self._ready()
        return self._get_physics_state()

    def set_physics_state(self, state: torch.Tensor, env_ids: Any = None) -> None:
        """Restore rows of get_physics_state(), for all envs or env_ids.

        A row of width 1 + nq + nv (the portable part, as any backend writes it)
        is accepted too; the engine's solver state is then cleared.
        """
        self._ready()
        ids, order = checks.checked_ids(
            torch.arange(self.num_envs) if env_ids is None else env_ids, self.num_envs
        )
        width = checks.checked_state_width(state, len(ids), self.physics_state_size, 1 + self.nq + self.nv)
        state = self._finite_rows(state, "state", len(ids), width)
        if order is not None:
            state = state[order]
        if len(ids):
            self._set_physics_state(ids, state)

    @property
    def physics_state_size(self) -> int:
        """Columns of a `get_physics_state()` row: time, qpos, qvel."""
        return 1 + self.nq + self.nv

    # ---- validation (checks: one place) -------------------------------------

    @functools.cached_property
    def _capabilities(self) -> Capabilities:
        return self.get_capabilities()

    @functools.cached_property
    def _dtype(self) -> torch.dtype:
        return self._capabilities.dtype

    @functools.cached_property
    def _inputs(self) -> checks.HostInputs | checks.DeviceInputs:
        """How non-finite input is met, chosen once: refused on the host, or flagged on the device."""
        if self._capabilities.sync_free:
            return checks.DeviceInputs(self.num_envs, self.device)
        return checks.HostInputs(self._dtype)

    def _require(self, feature: str) -> None:
        if not getattr(self._capabilities, feature):
            raise CapabilityError(f"the {self.name} backend does not support {feature}")

    def _finite_rows(self, x: Any, name: str, n: int, width: int) -> torch.Tensor:
        """A state's rows: finite and within the square root of the dtype's range (the engine
        squares them: 1e300 would be inf at the first step)."""
        x = checks.checked_rows(x, name, n, width, self._dtype, self.device)
        checks.refuse_beyond_rows(x, name, self._dtype)
        return x

    def _finite_array(self, x: Any, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        x = checks.checked_array(x, name, shape, self.device)
        checks.refuse_nonfinite(x, name, self._dtype)
        return x

    # ---- engine hooks -------------------------------------------------------

    @abc.abstractmethod
    def _materialize(self) -> None: ...

    @abc.abstractmethod
    def _close(self) -> None: ...

    @abc.abstractmethod
    def _step(self, ctrl: torch.Tensor, nsteps: int) -> None: ...

    def _step_rows(self, ctrl: torch.Tensor, nsteps: int, ids: torch.Tensor) -> None:
        """Step at least the envs `ids`; an engine that steps every world in one launch (on a
        device, masking worlds costs more than stepping them) steps them all."""
        self._step(ctrl, nsteps)

    @abc.abstractmethod
    def _state_views(self) -> Mapping[str, torch.Tensor]: ...

    @abc.abstractmethod
    def _set_state(self, ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None: ...

    def _set_state_mask(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Engines that can write by mask on the device override this; host ids otherwise."""
        ids = torch.nonzero(mask.cpu()).flatten()
        if len(ids):
            self._set_state(ids, qpos[ids.to(qpos.device)], qvel[ids.to(qvel.device)])

    @abc.abstractmethod
    def _get_physics_state(self) -> torch.Tensor: ...

    @abc.abstractmethod
    def _set_physics_state(self, ids: torch.Tensor, state: torch.Tensor) -> None: ...

    def _pop_diverged_host(self) -> np.ndarray | None:
        """Engines with a cheaper test that no env diverged override this."""
        diverged = self._inputs.diverged(self._pop_diverged()).cpu().numpy()
        return diverged if diverged.any() else None

    def _pop_diverged(self) -> torch.Tensor:
        s = self._state_views()
        return ~(torch.isfinite(s["qpos"]).all(1) & torch.isfinite(s["qvel"]).all(1))
