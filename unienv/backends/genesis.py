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

Substep reads (`substep_reads=`) are served at the current state, declared in
`Capabilities.differences` and warned of at construction.

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

Where the parts live: `genesis_checks` (what Genesis cannot simulate), `genesis_scene` (its
solver options, and where MuJoCo's bodies and geoms are among Genesis's links and geoms), `genesis_reads` (body
views, sensors and site Jacobians in MuJoCo's conventions), `genesis_dr` (the per-env field
copies and their pushes to Genesis); this module holds the state, the step and the snapshots.
"""

from __future__ import annotations

import os
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
from unienv.backends.dr_rules import ModelDR
from unienv.backends.genesis_checks import check_scene
from unienv.backends.genesis_dr import GenesisDR, friction_problems
from unienv.backends.genesis_reads import link_views, sensor_value, site_jacobian
from unienv.backends.genesis_scene import (
    choose_integrator,
    force_range,
    map_layout,
    resolve_device,
    solver_options,
)
from unienv.errors import ArgumentError

# DR term -> the Genesis batch flag it needs (None: Genesis stores it per env anyway); the terms
# not here (geom_solref, geom_solimp: Genesis keeps geom solver parameters for all envs;
# geom_size: Genesis has no per-env geom sizes) it refuses
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
    _resolve_device = staticmethod(resolve_device)

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize: Iterable[str] = (),
        substep_reads: Iterable[str] = (),
        precision: str | None = None,
        integrator: str | None = None,
        rigid_options: Mapping[str, Any] | None = None,
    ):
        super().__init__(
            scene, num_envs, sim_dt, device=device, randomize=randomize, substep_reads=substep_reads
        )
        self.device = resolve_device(device)
        if precision is None:
            precision = "32" if self.device.type == "cuda" else "64"
        if precision not in ("32", "64"):
            raise ArgumentError(f"precision: expected '32' or '64', got {precision!r}")
        self._mj = model = load_mjmodel(scene, sim_dt)
        self.info = SceneInfo.from_mjmodel(model)
        check_scene(model, self.scene)
        integrator, self._differences = choose_integrator(model, integrator, self.scene)
        self._dr = ModelDR(model, self.device, torch.float64)
        self._friction0 = torch.as_tensor(model.geom_friction, dtype=torch.float64, device=self.device)
        # (ngeom, 2): where condim makes torsional and rolling friction matter
        self._rolling = torch.stack(
            [torch.as_tensor(model.geom_condim >= k, device=self.device) for k in (4, 6)], -1
        )
        self._validate_randomize()
        _init_genesis(self.device, precision)
        flags = [_BATCH_FLAG[term] for term in self._requested_dr if _BATCH_FLAG[term]]
        self._rigid_options = solver_options(integrator, flags, rigid_options)
        self._dtype = gs.tc_float

    def get_capabilities(self) -> Capabilities:
        return Capabilities(
            backend="genesis",
            device=str(self.device),
            dtype=self._dtype,
            deterministic=self.device.type == "cpu",
            sync_free=True,
            differences=self._differences + self._substep_differences,
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
        self._body_link, self._geom_gs = map_layout(m, self._entity, self.scene)
        self._links_t = torch.as_tensor(np.maximum(self._body_link, 0), device=gs.device)
        self._is_world = torch.as_tensor(self._body_link < 0, device=gs.device)
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
            lo, hi = force_range(m, self._dtype, dev)
            dofs = self._act_dofs
            sol.set_dofs_force_range(lo, hi, dofs)  # every env
            # Genesis scales a servo's bias by gear once; MuJoCo's acts on gear * q and its force is geared again
            gear, bias = self._gear, torch.as_tensor(m.actuator_biasprm[:, :3], dtype=self._dtype, device=dev)
            sol.set_dofs_act_bias(gear * bias[:, 0], gear * gear * bias[:, 1], gear * gear * bias[:, 2], dofs)
            self._ctrl_mode[:, dofs] = int(gs.CTRL_MODE.POSITION)
            self._ctrl_pos[:, dofs] = 0.0

        self._wrench: tuple[torch.Tensor, ...] | None = None  # rows, links, force, torque
        self._all_envs = torch.arange(self.num_envs, device=dev)
        actuators = (self._act_dofs, self._gear, self._servo)
        self._dr_fields = GenesisDR(
            self._dr, m, sol, self._body_link, self._geom_gs, self._friction0, actuators,
            self.num_envs, self._dtype, dev,
        )  # fmt: skip

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

    def _body_views(self, body_ids: np.ndarray) -> BodyViews:
        return link_views(self._solver, self._links_t, self._body_link, body_ids, self._all_envs)

    def _sensor_view(self, sensor_id: int) -> torch.Tensor:
        return sensor_value(self._mj, sensor_id, self._qpos, self._qvel, self._body_views)

    def _site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """MuJoCo's site Jacobian from Genesis's link poses (`genesis_reads.site_jacobian`)."""
        return site_jacobian(self._mj, site_id, self._qpos, self._body_views)

    def _contact_forces(self, body_ids: np.ndarray) -> torch.Tensor:
        force = qd_to_torch(self._solver.dyn_state.links.contact_force, transpose=True)
        out = force[:, self._links_t[body_ids]]
        return out.masked_fill(self._is_world[body_ids][None, :, None], 0.0)

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

    def _dr_terms(self) -> Mapping[str, DRTerm]:
        terms = self._dr.terms(declare=[term for term, flag in _BATCH_FLAG.items() if flag])
        return {name: term for name, term in terms.items() if name in _BATCH_FLAG}

    def _dr_default(self, term: str) -> torch.Tensor:
        return torch.from_numpy(self._dr.default(term))

    def _dr_values(self, term: str) -> torch.Tensor:
        return self._dr_fields.values(term)

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        return friction_problems(values, self._friction0, self._rolling) if term == "geom_friction" else []

    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        self._dr_fields.write(term, mask, values)


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
