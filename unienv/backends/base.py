"""The SimBackend contract: one batched scene, many environments, torch tensors.

A backend owns `num_envs` copies of one scene and steps them together. Its
model is cold-path metadata (NumPy, `backend.info`); its state is hot-path
torch tensors on `backend.device` with the batch dimension first.

Lifecycle: the constructor parses and compiles the scene and validates every
option; `materialize()` builds the batched state (idempotent, run by the first
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

Domain randomization: every backend takes the terms' names, shapes, units,
minimums and what follows a write (inertia with mass, servo bias with kp and
kd, derived constants after mass, COM or armature) from one table,
`unienv.backends.dr_rules`. `set_dr_param` writes rows by env ids;
`set_dr_param_mask` writes by a mask with static shapes, and reads nothing
back on a backend whose capabilities say `sync_free` (rows out of the term's
domain are then left unwritten instead of raising). Both go through one hook,
`_set_dr_mask`.

Optional features, each a `Capabilities` flag: mocap bodies moved per env
(`set_mocap_pose_tensor*`, `get_mocap_views`) and height scans of terrain
(`get_height_scan`: the engine's vertical ray casts onto geom group
TERRAIN_GROUP, around a body in its yaw frame).

Engines implement the underscored hooks at the bottom of the class.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from unienv.arrays import NUMPY, torch_namespace
from unienv.backends.dr_rules import DR_TERMS, DRTerm, problems
from unienv.errors import (
    ArgumentError,
    BackendClosedError,
    CapabilityError,
    unknown_name,
)

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
OBJECT_KINDS = ("body", "joint", "actuator", "site", "geom", "sensor")

MJ_FIELDS = {
    "cinert": "body",  # (N, nbody, 10) com-based inertia
    "cvel": "body",  # (N, nbody, 6) com-based velocity [rot, lin]
    "cfrc_ext": "body",  # (N, nbody, 6) com-based external (contact) wrench [torque, force]
    "xipos": "body",  # (N, nbody, 3) body COM position
    "site_xpos": "site",  # (N, nsite, 3) site position
    "qfrc_actuator": "dof",  # (N, nv) actuator generalized force
    "qfrc_constraint": "dof",  # (N, nv) constraint generalized force
}
"""MuJoCo's derived mjData fields that `get_mj_field` serves (the `mj_fields` capability),
with what their second axis runs over. Gymnasium's MuJoCo tasks observe them."""


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
    # where the backend knowingly differs from MuJoCo on this scene (integrator, contact model),
    # one line each; the backend also warns with them at construction
    differences: tuple[str, ...] = ()


TERRAIN_GROUP = 2
"""The geom group of terrain (MJCF `<geom group="2">`, as `unienv.terrain` writes it): the only
geoms a height scan sees, so that the robot's own geoms never hide the ground."""
SCAN_ABOVE, SCAN_BELOW = 1.0, 4.0
"""Height-scan rays run from SCAN_ABOVE metres above the body down to SCAN_BELOW below it."""


class BodyViews(NamedTuple):
    """Poses and velocities of bodies, world frame, (num_envs, B, ...)."""

    pos: torch.Tensor  # (N, B, 3) body frame origin
    quat: torch.Tensor  # (N, B, 4) wxyz, body to world
    lin_vel: torch.Tensor  # (N, B, 3) velocity of the body frame origin
    ang_vel: torch.Tensor  # (N, B, 3)


def mj_body_views(out: Mapping[str, Any], root: Any, ids: Any) -> BodyViews:
    """BodyViews of bodies `ids` from MuJoCo's xpos, xquat, cvel and subtree_com (N, nbody, ...),
    as torch tensors; `out`, `root` and `ids` are torch tensors, or NumPy arrays (the gathers
    then run in NumPy, a quarter of torch's cost per call, and the results are wrapped).

    cvel is the spatial velocity [angular, linear] at the subtree COM of each
    body's root (`root`, MuJoCo's body_rootid); the origin's linear velocity is
    v + w x (p - c).
    """
    xp = NUMPY if isinstance(ids, np.ndarray) else torch_namespace(ids.device)
    pos = out["xpos"][:, ids]
    cvel = out["cvel"][:, ids]
    ang = cvel[..., :3]
    lin = cvel[..., 3:] + xp.cross(ang, pos - out["subtree_com"][:, root[ids]])
    views = (pos, out["xquat"][:, ids], lin, xp.copy(ang))
    return BodyViews(*(map(torch.from_numpy, views) if xp is NUMPY else views))


