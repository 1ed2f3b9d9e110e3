"""The `genesis` backend: Genesis's rigid solver, batched on CUDA or on the CPU.

Model: the scene's MJCF is loaded twice. MuJoCo compiles it for the metadata
(`backend.info`: names, ids, qpos/dof addresses, in MJCF order), and Genesis
parses the same file into one rigid entity that `materialize()` builds with
`n_envs=num_envs`. Genesis keeps MuJoCo's body, joint and dof order, and its
free joint has MuJoCo's layout (qpos [p, wxyz], qvel [v world, w body]); the
constructor and `materialize()` check both, so no conversion is needed and
none is done. Timestep and gravity come from the scene; the integrator is
MuJoCo's where Genesis has it (Euler, implicitfast; implicit and RK4 map to
implicitfast, declared in `Capabilities.differences` and warned of at
construction), and Genesis runs in its MuJoCo-compatibility mode (MuJoCo's
contact model and solver defaults, no default armature, solref 0.02). Features
Genesis would ignore or integrate differently are refused at construction with
a CapabilityError naming the MJCF attribute: body gravcomp, a joint springref
away from qpos0, a ball joint after another joint in one body.

Actuators are MuJoCo's general actuators with a joint transmission, affine
bias and no activation: motors (force = gear * ctrl) and position servos
(force = kp * (ctrl - q) - kv * qdot). Genesis computes them itself from the
same gain and bias (its POSITION control mode), inside the step, with the
servo's kv implicit as in MuJoCo; `ctrl` is clamped to ctrlrange first, as
MuJoCo does. The `ctrl` view keeps the value given, unclamped, as MjData does.

Device and dtype: one Genesis per process (`gs.init`), on CUDA or the CPU,
float64 on the CPU and float32 on CUDA unless `precision=` says otherwise;
every view and result (time included) has that dtype. A second backend in the
same process must ask for the same device and precision, or it raises
ArgumentError naming them. On CUDA, Genesis's kernel compiler (Quadrants)
always uses the process's CUDA device 0, so `device="cuda:k"` with k > 0 is
refused: to run on GPU k, start the process with CUDA_VISIBLE_DEVICES=k and
pass device="cuda".

Views: `qpos` and `qvel` from `get_state_views()` are zero-copy torch views of
Genesis's own state (strided: Genesis stores dofs first, envs second), live on
the device with no host round trip. `time` and `ctrl` are this backend's own
tensors, updated in place by every step and reset. Body views, contact forces,
Jacobians, DR reads and `get_physics_state()` are fresh copies. Writing into
the qpos/qvel views changes the state, but derived quantities follow only at
the next step; `set_state_tensor` is the way to set a state.

Freshness: Genesis, like `mj_step`, leaves link poses one integration behind
after a step in MuJoCo-compatibility mode; body views and Jacobians run its
forward kinematics first when they are stale, so they describe the current
state. Contact forces are those of the last physics step (cleared by a reset).

Determinism: on the CPU (one Quadrants thread), the same inputs give
bit-identical trajectories, and rows are independent. A restore through
`set_physics_state` is exact in qpos and qvel (float64 on the CPU), but
Genesis's solver warm start is cleared, so the next steps may differ from the
original run in the last bits. On CUDA runs are reproducible only to float
tolerance (atomic reductions).

Capability differences from the mujoco backend: Genesis does not parse MJCF
sensors, so the backend computes jointpos, jointvel, framepos and framequat
(of sites and bodies, world frame) from the state, per call (copies); other
sensor types raise CapabilityError. `geom_friction` writes the sliding
coefficient per env (Genesis keeps torsional and rolling global, so their
columns must stay at the compiled values where a geom's condim makes them
matter); geom `margin` is ignored by Genesis. Genesis keeps the contact
solver parameters (solref, solimp) and mocap bodies' poses the same for every
env, so the `geom_solref` and `geom_solimp` terms are refused and `mocap` is
declared False (mocap bodies stay where the scene puts them). `physics_state_size` is
1 + nq + 3 nv + 1 (time, qpos, qvel, then dof accelerations and the constraint
solver's warm start). DR terms other than `geom_friction` and `gravity` are
stored per env only when named in `randomize=` (Genesis must know before it
builds); `pop_diverged` flags envs past MuJoCo's mjMAXVAL, since Genesis does
not reset them itself.

DR writes follow the rules of `dr_rules` on per-env float64 copies of the
MuJoCo model fields (mass with inertia, gainprm and biasprm for kp and kd), the
values the backend reports; every env's values of the changed fields then go
to Genesis's setters with the full env index, which needs no host read.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import genesis as gs
import mujoco
import numpy as np
import torch
from genesis.utils import array_class
from genesis.utils.misc import qd_to_torch

from unienv.backends.base import (
    BodyViews,
    Capabilities,
    DRTerm,
    SceneInfo,
    SimBackend,
    load_mjmodel,
    mujoco_warnings_as_python,
)
from unienv.backends.dr_rules import RULES, ModelDR
from unienv.errors import ArgumentError, CapabilityError

# DR term -> the Genesis batch flag it needs (None: Genesis stores it per env anyway); the terms
# not here (geom_solref, geom_solimp: Genesis keeps geom solver parameters for all envs) it refuses
_BATCH_FLAG = {
    "body_mass": "batch_links_info",
    "body_com": "batch_links_info",
    "geom_friction": None,
    "dof_damping": "batch_dofs_info",
    "dof_armature": "batch_dofs_info",
    "dof_frictionloss": "batch_dofs_info",
    "actuator_kp": "batch_dofs_info",
    "actuator_kd": "batch_dofs_info",
    "gravity": None,
}

_MAXVAL = 1e10  # MuJoCo's mjMAXVAL: a larger qpos or qvel entry is a diverged simulation
_ERRORS = array_class.ErrorCode
# Genesis's per-env error bits that mean a diverged env (not a capacity limit)
_NAN_ERRORS = int(_ERRORS.INVALID_CONTACT_NAN | _ERRORS.INVALID_FORCE_NAN | _ERRORS.INVALID_ACC_NAN)

_INTEGRATORS = {"euler": "Euler", "implicitfast": "implicitfast"}
# MuJoCo's integrator (mjtIntegrator) -> the closest Genesis has
_FROM_MUJOCO = {
    int(mujoco.mjtIntegrator.mjINT_EULER): "euler",
    int(mujoco.mjtIntegrator.mjINT_RK4): "implicitfast",
    int(mujoco.mjtIntegrator.mjINT_IMPLICIT): "implicitfast",
    int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast",
}


def _quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product of wxyz quaternions, (..., 4)."""
    aw, av, bw, bv = a[..., :1], a[..., 1:], b[..., :1], b[..., 1:]
    return torch.cat(
        [aw * bw - (av * bv).sum(-1, keepdim=True), aw * bv + bw * av + torch.cross(av, bv, dim=-1)], -1
    )