@dataclasses.dataclass(frozen=True)
class SceneInfo:
    """Cold-path model metadata in MJCF order, as NumPy arrays.

    Built from a compiled MuJoCo model, which every backend can make from the
    scene's MJCF: the layout (names, addresses) is the same on all engines.
    """

    nq: int
    nv: int
    nu: int
    timestep: float
    names: Mapping[str, tuple[str, ...]]  # kind -> names, index = id
    joint_type: np.ndarray  # (njnt,) mjtJoint
    joint_qpos_adr: np.ndarray  # (njnt,)
    joint_dof_adr: np.ndarray  # (njnt,)
    joint_range: np.ndarray  # (njnt, 2); (0, 0) where unlimited
    joint_limited: np.ndarray  # (njnt,) bool
    actuator_joint: np.ndarray  # (nu,) joint id, -1 if not a joint transmission
    actuator_gear: np.ndarray  # (nu,)
    ctrl_range: np.ndarray  # (nu, 2); (-inf, inf) where unlimited
    actuator_gain: np.ndarray  # (nu,) gainprm[0]
    actuator_bias: np.ndarray  # (nu, 3) biasprm[:3]
    qpos0: np.ndarray  # (nq,)
    keyframes: Mapping[str, np.ndarray]  # name -> qpos
    gravity: np.ndarray  # (3,)
    body_parent: np.ndarray  # (nbody,)
    body_mass: np.ndarray  # (nbody,)
    body_com: np.ndarray  # (nbody, 3) in the body frame
    body_inertia: np.ndarray  # (nbody, 3) principal moments
    sensor_adr: np.ndarray  # (nsensor,)
    sensor_dim: np.ndarray  # (nsensor,)
    mocap_body: np.ndarray  # (nmocap,) body id of each mocap body, in mocap order

    @classmethod
    def from_mjmodel(cls, model: Any) -> SceneInfo:
        import mujoco

        def names(kind: str, count: int) -> tuple[str, ...]:
            obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
            return tuple(mujoco.mj_id2name(model, obj, i) or f"{kind}{i}" for i in range(count))

        trn_joint = model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT
        ctrl_range = np.where(
            model.actuator_ctrllimited[:, None].astype(bool),
            model.actuator_ctrlrange,
            np.array([-np.inf, np.inf]),
        )
        keyframes = {}
        for k in range(model.nkey):
            key_name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_KEY, k) or f"key{k}"
            keyframes[key_name] = model.key_qpos[k].copy()
        return cls(
            nq=model.nq,
            nv=model.nv,
            nu=model.nu,
            timestep=float(model.opt.timestep),
            names={
                "body": names("body", model.nbody),
                "joint": names("joint", model.njnt),
                "actuator": names("actuator", model.nu),
                "site": names("site", model.nsite),
                "geom": names("geom", model.ngeom),
                "sensor": names("sensor", model.nsensor),
            },
            joint_type=model.jnt_type.copy(),
            joint_qpos_adr=model.jnt_qposadr.astype(np.int64),
            joint_dof_adr=model.jnt_dofadr.astype(np.int64),
            joint_range=model.jnt_range.copy(),
            joint_limited=model.jnt_limited.astype(bool),
            actuator_joint=np.where(trn_joint, model.actuator_trnid[:, 0], -1).astype(np.int64),
            actuator_gear=model.actuator_gear[:, 0].copy(),
            ctrl_range=ctrl_range,
            actuator_gain=model.actuator_gainprm[:, 0].copy(),
            actuator_bias=model.actuator_biasprm[:, :3].copy(),
            qpos0=model.qpos0.copy(),
            keyframes=keyframes,
            gravity=model.opt.gravity.copy(),
            body_parent=model.body_parentid.astype(np.int64),
            body_mass=model.body_mass.copy(),
            body_com=model.body_ipos.copy(),
            body_inertia=model.body_inertia.copy(),
            sensor_adr=model.sensor_adr.astype(np.int64),
            sensor_dim=model.sensor_dim.astype(np.int64),
            mocap_body=np.flatnonzero(model.body_mocapid >= 0),  # MuJoCo numbers them in body order
        )