def _conj(q: torch.Tensor) -> torch.Tensor:
    """The inverse rotation of unit wxyz quaternions."""
    return torch.cat([q[..., :1], -q[..., 1:]], -1)


def _rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (..., 3) rotated by the wxyz quaternion q (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(u, v, dim=-1)
    return v + w * t + torch.cross(u, t, dim=-1)


# ---- Genesis, once per process -----------------------------------------------


def _headless_rendering() -> None:
    """Let scene.build() go on without an EGL context (headless GPU machines).

    Genesis always builds an offscreen rasterizer; physics does not need it and
    unienv renders with MuJoCo, so a failure there only turns it off.
    """
    from genesis.vis import rasterizer

    if getattr(rasterizer.Rasterizer.build, "_unienv", False):
        return
    original = rasterizer.Rasterizer.build

    def build(self: Any) -> None:
        try:
            original(self)
        except Exception:  # no usable EGL: keep the physics, drop Genesis's renderer
            self._renderer = None
            self.visualizer = self._context.visualizer if self._context is not None else None

    build._unienv = True  # type: ignore[attr-defined]
    rasterizer.Rasterizer.build = build


def _init_genesis(device: torch.device, precision: str) -> None:
    """gs.init once per process; later backends must agree with the first.

    `device` is "cpu" or "cuda:0" (see `GenesisBackend._resolve_device`). Genesis puts its
    torch tensors on torch's current CUDA device, so gs.init runs with device 0 current, where
    Quadrants runs the kernels, whatever device the caller made current.
    """
    want = gs.cuda if device.type == "cuda" else gs.cpu
    if gs._initialized:
        have = "64" if gs.np_float == np.float64 else "32"
        if torch.device(gs.device) != device or have != precision:
            raise ArgumentError(
                f"device/precision: Genesis is already initialised in this process on {gs.device} "
                f"with precision {have!r}; a second backend must use the same, got device={str(device)!r}, "
                f"precision={precision!r}"
            )
        return
    _headless_rendering()
    if device.type == "cuda":
        with torch.cuda.device(device):
            gs.init(backend=want, precision=precision, logging_level="warning")
    else:
        gs.init(backend=want, precision=precision, logging_level="warning")
    if gs.backend != want:  # Genesis falls back to the CPU without raising
        raise ArgumentError(f"device: Genesis could not start on {device}; it fell back to {gs.backend.name}")


# ---- the backend ---------------------------------------------------------------


class GenesisBackend(SimBackend):
    """Batched Genesis rigid-body scenes; see the module docstring."""

    name = "genesis"

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize: Iterable[str] = (),
        precision: str | None = None,
        integrator: str | None = None,
        rigid_options: Mapping[str, Any] | None = None,
    ):
        super().__init__(scene, num_envs, sim_dt, device=device, randomize=randomize)
        self.device = self._resolve_device(device)
        if precision is None:
            precision = "32" if self.device.type == "cuda" else "64"
        if precision not in ("32", "64"):
            raise ArgumentError(f"precision: expected '32' or '64', got {precision!r}")
        self._mj = model = load_mjmodel(scene, sim_dt)
        self.info = SceneInfo.from_mjmodel(model)
        self._check_actuators(model)
        self._check_features(model)
        self._differences: tuple[str, ...] = ()
        if integrator is None:
            integrator = _FROM_MUJOCO[int(model.opt.integrator)]
            scene_integrator = mujoco.mjtIntegrator(int(model.opt.integrator)).name[len("mjINT_") :].lower()
            if scene_integrator != integrator:
                self._differences = (
                    f"integrator: the scene asks for {scene_integrator}, which Genesis lacks; "
                    f"it runs {integrator} (pass integrator= to choose)",
                )
                warnings.warn(f"genesis backend, {self.scene}: {self._differences[0]}", stacklevel=2)
        if integrator not in _INTEGRATORS:
            raise ArgumentError(f"integrator: expected one of {sorted(_INTEGRATORS)}, got {integrator!r}")
        self._dr = ModelDR(model, self.device, torch.float64)
        self._friction0 = torch.as_tensor(model.geom_friction, dtype=torch.float64, device=self.device)
        # (ngeom, 2): where condim makes torsional and rolling friction matter
        self._rolling = torch.stack(
            [torch.as_tensor(model.geom_condim >= k, device=self.device) for k in (4, 6)], -1
        )
        self._validate_randomize()

        options = {
            "integrator": getattr(gs.integrator, _INTEGRATORS[integrator]),
            "enable_mujoco_compatibility": True,
            "constraint_timeconst": 0.02,  # MuJoCo's default solref[0]
        }
        for term in self._requested_dr:
            if _BATCH_FLAG[term]:
                options[_BATCH_FLAG[term]] = True
        extra = dict(rigid_options or {})
        _init_genesis(self.device, precision)
        try:  # validate every option now, on the cold path
            gs.options.RigidOptions(**{**options, **extra})
        except Exception as e:
            raise ArgumentError(f"rigid_options: not valid Genesis RigidOptions: {e}") from e
        self._rigid_options = {**options, **extra}
        self._dtype = gs.tc_float

    @staticmethod
    def _resolve_device(device: str | torch.device | None) -> torch.device:
        if device is None:
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ArgumentError(f"device: expected 'cpu', 'cuda' or None, got {device!r}") from e
        if dev.type == "cuda":
            if not torch.cuda.is_available():
                raise ArgumentError(
                    f"device: {device!r} requested but CUDA is not available; use 'cpu' or None"
                )
            if dev.index not in (None, 0):
                raise ArgumentError(
                    f"device: Genesis runs CUDA kernels on the process's CUDA device 0 only (Quadrants "
                    f"ignores the index), got {device!r}; to run on GPU k, start the process with "
                    "CUDA_VISIBLE_DEVICES=k and pass device='cuda'"
                )
            return torch.device("cuda", 0)
        if dev.type != "cpu":
            raise ArgumentError(f"device: the genesis backend runs on 'cpu' or 'cuda', got {device!r}")
        return dev

    def _check_actuators(self, m: mujoco.MjModel) -> None:
        """Genesis drives one joint per actuator with a fixed gain and an affine bias."""
        names = self.info.names["actuator"]
        joints = []
        for a in range(m.nu):
            if int(m.actuator_trntype[a]) != mujoco.mjtTrn.mjTRN_JOINT.value:
                raise ArgumentError(
                    f"scene: actuator {names[a]!r} has no joint transmission; genesis needs one"
                )
            if int(m.actuator_dyntype[a]) != mujoco.mjtDyn.mjDYN_NONE.value:
                raise ArgumentError(f"scene: actuator {names[a]!r} has activation dynamics; genesis has none")
            if int(m.actuator_gaintype[a]) != mujoco.mjtGain.mjGAIN_FIXED.value or int(
                m.actuator_biastype[a]
            ) not in (
                mujoco.mjtBias.mjBIAS_NONE.value,
                mujoco.mjtBias.mjBIAS_AFFINE.value,
            ):
                raise ArgumentError(f"scene: actuator {names[a]!r} needs a fixed gain and a none/affine bias")
            joint = int(m.actuator_trnid[a, 0])
            if int(m.jnt_type[joint]) not in (
                mujoco.mjtJoint.mjJNT_HINGE.value,
                mujoco.mjtJoint.mjJNT_SLIDE.value,
            ):
                raise ArgumentError(
                    f"scene: actuator {names[a]!r} drives a multi-dof joint; genesis needs 1 dof"
                )
            if joint in joints:
                raise ArgumentError(f"scene: two actuators drive joint {self.info.names['joint'][joint]!r}")
            joints.append(joint)

    def _check_features(self, m: mujoco.MjModel) -> None:
        """Refuse MJCF features that Genesis would ignore or simulate differently, naming them."""
        names, where = self.info.names, f"scene {self.scene!r}"
        hfields = np.flatnonzero(m.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
        if hfields.size:
            raise CapabilityError(
                f'{where}: heightfield geoms (MJCF <geom type="hfield">, e.g. terrain) '
                f"{[names['geom'][g] for g in hfields]}: the genesis backend does not parse them"
            )
        gravcomp = np.flatnonzero(m.body_gravcomp)
        if gravcomp.size:
            raise CapabilityError(
                f"{where}: body gravcomp (MJCF <body gravcomp>) on {[names['body'][b] for b in gravcomp]}: "
                "the genesis backend does not simulate it"
            )
        for j in range(m.njnt):
            one_qpos = (mujoco.mjtJoint.mjJNT_SLIDE.value, mujoco.mjtJoint.mjJNT_HINGE.value)
            if m.jnt_stiffness[j] > 0 and int(m.jnt_type[j]) in one_qpos:
                adr = int(m.jnt_qposadr[j])
                if m.qpos_spring[adr] != m.qpos0[adr]:
                    raise CapabilityError(
                        f"{where}: joint {names['joint'][j]!r} has springref (MJCF <joint springref>) "
                        "away from its qpos0: the genesis backend does not simulate it"
                    )
        for b in range(m.nbody):
            first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
            for j in range(first + 1, first + count):
                if int(m.jnt_type[j]) == mujoco.mjtJoint.mjJNT_BALL.value:
                    raise CapabilityError(
                        f"{where}: ball joint {names['joint'][j]!r} follows another joint in body "
                        f"{names['body'][b]!r}: the genesis backend integrates it wrongly; give it its own body"
                    )

    def get_capabilities(self) -> Capabilities:
        return Capabilities(
            backend="genesis",
            device=str(self.device),
            dtype=self._dtype,
            deterministic=self.device.type == "cpu",
            sync_free=True,
            differences=self._differences,
        )

    # ---- lifecycle ----------------------------------------------------------

    def _materialize(self) -> None:
        info, m = self.info, self._mj
        self._scene = gs.Scene(
            sim_options=gs.options.SimOptions(dt=self.dt, gravity=tuple(float(g) for g in info.gravity)),
            rigid_options=gs.options.RigidOptions(**self._rigid_options),
            profiling_options=gs.options.ProfilingOptions(show_FPS=False),
            show_viewer=False,
        )
        with mujoco_warnings_as_python():  # Genesis compiles the scene with MuJoCo itself
            self._entity = self._scene.add_entity(
                gs.morphs.MJCF(file=self.scene, default_armature=None, align=False)
            )
        self._scene.build(n_envs=self.num_envs)
        self._solver = sol = self._entity._solver
        self._map_layout()
        dev = gs.device

        # zero-copy views of Genesis's state, (num_envs, ...)
        self._qpos = qd_to_torch(sol.rigid_info.qpos, transpose=True, copy=False)
        self._qvel = qd_to_torch(sol.dyn_state.dofs.vel, transpose=True, copy=False)
        self._ctrl_pos = qd_to_torch(sol.dyn_state.dofs.ctrl_pos, transpose=True, copy=False)
        self._ctrl_mode = qd_to_torch(sol.dyn_state.dofs.ctrl_mode, transpose=True, copy=False)
        self._ctrl_force = qd_to_torch(sol.dyn_state.dofs.ctrl_force, transpose=True, copy=False)
        self._time = torch.zeros(self.num_envs, dtype=self._dtype, device=dev)
        self._errno = qd_to_torch(sol._errno, copy=False)  # Genesis's per-env error bits
        self._nan_envs = torch.zeros(self.num_envs, dtype=torch.bool, device=dev)
        self._ctrl = torch.zeros(self.num_envs, self.nu, dtype=self._dtype, device=dev)
        self._views = {"time": self._time, "qpos": self._qpos, "qvel": self._qvel, "ctrl": self._ctrl}

        # actuators: Genesis's POSITION mode computes gain * ctrl + bias(q, qdot) per dof
        act_joint = info.actuator_joint
        self._act_dofs = torch.as_tensor(info.joint_dof_adr[act_joint], device=dev)
        self._gear = torch.as_tensor(info.actuator_gear, dtype=self._dtype, device=dev)
        self._ctrl_lo = torch.as_tensor(info.ctrl_range[:, 0], dtype=self._dtype, device=dev)
        self._ctrl_hi = torch.as_tensor(info.ctrl_range[:, 1], dtype=self._dtype, device=dev)
        self._servo = torch.as_tensor(m.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE.value, device=dev)
        if self.nu:
            # Genesis folds a motor's ctrlrange into a force range, which a kp write would then cut;
            # ctrl is clamped here instead, and only the force limits the file states remain.
            lo, hi = self._force_range()
            dofs = self._act_dofs
            sol.set_dofs_force_range(lo, hi, dofs)  # every env
            # Genesis scales a servo's bias by gear once; MuJoCo's acts on gear * q and its force is geared again
            gear, bias = self._gear, torch.as_tensor(m.actuator_biasprm[:, :3], dtype=self._dtype, device=dev)
            sol.set_dofs_act_bias(gear * bias[:, 0], gear * gear * bias[:, 1], gear * gear * bias[:, 2], dofs)
            self._ctrl_mode[:, dofs] = int(gs.CTRL_MODE.POSITION)
            self._ctrl_pos[:, dofs] = 0.0

        self._wrench: tuple[torch.Tensor, ...] | None = None  # rows, links, force, torque
        self._all_envs = torch.arange(self.num_envs, device=dev)
        self._map_dr(dev)

    def _force_range(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-actuator force limits in joint units: gear * forcerange, then the joint's actfrcrange."""
        m, lo, hi = self._mj, [], []
        for a in range(m.nu):
            low, high = -np.inf, np.inf
            if m.actuator_forcelimited[a]:
                low, high = np.sort(m.actuator_gear[a, 0] * m.actuator_forcerange[a])
            j = int(m.actuator_trnid[a, 0])
            if m.jnt_actfrclimited[j]:
                low, high = np.clip([low, high], *m.jnt_actfrcrange[j])
            lo.append(low)
            hi.append(high)
        return (torch.tensor(x, dtype=self._dtype, device=gs.device) for x in (lo, hi))

    def _map_layout(self) -> None:
        """Map MJCF bodies and geoms to Genesis links and geoms; check qpos/dof order and free-joint layout."""
        m, ent = self._mj, self._entity
        joints = [j for j in ent.joints if j.n_qs > 0 or j.n_dofs > 0]
        gs_types = {
            mujoco.mjtJoint.mjJNT_FREE: gs.JOINT_TYPE.FREE,
            mujoco.mjtJoint.mjJNT_BALL: gs.JOINT_TYPE.SPHERICAL,
            mujoco.mjtJoint.mjJNT_SLIDE: gs.JOINT_TYPE.PRISMATIC,
            mujoco.mjtJoint.mjJNT_HINGE: gs.JOINT_TYPE.REVOLUTE,
        }
        same = len(joints) == m.njnt and ent.n_qs == m.nq and ent.n_dofs == m.nv
        for j, joint in enumerate(joints if same else ()):
            same &= joint.type == gs_types[mujoco.mjtJoint(int(m.jnt_type[j]))]
            same &= joint.q_start == m.jnt_qposadr[j] and joint.dof_start == m.jnt_dofadr[j]
        if not same or ent.q_start != 0 or ent.dof_start != 0:
            raise ArgumentError(
                f"scene: Genesis parsed {self.scene!r} into a joint layout that differs from MuJoCo's "
                "(order or type); the genesis backend cannot map its state"
            )
        # Genesis drops the world body when it holds no geometry
        links = ent.links
        offset = m.nbody - len(links)
        if offset not in (0, 1):
            raise ArgumentError(f"scene: Genesis made {len(links)} links of {m.nbody} MJCF bodies")
        self._body_link = np.arange(m.nbody) - offset  # -1: the world, not a Genesis link
        # Genesis keeps the colliding geoms only, link by link, in MJCF order
        geom_of_body: dict[int, list[int]] = {}
        for g in range(m.ngeom):
            if m.geom_contype[g] or m.geom_conaffinity[g]:
                geom_of_body.setdefault(int(m.geom_bodyid[g]), []).append(g)
        self._geom_gs = np.full(m.ngeom, -1, dtype=np.int64)
        for link in links:
            mj_geoms = geom_of_body.get(link.idx - link.entity.link_start + offset, [])
            if len(mj_geoms) != len(link.geoms):
                raise ArgumentError(
                    f"scene: Genesis made {len(link.geoms)} collision geoms of body {link.name!r}"
                )
            for g, geom in zip(mj_geoms, link.geoms, strict=True):
                self._geom_gs[g] = geom.idx
        self._links_t = torch.as_tensor(np.maximum(self._body_link, 0), device=gs.device)
        self._is_world = torch.as_tensor(self._body_link < 0, device=gs.device)

    def _close(self) -> None:
        scene = self.__dict__.pop("_scene", None)
        if scene is not None:
            scene.destroy()
        for name in (
            "_entity",
            "_solver",
            "_views",
            "_qpos",
            "_qvel",
            "_ctrl_pos",
            "_ctrl_mode",
            "_ctrl_force",
        ):
            self.__dict__.pop(name, None)

    # ---- hot path -----------------------------------------------------------

    def _step(self, ctrl: torch.Tensor, nsteps: int) -> None:
        self._ctrl.copy_(ctrl)
        if self.nu:
            self._ctrl_pos[:, self._act_dofs] = torch.clamp(self._ctrl, self._ctrl_lo, self._ctrl_hi)
        step = self._scene.step
        for _ in range(nsteps):
            if self._wrench is not None:
                self._write_wrench()
            self._take_nan_errors()
            step(update_visualizer=False)  # engine sync: Genesis reads its error bits every 10 substeps
        self._take_nan_errors()
        self._wrench = None
        self._time += nsteps * self.dt

    def _take_nan_errors(self) -> None:
        """Move Genesis's per-env NaN error bits to our diverged mask (no host read).

        Genesis checks its error bits on the host every 10 substeps and raises for the whole
        batch if any env has one; a diverged env is the env's business (pop_diverged flags it,
        the env resets it). Capacity errors (too many contacts) stay, for Genesis to raise.
        """
        errno = self._errno
        self._nan_envs |= (errno & _NAN_ERRORS) != 0
        errno.bitwise_and_(~_NAN_ERRORS)

    def _state_views(self) -> Mapping[str, torch.Tensor]:
        return self._views

    def _env_idx(self, ids: torch.Tensor) -> torch.Tensor:
        return ids.to(gs.device)

    def _write_rows(self, env: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """qpos/qvel rows, then forward kinematics; clears contacts and the solver warm start of those rows."""
        sol = self._solver
        sol.set_dofs_velocity(qvel.to(gs.device, self._dtype), envs_idx=env, skip_forward=True)
        self._set_qpos(qpos.to(gs.device, self._dtype), env)
        acc = qd_to_torch(sol.dyn_state.dofs.acc, transpose=True, copy=False)
        acc[env] = 0.0
        for field in (sol.dyn_state.links.cfrc_applied_vel, sol.dyn_state.links.cfrc_applied_ang):
            qd_to_torch(field, transpose=True, copy=False)[env] = 0.0
        qd_to_torch(sol.dyn_state.links.contact_force, transpose=True, copy=False)[env] = 0.0

    def _set_state(self, ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        env = self._env_idx(ids)
        self._write_rows(env, qpos, qvel)
        self._time[env] = 0.0
        self._ctrl[env] = 0.0
        if self.nu:
            self._ctrl_pos[env[:, None], self._act_dofs] = 0.0
        if self._wrench is not None:
            self._wrench[0][env] = False

    def _set_qpos(self, qpos: torch.Tensor, envs: torch.Tensor) -> None:
        """Genesis's set_qpos for some envs (ids or a bool mask), with forward kinematics of those.

        Genesis then marks the kinematics of every env as current, so its next step would skip
        forward kinematics for the others too, whose link poses a step may have left behind
        their qpos: their trajectories would change (by ~2e-3 in 5 steps on the contract
        scene). The marks are put back as they were; a later step or read runs it for all.
        """
        sol = self._solver
        fresh = (sol._is_forward_pos_updated, sol._is_forward_vel_updated)
        sol.set_qpos(qpos, envs_idx=envs)
        sol._is_forward_pos_updated, sol._is_forward_vel_updated = fresh

    def _set_state_mask(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        """Genesis takes a bool env mask (static shapes): where-writes and masked kernels."""
        sol, rows = self._solver, mask[:, None]
        self._qvel.copy_(torch.where(rows, qvel.to(self._dtype), self._qvel))  # Genesis's dofs.vel
        self._set_qpos(qpos.to(self._dtype), mask)
        acc = qd_to_torch(sol.dyn_state.dofs.acc, transpose=True, copy=False)
        acc.masked_fill_(rows, 0.0)
        for field in (sol.dyn_state.links.cfrc_applied_vel, sol.dyn_state.links.cfrc_applied_ang):
            qd_to_torch(field, transpose=True, copy=False).masked_fill_(rows[..., None], 0.0)
        qd_to_torch(sol.dyn_state.links.contact_force, transpose=True, copy=False).masked_fill_(
            rows[..., None], 0.0
        )
        self._time.masked_fill_(mask, 0.0)
        self._ctrl.masked_fill_(rows, 0.0)
        if self.nu:
            self._ctrl_pos[:, self._act_dofs] = self._ctrl_pos[:, self._act_dofs].masked_fill(rows, 0.0)
        if self._wrench is not None:
            self._wrench[0].masked_fill_(mask, False)

    def _refresh_kinematics(self) -> None:
        """Run Genesis's forward kinematics if a step left link poses behind qpos."""
        sol = self._solver
        if not (sol._is_forward_pos_updated and sol._is_forward_vel_updated):
            from genesis.engine.solvers.rigid.abd.forward_kinematics import (
                kernel_forward_kinematics_links_geoms,
            )

            kernel_forward_kinematics_links_geoms(
                self._all_envs, sol.dyn_state, sol.dyn_info, sol.rigid_info, sol.rigid_config
            )
            sol._is_forward_pos_updated = sol._is_forward_vel_updated = True

    def _body_views(self, body_ids: np.ndarray) -> BodyViews:
        self._refresh_kinematics()
        sol = self._solver
        links = self._links_t[body_ids]
        pos = sol.get_links_pos(links)
        quat = sol.get_links_quat(links)
        lin = sol.get_links_vel(links)
        ang = sol.get_links_ang(links)
        world = np.flatnonzero(self._body_link[body_ids] < 0)  # on the host: the ids are
        if world.size:  # the world body, which Genesis dropped: at rest at the origin
            for x in (pos, lin, ang):
                x[:, world] = 0.0
            quat[:, world] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=quat.dtype, device=quat.device)
        return BodyViews(pos, quat, lin, ang)

    _SENSORS = ("jointpos", "jointvel", "framepos", "framequat")

    def _sensor_view(self, sensor_id: int) -> torch.Tensor:
        """The MJCF sensors Genesis does not parse, computed from the state: joint position and
        velocity, and a site's or body's world position and orientation. A fresh copy."""
        m = self._mj
        kind = mujoco.mjtSensor(int(m.sensor_type[sensor_id])).name[len("mjSENS_") :].lower()
        obj, objtype = int(m.sensor_objid[sensor_id]), int(m.sensor_objtype[sensor_id])
        if kind in ("jointpos", "jointvel"):
            adr = (m.jnt_qposadr if kind == "jointpos" else m.jnt_dofadr)[obj]
            return (self._qpos if kind == "jointpos" else self._qvel)[:, adr : adr + 1].clone()
        site = objtype == mujoco.mjtObj.mjOBJ_SITE.value
        body_kinds = (mujoco.mjtObj.mjOBJ_BODY.value, mujoco.mjtObj.mjOBJ_XBODY.value)
        if (
            kind not in self._SENSORS
            or int(m.sensor_refid[sensor_id]) >= 0
            or not (site or objtype in body_kinds)
        ):
            raise CapabilityError(
                f"the genesis backend computes {', '.join(self._SENSORS)} sensors of sites and bodies in the "
                f"world frame only; sensor {self.info.names['sensor'][sensor_id]!r} is a {kind}"
            )
        body = int(m.site_bodyid[obj]) if site else obj
        views = self._body_views(np.array([body]))
        pos, quat = views.pos[:, 0], views.quat[:, 0]
        if not site:
            return pos if kind == "framepos" else quat
        local = torch.as_tensor(m.site_pos[obj], dtype=pos.dtype, device=pos.device)
        if kind == "framepos":
            return pos + _rotate(quat, local.expand_as(pos))
        return _quat_mul(
            quat, torch.as_tensor(m.site_quat[obj], dtype=quat.dtype, device=quat.device).expand_as(quat)
        )

    def _contact_forces(self, body_ids: np.ndarray) -> torch.Tensor:
        force = qd_to_torch(self._solver.dyn_state.links.contact_force, transpose=True)
        out = force[:, self._links_t[body_ids]]
        return out.masked_fill(self._is_world[body_ids][None, :, None], 0.0)

    def _site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Built in MuJoCo's conventions from the parent links' poses and the joints' qpos
        (Genesis's own Jacobian takes a free joint's rotation in the world frame and leaves ball
        joints out): a dof turning about a world axis a at anchor p moves the site by
        a x (site - p) and turns it about a; a slide moves it along its axis.

        As MuJoCo does, each joint of a body acts on the frame its earlier joints left: its
        anchor and axis are taken there, then its motion is applied. Ball and free rotations are
        about the body's own axes after the rotation (qvel is body-frame there), a free joint's
        translation is world-aligned."""
        m = self._mj
        body = int(m.site_bodyid[site_id])
        chain = [body]
        while chain[-1] > 0:
            chain.append(int(m.body_parentid[chain[-1]]))
        chain = chain[::-1]  # from the world to the site's body
        views = self._body_views(np.asarray(chain))
        qpos = self._qpos
        n, dtype = self.num_envs, self._dtype
        eye = torch.eye(3, dtype=dtype, device=gs.device).expand(n, 3, 3)

        def vector(x: np.ndarray) -> torch.Tensor:  # a model vector, one row per env
            return torch.as_tensor(x, dtype=dtype, device=gs.device).expand(n, len(x))

        def axes(q: torch.Tensor) -> torch.Tensor:  # (n, 3 axes, 3) of the frame of quaternion q
            return _rotate(q[:, None].expand(n, 3, 4), eye)

        columns = []  # (dof, world axis (n, 3), anchor (n, 3) or None for a translation)
        for i, b in enumerate(chain[1:], start=1):
            parent_pos, parent_quat = views.pos[:, i - 1], views.quat[:, i - 1]
            p = parent_pos + _rotate(parent_quat, vector(m.body_pos[b]))
            q = _quat_mul(parent_quat, vector(m.body_quat[b]))
            for j in range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])):
                kind, dof, adr = int(m.jnt_type[j]), int(m.jnt_dofadr[j]), int(m.jnt_qposadr[j])
                anchor = p + _rotate(q, vector(m.jnt_pos[j]))
                if kind == mujoco.mjtJoint.mjJNT_FREE.value:
                    p, q = qpos[:, adr : adr + 3], qpos[:, adr + 3 : adr + 7]
                    columns += [(dof + k, eye[:, k], None) for k in range(3)]
                    columns += [(dof + 3 + k, axes(q)[:, k], p) for k in range(3)]
                elif kind == mujoco.mjtJoint.mjJNT_BALL.value:
                    turned = _quat_mul(q, qpos[:, adr : adr + 4])
                    p = anchor + _rotate(turned, _rotate(_conj(q), p - anchor))
                    q = turned
                    columns += [(dof + k, axes(q)[:, k], anchor) for k in range(3)]
                else:
                    axis = _rotate(q, vector(m.jnt_axis[j]))
                    angle = qpos[:, adr : adr + 1] - float(m.qpos0[adr])
                    if kind == mujoco.mjtJoint.mjJNT_SLIDE.value:
                        p = p + angle * axis
                        columns.append((dof, axis, None))
                    else:
                        turn = torch.cat([torch.cos(angle / 2), torch.sin(angle / 2) * axis], -1)
                        p, q = anchor + _rotate(turn, p - anchor), _quat_mul(turn, q)
                        columns.append((dof, axis, anchor))
        site = p + _rotate(q, vector(m.site_pos[site_id]))
        jacp = torch.zeros(n, 3, self.nv, dtype=dtype, device=gs.device)
        jacr = torch.zeros_like(jacp)
        for dof, axis, anchor in columns:
            if anchor is None:
                jacp[:, :, dof] = axis
            else:
                jacr[:, :, dof] = axis
                jacp[:, :, dof] = torch.cross(axis, site - anchor, dim=-1)
        return jacp, jacr

    def _apply_body_wrench(self, body_ids: np.ndarray, force: torch.Tensor, torque: torch.Tensor) -> None:
        keep = self._body_link[body_ids] >= 0  # a wrench on the world moves nothing
        links = self._links_t[body_ids[keep]]
        rows = torch.ones(self.num_envs, dtype=torch.bool, device=gs.device)
        self._wrench = (rows, links, force[:, keep].to(self._dtype), torque[:, keep].to(self._dtype))

    def _write_wrench(self) -> None:
        rows, links, force, torque = self._wrench
        sol = self._solver
        for field in (sol.dyn_state.links.cfrc_applied_vel, sol.dyn_state.links.cfrc_applied_ang):
            qd_to_torch(field, transpose=True, copy=False).zero_()
        if len(links):
            mask = rows[:, None, None].to(force.dtype)
            sol.apply_links_external_wrench(
                force * mask, torque * mask, links, ref=gs.link_ref_frame.link_COM
            )

    # ---- snapshots ----------------------------------------------------------

    @property
    def physics_state_size(self) -> int:
        return 1 + self.nq + 3 * self.nv + 1

    def _solver_state(self) -> list[torch.Tensor]:
        """Genesis's state besides qpos/qvel that the next step reads: dof accelerations and the
        constraint solver's warm start, (num_envs, ...) views."""
        sol = self._solver
        cs = sol.constraint_solver.constraint_state
        return [
            qd_to_torch(sol.dyn_state.dofs.acc, transpose=True, copy=False),
            qd_to_torch(cs.qacc_ws, transpose=True, copy=False),
            qd_to_torch(cs.is_warmstart, copy=False)[:, None],
        ]

    def _get_physics_state(self) -> torch.Tensor:
        f64 = torch.float64
        cols = [self._time[:, None], self._qpos, self._qvel, *self._solver_state()]
        return torch.cat([c.to(f64) for c in cols], dim=1)

    def _set_physics_state(self, ids: torch.Tensor, state: torch.Tensor) -> None:
        env = self._env_idx(ids)
        state = state.to(gs.device)
        nq, nv = self.nq, self.nv
        self._write_rows(env, state[:, 1 : 1 + nq], state[:, 1 + nq : 1 + nq + nv])
        self._time[env] = state[:, 0].to(self._dtype)
        start = 1 + nq + nv
        if state.shape[1] > start:  # the full row: restore the solver state too, for an exact replay
            for view in self._solver_state():
                width = view.shape[1]
                view[env] = state[:, start : start + width].to(view.dtype)
                start += width

    def _pop_diverged(self) -> torch.Tensor:
        """Envs whose state is non-finite or beyond MuJoCo's mjMAXVAL (1e10), where MuJoCo's own
        check would reset them (Genesis carries on with huge finite values), or that Genesis
        found NaN forces or accelerations in since the last call."""
        self._take_nan_errors()
        big = (self._qpos.abs() > _MAXVAL).any(1) | (self._qvel.abs() > _MAXVAL).any(1)
        diverged = super()._pop_diverged() | big | self._nan_envs
        self._nan_envs.zero_()
        return diverged

    # ---- domain randomization ----------------------------------------------

    def _map_dr(self, dev: torch.device) -> None:
        """Per-env copies of the MuJoCo model fields DR writes (made on first use), and the
        Genesis ids they go to, all on the device, so a write reads nothing back."""
        self._fields: dict[str, torch.Tensor] = {}
        bodies = np.flatnonzero(self._body_link >= 0)
        self._dr_bodies = torch.as_tensor(bodies, device=dev)
        self._dr_links = torch.as_tensor(self._body_link[bodies], device=dev)
        geoms = np.flatnonzero(self._geom_gs >= 0)
        self._dr_geoms = torch.as_tensor(geoms, device=dev)
        self._dr_geoms_gs = torch.as_tensor(self._geom_gs[geoms], device=dev)
        self._bias0 = torch.as_tensor(self._mj.actuator_biasprm[:, :3], dtype=torch.float64, device=dev)

    def _dr_terms(self) -> Mapping[str, DRTerm]:
        terms = self._dr.terms(declare=[term for term, flag in _BATCH_FLAG.items() if flag])
        return {name: term for name, term in terms.items() if name in _BATCH_FLAG}

    def _dr_default(self, term: str) -> torch.Tensor:
        return torch.from_numpy(self._dr.default(term))

    def _field(self, name: str) -> torch.Tensor:
        """The per-env (num_envs, ...) float64 copy of a MuJoCo model field, compiled values first."""
        if name not in self._fields:
            compiled = torch.as_tensor(self._dr.field(name), dtype=torch.float64, device=gs.device)
            self._fields[name] = compiled.expand(self.num_envs, *compiled.shape).clone()
        return self._fields[name]

    def _dr_values(self, term: str) -> torch.Tensor:
        return self._dr.read(term, self._field(RULES[term].field))

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """Genesis keeps torsional and rolling friction global, and scales sliding friction
        from the compiled value, so those must stay where they matter."""
        if term != "geom_friction":
            return []
        x, compiled = values.to(torch.float64), self._friction0
        changed = ((x[..., 1:] != compiled[:, 1:]) & self._rolling).flatten(1).any(1)
        from_zero = ((compiled[:, 0] == 0) & (x[..., 0] != 0)).any(1)
        return [
            (
                changed | from_zero,
                "genesis randomizes sliding friction only: torsional/rolling friction must stay at the "
                "compiled values on geoms with condim >= 4/6, and a geom with zero friction must stay at zero",
            )
        ]

    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """The table's writes on the per-env field copies, then every env's values of the
        changed fields handed to Genesis with the full env index (no per-row indexing,
        no host read)."""
        self._dr.write(term, mask, values, self._field)
        for field in dict.fromkeys(
            "actuator" if f.startswith("actuator_") else f for f in RULES[term].fields
        ):
            self._push(field)

    def _push(self, field: str) -> None:
        sol, envs, dtype = self._solver, self._all_envs, self._dtype
        if field == "actuator":
            self._push_actuators()
        elif field == "geom_friction":
            if len(self._dr_geoms):  # Genesis's per-env friction ratio scales the compiled sliding friction
                compiled = self._friction0[self._dr_geoms, 0]
                sliding = self._field(field)[:, self._dr_geoms, 0]
                ratio = torch.where(compiled > 0, sliding / compiled.clamp_min(1e-300), 1.0)
                sol.set_geoms_friction_ratio(ratio.to(dtype), self._dr_geoms_gs, envs)
        elif field == "opt.gravity":
            sol.set_gravity(self._field(field).to(dtype), envs)
        elif field.startswith("dof_"):
            getattr(sol, "set_" + field.replace("dof_", "dofs_"))(self._field(field).to(dtype), None, envs)
        else:  # body_mass, body_inertia (principal moments), body_ipos: per link
            # engine sync: Genesis's link setters read the link index on the host when it is a
            # CPU tensor (one read per call on the CPU device; none on CUDA outside its debug mode)
            value = self._field(field)[:, self._dr_bodies].to(dtype)
            if field == "body_mass":
                sol.set_links_mass(value, self._dr_links, envs)
            elif field == "body_inertia":
                sol.set_links_inertia(torch.diag_embed(value), self._dr_links, envs)
            else:
                sol.set_links_COM(value, self._dr_links, envs)

    def _push_actuators(self) -> None:
        """MuJoCo's gains in Genesis's joint space: force = gear * (kp * ctrl + b1 * gear * q + b2 * gear * qdot).

        Only servos (affine bias) take the bias of the field copies: MuJoCo computes no bias for
        a motor, whose kd is kept but acts on nothing.
        """
        gear = self._gear.to(torch.float64)
        gain = gear * self._field("actuator_gainprm")[..., 0]
        bias = torch.where(self._servo[:, None], self._field("actuator_biasprm")[..., :3], self._bias0)
        bias = bias * torch.stack([gear, gear * gear, gear * gear], -1)
        dofs, envs, dtype = self._act_dofs, self._all_envs, self._dtype
        self._solver.set_dofs_act_gain(gain.to(dtype), dofs, envs)
        self._solver.set_dofs_act_bias(*bias.to(dtype).unbind(-1), dofs, envs)


# ---- the engine alone, for unienv.bench ----------------------------------------


def raw_loop(backend, decimation: int, replay: Any) -> Callable[[], tuple]:
    """Genesis alone, built with the backend's own options, for `unienv.bench`: write the
    restarted envs' states and the actuators' controls from `replay` (`unienv.bench.Replay`),
    step `decimation` times, return the qpos and qvel it read."""
    scene = gs.Scene(
        sim_options=gs.options.SimOptions(
            dt=backend.dt, gravity=tuple(float(g) for g in backend.info.gravity)
        ),
        rigid_options=gs.options.RigidOptions(**backend._rigid_options),
        profiling_options=gs.options.ProfilingOptions(show_FPS=False),
        show_viewer=False,
    )
    robot = scene.add_entity(gs.morphs.MJCF(file=backend.scene, default_armature=None, align=False))
    scene.build(n_envs=backend.num_envs)
    dofs = [int(backend.info.joint_dof_adr[j]) for j in backend.info.actuator_joint]
    writes, controls = replay.on(gs.device, gs.tc_float)

    def step() -> tuple:
        i = replay.next()
        if writes[i] is not None:  # the envs that restarted
            rows, q, v = writes[i]
            robot.set_qpos(q, envs_idx=rows, zero_velocity=False)
            robot.set_dofs_velocity(v, envs_idx=rows)
        robot.control_dofs_position(controls[i], dofs)
        for _ in range(decimation):
            scene.step(update_visualizer=False)
        return robot.get_qpos(), robot.get_dofs_velocity()

    return step