def checked_device(device: str | torch.device) -> torch.device:
    """`device` as a torch.device: 'cpu', 'cuda' or 'cuda:<k>', a CUDA one only where torch sees a GPU."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ArgumentError(f"device: expected None, 'cpu', 'cuda' or 'cuda:<k>', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ArgumentError(
            f"device: {str(device)!r} asks for a CUDA GPU, but this machine has none that torch can use "
            "(torch.cuda.is_available() is False); use device='cpu' or leave it unset"
        )
    return dev


_MEMORY_CHECK_FROM = 4096  # fewer envs of any scene here fit in well under a GiB


def check_memory(scene: str | os.PathLike, num_envs: int, sim_dt: float, device: Any) -> None:
    """Refuse a num_envs whose state would not fit in the memory available, before allocating.

    The estimate is MuJoCo's per-env data of the scene (its fixed buffer plus the arena a
    forward pass uses), times num_envs: a lower bound, for every engine holds at least that."""
    import mujoco

    model = load_mjmodel(scene, sim_dt)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    need = num_envs * (data.nbuffer + data.maxuse_arena)
    dev = torch.device("cpu" if device is None else device)
    if dev.type == "cuda" and torch.cuda.is_available():
        have, where = torch.cuda.mem_get_info(dev)[0], f"free on {dev}"
    else:
        have, where = _available_ram(), "of available RAM"
    if need > have:
        per_env = need / num_envs
        raise ArgumentError(
            f"num_envs: {num_envs} envs of {os.path.basename(os.fspath(scene))} need at least "
            f"{_bytes(need)} ({_bytes(per_env)} each), more than the {_bytes(have)} {where}; "
            f"expected at most about {int(have // per_env)}"
        )


def _available_ram() -> int:
    """Bytes the kernel can hand out now without swapping (MemAvailable; free pages elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return ""


def load_mjmodel(scene: str | os.PathLike, sim_dt: float | None = None, movable_com: bool = False) -> Any:
    """Compile an MJCF file with MuJoCo and set its timestep to sim_dt, if given (see
    compile_spec). Every MjModel unienv makes from a file comes from here."""
    import mujoco

    path = os.fspath(scene)
    if not os.path.isfile(path):
        raise ArgumentError(f"scene: no MJCF file at {path!r}")
    return compile_spec(mujoco.MjSpec.from_file(path), sim_dt, movable_com)


@contextlib.contextmanager
def mujoco_warnings_as_python():
    """While active, MuJoCo's warnings become Python warnings instead of stdout lines and a
    MUJOCO_LOG.TXT in the working directory, and `settotalmass`'s deprecation is dropped (for
    a parser that compiles a scene itself, as Genesis does: compile_spec applies it properly)."""
    import mujoco

    def forward(message: str) -> None:
        if "settotalmass" not in message:
            warnings.warn(f"MuJoCo: {message}", stacklevel=2)

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(forward)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def compile_spec(spec: Any, sim_dt: float | None = None, movable_com: bool = False) -> Any:
    """Compile an MjSpec with timestep sim_dt (the spec's own if None).

    A `<compiler settotalmass>` (Gymnasium's half_cheetah.xml has one) is applied after
    compiling, by mj_setTotalmass and mj_setConst, as MuJoCo 4 advises: compiling the
    deprecated attribute itself warns, and MjModel.from_xml_path also writes the warning
    to MUJOCO_LOG.TXT in the working directory.

    With movable_com, no body is compiled as one of MuJoCo's "simple" bodies (COM at
    the frame origin, a diagonal block of the mass matrix), so that a `body_com` write
    is exact: the spec is compiled once with every moving body's COM 1 mm off, which
    gives the general sparsity, then the exact inertials are written back and the
    derived constants recomputed.
    """
    import mujoco

    total_mass = spec.compiler.settotalmass
    spec.compiler.settotalmass = -1.0  # MuJoCo's "unset"
    exact = spec.compile()
    if total_mass > 0:
        mujoco.mj_setTotalmass(exact, total_mass)
        mujoco.mj_setConst(exact, mujoco.MjData(exact))
    model = exact
    if movable_com:
        for i, body in enumerate(spec.bodies):
            if i and exact.body_mass[i] > 0:
                body.explicitinertial = True
                body.mass, body.inertia = exact.body_mass[i], exact.body_inertia[i]
                body.ipos, body.iquat = exact.body_ipos[i] + (1e-3, 0.0, 0.0), exact.body_iquat[i]
        # explicit inertials count even where the scene says inertiafromgeom="true"
        spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_AUTO
        model = spec.compile()
        model.body_ipos[:] = exact.body_ipos
        model.body_sameframe[1:] = 0  # mjSAMEFRAME_NONE: always transform to the COM frame
        model.body_simple[:] = 0
        model.dof_simplenum[:] = 0
        mujoco.mj_setConst(model, mujoco.MjData(model))
    if sim_dt is not None:
        model.opt.timestep = sim_dt
    return model


class SimBackend(abc.ABC):
    """num_envs copies of one scene, stepped together; see the module docstring."""

    name: str = "abstract"

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize: Iterable[str] = (),
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise ArgumentError(f"num_envs: expected a positive int, got {num_envs!r}")
        if num_envs < 1:
            raise ArgumentError(f"num_envs: expected a positive int, got {num_envs}")
        if (
            isinstance(sim_dt, bool)
            or not isinstance(sim_dt, (int, float))
            or not np.isfinite(sim_dt)
            or sim_dt <= 0
        ):
            raise ArgumentError(f"sim_dt: expected a positive finite number, got {sim_dt!r}")
        if device is not None:
            checked_device(device)
        if num_envs > _MEMORY_CHECK_FROM:
            check_memory(scene, int(num_envs), sim_dt, device)
        self.scene = os.fspath(scene)
        self.num_envs = int(num_envs)
        self.dt = float(sim_dt)
        self._closed = False
        self._materialized = False
        if isinstance(randomize, str):
            randomize = (randomize,)
        self._requested_dr = tuple(randomize)
        self._dr_compiled: dict[str, torch.Tensor] = {}  # compiled DR values on the device, for checks

    # bumped whenever the engine moves the memory its hot path uses (e.g. a model field made
    # per env on its first DR write): a CUDA graph recorded before then is stale
    graph_epoch: int = 0

    # ---- metadata (cold path) ---------------------------------------------

    info: SceneInfo
    device: torch.device

    @property
    def nq(self) -> int:
        return self.info.nq

    @property
    def nv(self) -> int:
        return self.info.nv

    @property
    def nu(self) -> int:
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

    @abc.abstractmethod
    def get_capabilities(self) -> Capabilities:
        """The backend's features, device, dtype and determinism."""

    def get_dr_capabilities(self) -> dict[str, DRTerm]:
        """The DR terms this backend can write per env, by name."""
        return dict(self._dr_specs)

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
        ctrl = self._checked_rows(ctrl, "ctrl", self.num_envs, self.nu, finite=not self._sync_free)
        if nsteps.__class__ is not int or nsteps < 1:
            raise ArgumentError(f"nsteps: expected a positive int, got {nsteps!r}")
        if self._sync_free:
            bad = ~torch.isfinite(ctrl).all(1)
            ctrl = ctrl.masked_fill(bad[:, None], 0.0)
            self._nonfinite_input |= bad
        self._step(ctrl, nsteps)

    def step_unchecked(self, ctrl: torch.Tensor, nsteps: int) -> None:
        """step_tensor without its argument checks, for a caller that made its arguments
        itself: ctrl a finite (num_envs, nu) tensor in the backend's dtype on its device,
        nsteps a positive int. The env's fast path on the CPU engine, where those checks
        cost as much as a small model's physics; a wrong argument is undefined behaviour."""
        self._ready()
        self._step(ctrl, nsteps)

    def set_state_unchecked(self, env_ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """set_state_tensor without its argument checks, for a caller that made its
        arguments itself: env_ids a sorted int64 tensor of distinct ids, qpos (len(ids), nq)
        and qvel (len(ids), nv) finite, in the backend's dtype on its device."""
        self._ready()
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
        ids, order = self._checked_ids(env_ids)
        qpos = self._checked_rows(qpos, "qpos", len(ids), self.nq)
        qvel = self._checked_rows(qvel, "qvel", len(ids), self.nv)
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
        if mask.__class__ is not torch.Tensor or mask.dtype != torch.bool or mask.shape != (self.num_envs,):
            raise ArgumentError(
                f"mask: expected a bool torch.Tensor of shape ({self.num_envs},), "
                f"got {type(mask).__name__} {getattr(mask, 'dtype', '')} {tuple(getattr(mask, 'shape', ()))}"
            )
        if mask.device != self.device:
            raise ArgumentError(f"mask: expected a tensor on {self.device}, got {mask.device}")
        qpos = self._checked_rows(qpos, "qpos", self.num_envs, self.nq, finite=not self._sync_free)
        qvel = self._checked_rows(qvel, "qvel", self.num_envs, self.nv, finite=not self._sync_free)
        if self._sync_free:  # (checked rows are in the backend's dtype: an overflow is an inf)
            finite = torch.isfinite(qpos).all(1) & torch.isfinite(qvel).all(1)
            self._nonfinite_input |= mask & ~finite
        self._set_state_mask(mask, qpos, qvel)

    def pop_diverged(self) -> torch.Tensor:
        """(num_envs,) bool: envs whose physics diverged since the last call, left
        non-finite or reset by the engine itself (as MuJoCo does on a bad state), or
        that were handed a non-finite ctrl or state on a sync_free backend."""
        self._ready()
        diverged = self._pop_diverged()
        if self._sync_free:
            diverged = diverged | self._nonfinite_input
            self._nonfinite_input.zero_()
        return diverged

    @functools.cached_property
    def _sync_free(self) -> bool:
        return self._capabilities.sync_free

    @functools.cached_property
    def _nonfinite_input(self) -> torch.Tensor:
        """(num_envs,) envs handed a non-finite ctrl or state since the last pop_diverged."""
        return torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)

    def get_body_views(self, body_ids: Any) -> BodyViews:
        """World-frame poses and velocities of the given bodies, (N, B, ...)."""
        self._ready()
        self._require("body_views")
        return self._body_views(self._checked_object_ids(body_ids, "body"))

    def get_sensor_view(self, name: str) -> torch.Tensor:
        """Live (num_envs, dim) view of the named sensor's output."""
        self._ready()
        sensor = int(self.find("sensor", name)[0])
        self._require("sensors")
        return self._sensor_view(sensor)

    def get_contact_forces(self, body_ids: Any) -> torch.Tensor:
        """Net contact force on each body in the world frame, (N, B, 3).

        Forces are those of the last physics step.
        """
        self._ready()
        self._require("contact_forces")
        return self._contact_forces(self._checked_object_ids(body_ids, "body"))

    def get_site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Translational and rotational world-frame Jacobians of a site, (N, 3, nv) each."""
        self._ready()
        self._require("site_jacobian")
        return self._site_jacobian(int(self._checked_object_ids([site_id], "site")[0]))

    def apply_body_wrench(self, body_ids: Any, force: torch.Tensor, torque: torch.Tensor) -> None:
        """World-frame force and torque at each body's COM, for the next step only.

        force and torque are (num_envs, B, 3); a second call before the step
        replaces the first. A NaN or inf raises ArgumentError, except on a sync-free
        backend, which checks on the device and gives that env no wrench.
        """
        self._ready()
        self._require("body_wrench")
        ids = self._checked_object_ids(body_ids, "body")
        sync_free = self._capabilities.sync_free
        force = self._checked_array(force, "force", (self.num_envs, len(ids), 3), finite=not sync_free)
        torque = self._checked_array(torque, "torque", (self.num_envs, len(ids), 3), finite=not sync_free)
        if sync_free:  # checked on the device: an env whose wrench is not finite gets none
            finite = (torch.isfinite(force) & torch.isfinite(torque)).flatten(1).all(1)[:, None, None]
            force, torque = torch.where(finite, force, 0.0), torch.where(finite, torque, 0.0)
        self._apply_body_wrench(ids, force, torque)

    def get_mj_field(self, name: str) -> torch.Tensor:
        """MuJoCo's mjData field `name` (one of MJ_FIELDS) for every env, (N, ...), a copy
        in the backend's float dtype.

        Values are those at the current state, as `mj_forward` then
        `mj_rnePostConstraint` compute them (not one substep behind, as after
        `mj_step`), with the controls of the last step.
        """
        self._ready()
        if name not in MJ_FIELDS:
            raise unknown_name("MuJoCo field", name, MJ_FIELDS)
        self._require("mj_fields")
        return self._mj_field(name)

    # ---- height scans ---------------------------------------------------------

    def get_height_scan(self, body_id: int, offsets: torch.Tensor) -> torch.Tensor:
        """Terrain height (world z, m) at points around a body, (N, P), in the backend's dtype
        on its device.

        The points lie at `offsets` (P, 2), metres, in the body's yaw frame (x along its
        heading projected on the ground, y to its left), each scanned by a vertical ray cast
        by the engine from SCAN_ABOVE m above the body's origin down to SCAN_BELOW m below
        it, onto the geoms of group TERRAIN_GROUP. A ray that hits none reports the bottom
        of its range (body z - SCAN_BELOW). On a `sync_free` backend nothing is read on the
        host; offsets are then not checked for NaN (a NaN ray hits nothing).
        """
        self._check_open()
        self._require("height_scan")
        self._ready()
        body = int(self._checked_object_ids([body_id], "body")[0])
        if offsets.__class__ is not torch.Tensor or offsets.ndim != 2 or offsets.shape[1] != 2:
            raise ArgumentError(
                f"offsets: expected a (P, 2) torch.Tensor, got {type(offsets).__name__} "
                f"{tuple(getattr(offsets, 'shape', ()))}"
            )
        offsets = self._checked_array(offsets, "offsets", tuple(offsets.shape), finite=not self._sync_free)
        views = self._body_views(np.array([body]))
        pos, quat = views.pos[:, 0], views.quat[:, 0]
        w, x, y, z = quat.unbind(-1)
        yaw = torch.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        cos, sin = torch.cos(yaw)[:, None], torch.sin(yaw)[:, None]
        dx, dy = offsets[:, 0].to(pos.dtype), offsets[:, 1].to(pos.dtype)
        top = (pos[:, 2] + SCAN_ABOVE)[:, None].expand(-1, len(offsets))
        origins = torch.stack(
            (pos[:, :1] + cos * dx - sin * dy, pos[:, 1:2] + sin * dx + cos * dy, top), -1
        )  # (N, P, 3)
        depth = self._cast_down(origins.contiguous())
        reach = SCAN_ABOVE + SCAN_BELOW
        hit = (depth >= 0) & (depth <= reach)
        return top - torch.where(hit, depth, torch.full_like(depth, reach))

    # ---- mocap bodies --------------------------------------------------------

    @property
    def nmocap(self) -> int:
        """The number of mocap bodies (MJCF `<body mocap="true">`) in the scene."""
        return len(self.info.mocap_body)

    def get_mocap_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Live (N, nmocap, 3) positions and (N, nmocap, 4) wxyz quaternions of the mocap
        bodies, world frame, in mocap order (`info.mocap_body`). Write them through
        set_mocap_pose_tensor*, which keeps derived quantities current."""
        self._check_open()
        self._require("mocap")  # before materializing: a backend without it refuses at once
        self._ready()
        return self._mocap_views()

    def set_mocap_pose_tensor(self, env_ids: Any, pos: torch.Tensor, quat: torch.Tensor) -> None:
        """Move the mocap bodies of the selected envs to pos (len(env_ids), nmocap, 3) and
        quat (len(env_ids), nmocap, 4, wxyz, normalized by the engine); every other row
        stays bit-identical, and derived quantities (body poses) are current on return.
        A set_state_tensor of an env puts its mocap bodies back where the scene has them."""
        self._check_open()
        self._require("mocap")  # before materializing: a backend without it refuses at once
        self._ready()
        ids, order = self._checked_ids(env_ids)
        pos = self._checked_array(pos, "pos", (len(ids), self.nmocap, 3))
        quat = self._checked_array(quat, "quat", (len(ids), self.nmocap, 4))
        if not bool((quat.norm(dim=-1) > 1e-9).all()):
            raise ArgumentError("quat: a quaternion has zero norm")
        if order is not None:
            pos, quat = pos[order], quat[order]
        rows = ids.to(self.device)
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[rows] = True
        full_pos, full_quat = self._mocap_views()
        full_pos, full_quat = full_pos.clone(), full_quat.clone()
        full_pos[rows], full_quat[rows] = pos.to(full_pos.dtype), quat.to(full_quat.dtype)
        if len(ids):
            self._set_mocap_mask(mask, full_pos, full_quat)

    def set_mocap_pose_tensor_mask(self, mask: Any, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """As set_mocap_pose_tensor, for the envs where `mask` (num_envs,) is True, with
        static shapes: pos (num_envs, nmocap, 3) and quat (num_envs, nmocap, 4) hold a row
        for every env, and rows outside the mask are ignored. Returns the (num_envs,)
        mask of the rows written: on a `sync_free` backend, which reads nothing on the
        host, a masked row with NaN, inf or a zero quaternion is left unwritten and
        cleared there; elsewhere it raises ArgumentError and nothing is written."""
        self._check_open()
        self._require("mocap")  # before materializing: a backend without it refuses at once
        self._ready()
        if mask.__class__ is not torch.Tensor or mask.dtype != torch.bool or mask.shape != (self.num_envs,):
            raise ArgumentError(
                f"mask: expected a bool torch.Tensor of shape ({self.num_envs},), "
                f"got {type(mask).__name__} {getattr(mask, 'dtype', '')} {tuple(getattr(mask, 'shape', ()))}"
            )
        pos = self._checked_array(pos, "pos", (self.num_envs, self.nmocap, 3), finite=False)
        quat = self._checked_array(quat, "quat", (self.num_envs, self.nmocap, 4), finite=False)
        mask = mask.to(self.device)
        good = (torch.isfinite(pos).flatten(1).all(1) & torch.isfinite(quat).flatten(1).all(1)) & (
            quat.norm(dim=-1) > 1e-9
        ).all(1)
        if not self._sync_free:
            if not bool((good | ~mask).all()):
                raise ArgumentError("pos, quat: a masked row has NaN, inf or a zero quaternion")
            if bool(mask.any()):
                self._set_mocap_mask(mask, pos, quat)
            return mask
        mask = mask & good
        self._set_mocap_mask(mask, pos, quat)
        return mask

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
        ids, order = self._checked_ids(torch.arange(self.num_envs) if env_ids is None else env_ids)
        portable = 1 + self.nq + self.nv
        if state.__class__ is not torch.Tensor:
            raise ArgumentError(
                f"state: expected a torch.Tensor ({len(ids)}, {self.physics_state_size}), got {type(state).__name__}"
            )
        width = state.shape[-1] if isinstance(state, torch.Tensor) and state.ndim == 2 else -1
        if width not in (portable, self.physics_state_size):
            raise ArgumentError(
                f"state: expected ({len(ids)}, {self.physics_state_size}) or "
                f"({len(ids)}, {portable}), got {tuple(getattr(state, 'shape', ()))}"
            )
        state = self._checked_rows(state, "state", len(ids), width)
        if order is not None:
            state = state[order]
        if len(ids):
            self._set_physics_state(ids, state)

    @property
    def physics_state_size(self) -> int:
        return 1 + self.nq + self.nv

    # ---- domain randomization ----------------------------------------------

    def set_dr_param(self, term: str, env_ids: Any, values: torch.Tensor) -> None:
        """Write a DR term's values (len(env_ids), *term.shape) for those envs.

        Values outside the term's domain (non-finite, below its minimum, a mass
        that had some at 0) raise ArgumentError naming `values`; nothing is written.
        """
        self._ready()
        spec = self._checked_term(term)
        ids, order = self._checked_ids(env_ids)
        values = self._checked_array(values, "values", (len(ids), *spec.shape), finite=False)
        if order is not None:
            values = values[order]
        rows = ids.to(self.device)
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[rows] = True
        full = torch.zeros(self.num_envs, *spec.shape, dtype=values.dtype, device=self.device)
        full[rows] = values
        self._refuse_bad_rows(term, mask, full)
        if len(ids):
            self._set_dr_mask(term, mask, full)

    def set_dr_param_mask(self, term: str, mask: Any, values: torch.Tensor) -> torch.Tensor:
        """Write a DR term's values (num_envs, *term.shape) for the envs where `mask`
        (num_envs,) is True; the other rows of `values` are ignored. Returns the
        (num_envs,) bool mask of the rows written.

        The static-shape form of set_dr_param, for the hot path: on a backend whose
        capabilities say `sync_free`, it never waits for the device. Arguments of
        the wrong type, shape or dtype raise, naming them, and change nothing. A
        masked row whose values leave the term's domain (see set_dr_param) is
        refused: where host reads are free (sync_free False) the call raises
        ArgumentError and writes nothing; a sync-free backend, which cannot raise
        on a device value without waiting for it, leaves that row unwritten and
        clears it in the returned mask.
        """
        self._ready()
        spec = self._checked_term(term)
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != (self.num_envs,):
            got = (
                f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask).__name__
            )
            raise ArgumentError(f"mask: expected a bool tensor of shape ({self.num_envs},), got {got}")
        values = self._checked_array(values, "values", (self.num_envs, *spec.shape), finite=False)
        mask = mask.to(self.device)
        if not self._capabilities.sync_free:
            self._refuse_bad_rows(term, mask, values)
            if bool(mask.any()):
                self._set_dr_mask(term, mask, values)
            return mask
        for rows, _ in self._dr_problems(term, values):
            mask = mask & ~rows
        self._set_dr_mask(term, mask, values)
        return mask

    def check_dr_param(self, term: str, values: torch.Tensor) -> None:
        """Raise ArgumentError naming `values` if a row of values (n, *term.shape) is one
        that set_dr_param refuses; writes nothing. Reads the device: for the cold path
        (DR checks its configured ranges with it before anything runs)."""
        self._check_open()
        spec = self._checked_term(term)
        n = len(values) if isinstance(values, torch.Tensor) and values.ndim else 1
        values = self._checked_array(values, "values", (n, *spec.shape), finite=False)
        self._refuse_bad_rows(term, torch.ones(n, dtype=torch.bool, device=self.device), values)

    def get_dr_param(self, term: str, env_ids: Any = None) -> torch.Tensor:
        """Current values of a DR term, (len(env_ids), *term.shape), float64 on the CPU."""
        self._ready()
        self._checked_term(term)
        values = self._dr_values(term)
        if env_ids is not None:
            ids, order = self._checked_ids(env_ids)
            if order is not None:  # give rows back in the caller's order
                ids = ids[torch.argsort(order)]
            values = values[ids.to(values.device)]
        return values.to("cpu", torch.float64, copy=True)

    def get_dr_default(self, term: str) -> torch.Tensor:
        """The compiled value of a DR term, (*term.shape); never a randomized one."""
        self._check_open()
        self._checked_term(term)
        return self._dr_default(term)

    # ---- validation (one place) --------------------------------------------

    @functools.cached_property
    def _capabilities(self) -> Capabilities:
        return self.get_capabilities()

    @functools.cached_property
    def _dtype(self) -> torch.dtype:
        return self._capabilities.dtype

    @functools.cached_property
    def _nonfinite(self) -> str:
        return f"contains NaN or inf, or a value beyond {str(self._dtype).removeprefix('torch.')}'s range"

    def _require(self, feature: str) -> None:
        if not getattr(self._capabilities, feature):
            raise CapabilityError(f"the {self.name} backend does not support {feature}")

    @functools.cached_property
    def _dr_specs(self) -> Mapping[str, DRTerm]:
        return dict(self._dr_terms())

    def _checked_term(self, term: str) -> DRTerm:
        terms = self._dr_specs
        if term not in terms:
            if term in DR_TERMS:
                raise CapabilityError(f"the {self.name} backend cannot randomize {term!r}")
            raise unknown_name("DR term", term, DR_TERMS)
        spec = terms[term]
        if spec.declare and term not in self._requested_dr:
            raise CapabilityError(
                f"the {self.name} backend must be told of {term!r} at construction: "
                f"pass randomize=[{term!r}, ...]"
            )
        return spec

    def _validate_randomize(self) -> None:
        """Check `randomize=` against the backend's terms (call from __init__)."""
        terms = self._dr_specs
        for term in self._requested_dr:
            if term not in DR_TERMS:
                raise unknown_name("DR term in randomize", term, DR_TERMS)
            if term not in terms:
                raise CapabilityError(f"the {self.name} backend cannot randomize {term!r}")

    def _checked_rows(self, x: Any, name: str, n: int, width: int, finite: bool = True) -> torch.Tensor:
        """A float tensor (n, width) on the backend device, in the backend's dtype; with
        `finite`, checked on the host to hold no NaN or inf and nothing beyond that dtype's range."""
        if x.__class__ is not torch.Tensor:
            raise ArgumentError(f"{name}: expected a torch.Tensor ({n}, {width}), got {type(x).__name__}")
        if x.shape != (n, width):
            raise ArgumentError(f"{name}: expected shape ({n}, {width}), got {tuple(x.shape)}")
        if x.dtype is not self._dtype:
            if not x.dtype.is_floating_point:
                raise ArgumentError(f"{name}: expected a float tensor, got {x.dtype}")
            x = x.to(self._dtype)  # a value beyond the dtype's range becomes inf here, and is refused
        if x.device != self.device:
            raise ArgumentError(f"{name}: expected a tensor on {self.device}, got {x.device}")
        if finite and not self._all_finite(x):
            raise ArgumentError(f"{name}: {self._nonfinite}")
        return x

    def _checked_array(self, x: Any, name: str, shape: tuple[int, ...], finite: bool = True) -> torch.Tensor:
        """A float tensor of that shape, on the backend device; with `finite`, checked
        on the host to hold no NaN or inf."""
        if not isinstance(x, torch.Tensor):
            raise ArgumentError(f"{name}: expected a torch.Tensor {shape}, got {type(x).__name__}")
        if tuple(x.shape) != shape:
            raise ArgumentError(f"{name}: expected shape {shape}, got {tuple(x.shape)}")
        if not x.dtype.is_floating_point:
            raise ArgumentError(f"{name}: expected a float tensor, got {x.dtype}")
        x = x.to(self.device)
        if finite and not bool(torch.isfinite(x.to(self._dtype)).all()):
            raise ArgumentError(f"{name}: {self._nonfinite}")
        return x

    def _dr_problems(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """(rows, what is wrong) for each rule of the term (`dr_rules.problems`) and of the
        engine (`_dr_limits`) that values (n, *shape) break; on the device, no host read."""
        if term not in self._dr_compiled:
            self._dr_compiled[term] = self._dr_default(term).to(self.device)
        values = values.to(self._dtype)  # a value beyond the backend's range becomes inf: refused
        return problems(term, values, self._dr_compiled[term]) + self._dr_limits(term, values)

    def _refuse_bad_rows(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """Raise ArgumentError naming `values` if a masked row breaks a rule (a host read)."""
        for rows, message in self._dr_problems(term, values):
            if bool((rows & mask).any()):
                raise ArgumentError(f"values: {message}")

    def _all_finite(self, x: torch.Tensor) -> bool:
        return bool(torch.isfinite(x).all())

    @property
    def _expected_ids(self) -> str:
        return f"env_ids: expected a 1-D sequence or tensor of integer ids in [0, {self.num_envs})"

    def _checked_ids(self, env_ids: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Sorted unique int64 CPU ids in range, and the sorting order (None if sorted)."""
        if isinstance(env_ids, (list, tuple)) and not env_ids:
            env_ids = torch.zeros(0, dtype=torch.int64)  # torch reads [] as float32
        if env_ids.__class__ is np.ndarray and env_ids.dtype == np.int64 and env_ids.ndim == 1:
            a = env_ids  # NumPy ids (the env's own on the CPU engine): no round trip through torch
            ids = torch.from_numpy(np.ascontiguousarray(a))
        else:
            try:
                ids = torch.as_tensor(env_ids)
            except (TypeError, ValueError, RuntimeError):
                raise ArgumentError(f"{self._expected_ids}, got {env_ids!r}") from None
            if ids.ndim != 1 or ids.dtype not in _INT_DTYPES:
                raise ArgumentError(
                    f"{self._expected_ids}, got {type(env_ids).__name__} of {ids.dtype} {tuple(ids.shape)}"
                )
            ids = ids.to("cpu", torch.int64)
            a = ids.numpy()  # checks in NumPy: a few microseconds less per call than in torch
        increasing = len(a) < 2 or bool((a[1:] > a[:-1]).all())  # sorted and unique
        if len(a) and (
            (a[0] < 0 or a[-1] >= self.num_envs) if increasing else (a.min() < 0 or a.max() >= self.num_envs)
        ):
            raise ArgumentError(f"env_ids: expected ids in [0, {self.num_envs}), got {a.tolist()}")
        if increasing:
            return ids, None
        if len(np.unique(a)) != len(a):
            raise ArgumentError(f"env_ids: ids must be unique, got {a.tolist()}")
        order = torch.from_numpy(np.argsort(a))
        return ids[order], order

    def _checked_object_ids(self, ids: Any, kind: str) -> np.ndarray:
        count = len(self.info.names[kind])
        if ids.__class__ is np.ndarray and ids.ndim == 1 and ids.dtype == np.int64:  # a task's own ids
            if ids.size and (ids.min() < 0 or ids.max() >= count):
                raise ArgumentError(f"{kind}_ids: expected ids in [0, {count}), got {ids.tolist()}")
            return ids
        arr = np.asarray(ids.cpu() if isinstance(ids, torch.Tensor) else ids)
        if arr.ndim == 0:
            arr = arr[None]
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ArgumentError(f"{kind}_ids: expected 1-D integer ids, got {arr.dtype} {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() >= count):
            raise ArgumentError(f"{kind}_ids: expected ids in [0, {count}), got {arr.tolist()}")
        return arr.astype(np.int64)

    # ---- engine hooks -------------------------------------------------------

    @abc.abstractmethod
    def _materialize(self) -> None: ...

    @abc.abstractmethod
    def _close(self) -> None: ...

    @abc.abstractmethod
    def _step(self, ctrl: torch.Tensor, nsteps: int) -> None: ...

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

    @abc.abstractmethod
    def _dr_terms(self) -> Mapping[str, DRTerm]: ...

    @abc.abstractmethod
    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """Write values (num_envs, *shape) where mask (rows checked valid), with what follows
        them (`dr_rules`); on a sync-free backend, without reading the device."""

    @abc.abstractmethod
    def _dr_values(self, term: str) -> torch.Tensor:
        """Every env's current values of a term, (num_envs, *shape), on the device."""

    @abc.abstractmethod
    def _dr_default(self, term: str) -> torch.Tensor: ...

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """(rows, message) for values the engine cannot take beyond the table's rules."""
        return []

    def _pop_diverged(self) -> torch.Tensor:
        s = self._state_views()
        return ~(torch.isfinite(s["qpos"]).all(1) & torch.isfinite(s["qvel"]).all(1))

    def _body_views(self, body_ids: np.ndarray) -> BodyViews:
        raise CapabilityError(f"the {self.name} backend does not support body_views")

    def _sensor_view(self, sensor_id: int) -> torch.Tensor:
        raise CapabilityError(f"the {self.name} backend does not support sensors")

    def _contact_forces(self, body_ids: np.ndarray) -> torch.Tensor:
        raise CapabilityError(f"the {self.name} backend does not support contact_forces")

    def _site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        raise CapabilityError(f"the {self.name} backend does not support site_jacobian")

    def _apply_body_wrench(self, body_ids: np.ndarray, force: torch.Tensor, torque: torch.Tensor) -> None:
        raise CapabilityError(f"the {self.name} backend does not support body_wrench")

    def _mj_field(self, name: str) -> torch.Tensor:
        raise CapabilityError(f"the {self.name} backend does not support mj_fields")

    def _cast_down(self, origins: torch.Tensor) -> torch.Tensor:
        """Distances (N, P) from origins (N, P, 3) down (-z) to the first geom of TERRAIN_GROUP,
        -1 where none; in the backend's dtype, on its device."""
        raise CapabilityError(f"the {self.name} backend does not support height_scan")

    def _mocap_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        raise CapabilityError(f"the {self.name} backend does not support mocap")

    def _set_mocap_mask(self, mask: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> None:
        """Write pos/quat (num_envs, nmocap, ...) where mask, then bring derived quantities
        up to date; on a sync-free backend, without reading the device."""
        raise CapabilityError(f"the {self.name} backend does not support mocap")
