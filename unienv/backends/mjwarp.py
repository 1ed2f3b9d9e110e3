"""The `mjwarp` backend: MuJoCo Warp (`mujoco_warp`), batched MuJoCo on a CUDA GPU.

Model: the scene is compiled by MuJoCo on the host, put on the device once
(`mjw.put_model`), and simulated as `nworld = num_envs` worlds of one
`mjw.Data`. The physics is MuJoCo's (same MJCF, same integrator, solver and
contact model), computed by Warp kernels in float32: a policy trained here
replays on the `mujoco` backend with the same model, to float32 accuracy.

Device: `device=None` or "cuda[:k]" runs on a CUDA GPU; the steps of one
`step_tensor` call (any `nsteps`) replay as one captured CUDA graph, ordered
against torch's current stream with events (no host sync). `device="cpu"` runs
the same kernels on Warp's CPU device (needs warp-lang's LLVM backend,
warp-clang); it is slow, for tests and CI without a GPU. Without CUDA, or
without the `mjwarp` extra, construction fails and says what is missing.
All Warp work runs through `mjwarp_graphs.WarpRunner`: graphs captured once per
key, ordered with torch's stream, under one process-wide lock.

Views: `get_state_views()` returns torch tensors that share memory with the
Warp arrays `d.time`, `d.qpos`, `d.qvel`, `d.ctrl` (`wp.to_torch`, zero copy);
a write to them is the env's state at its next step. `step_tensor` copies ctrl
into the ctrl view in place. Sensor views share memory with `d.sensordata`.
Body views, contact forces, Jacobians and `get_mj_field` are computed per call
and are fresh tensors.

Freshness: a step leaves MuJoCo's derived quantities of its last substep, as
`mj_step` does. The first derived read after a step or a DR write (body views,
sensors, Jacobians, MuJoCo fields) runs one `mjw.forward` plus
`rne_postconstraint` over all worlds (one more graph), so they describe the
current state. Contact forces are the last substep's, as the contract says
and as on the mujoco backend: every substep computes cfrc_ext
(`opt.run_rne_postconstraint`), and reading them runs no forward, unless the
last step had a wrench on (cfrc_ext would include it) or a forward has run
since (then those at the current state). Between two reads a held sensor view
shows what the last substep computed. A forward writes no state: the
trajectory does not depend on what was read. Substep reads (`substep_reads=`)
are served at the current state too, declared in `Capabilities.differences`
and warned of at construction.

set_state_tensor resets the selected worlds (`mjw.reset_data` with a world
mask: time, ctrl, act, warm start and applied forces cleared), writes their
qpos/qvel and runs forward; other worlds' state stays bit-identical.

Buffers: each world holds at most `njmax` constraint rows and `nconmax` contacts: the arguments,
else the scene's `<size njmax nconmax>` where it states them, else mujoco_warp's guess from the
model (64 rows, 48 contacts for a scene without heightfields); rows past njmax are dropped
by mujoco_warp, so a scene with many contact pairs states its own.

Snapshots: `get_physics_state()` rows are [time, qpos, qvel, act,
qacc_warmstart] in float32, the engine's own precision, so a restore is exact.

Mocap poses are views of `d.mocap_pos`/`d.mocap_quat`, written with
`torch.where` over a mask, then one forward. Height scans run `mjw.rays` over
every world as one captured graph on buffers made once per ray count.

DR terms write per-world model fields by the rules of `dr_rules` (inertia with
mass, servo bias with kp and kd), with `torch.where` over a mask: no host sync.
The first write of a field replaces its shared row by one row per world (and
recaptures the graphs). After a write to mass, COM or armature, the next step
or derived read first reruns `mjw.set_const` over all worlds, once however
many terms were written, as a captured graph; its outputs (subtree mass,
inverse weights, actuator_acc0) are per world too. `body_com` must be named in
`randomize=`: the model is then compiled without MuJoCo's simple-body shortcut,
which a moved COM would break (`compile_spec(movable_com=True)`).

Determinism: on the CPU device the kernels run serially, and trajectories are
bit-identical run to run (declared deterministic). On CUDA, contact and
constraint rows are gathered with atomics in an order that varies, so results
agree only to float32 tolerance (declared not deterministic).

pop_diverged flags worlds whose qpos, qvel or qacc is non-finite or beyond
MuJoCo's 1e10 (where MuJoCo's CPU engine would have reset them); MuJoCo Warp
does not reset them itself, so a world is flagged by the first call after a step that finds it so, and again by later ones until the env resets it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch

from unienv.backends.base import (
    BodyViews,
    Capabilities,
    DRTerm,
    SceneInfo,
    SimBackend,
    load_mjmodel,
    mj_body_views,
)
from unienv.backends.dr_rules import RULES, ModelDR
from unienv.backends.mjwarp_graphs import WARP_LOCK, HeightRays, WarpRunner
from unienv.errors import ArgumentError, CapabilityError, install_command

_MAXVAL = 1e10  # MuJoCo's mjMAXVAL: beyond it the CPU engine warns and resets

# model fields that mjw.set_const writes from the DR'd ones: made per world before it runs
_SET_CONST_OUTPUTS = (
    "body_subtreemass",
    "body_invweight0",
    "dof_invweight0",
    "tendon_invweight0",
    "actuator_acc0",
)

# the mjw.Data fields the backend reads or writes besides the state views, as torch views
_OUTPUTS = (
    *("act", "qacc", "qacc_warmstart", "xfrc_applied", "xpos", "xquat", "xipos", "cvel", "cdof", "cinert"),
    *("subtree_com", "sensordata", "cfrc_ext", "site_xpos", "qfrc_actuator", "qfrc_constraint"),
    *("mocap_pos", "mocap_quat"),
)

_NO_CUDA = (
    "backend='mjwarp' needs a CUDA GPU for device='cuda'; found none (torch.cuda.is_available() is "
    "False) — use device='cpu' (Warp's CPU device: slow, for tests) or backend='mujoco' on the CPU"
)


def _import_engine() -> tuple[Any, Any]:
    """warp and mujoco_warp, or a ModuleNotFoundError that says how to install them."""
    try:
        wp = importlib.import_module("warp")
        mjw = importlib.import_module("mujoco_warp")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f"backend='mjwarp' needs the {e.name!r} package, which is not installed; "
            f"install it with: {install_command('mjwarp')}",
            name=e.name,
        ) from e
    return wp, mjw


def cpu_available() -> bool:
    """Whether this install runs the backend on the CPU: Warp's CPU kernels (warp-clang) are there."""
    wp = importlib.import_module("warp")  # alone: mujoco_warp would initialise Warp before quiet is set
    wp.config.quiet = True
    return bool(wp.is_cpu_available())


def _resolve_device(device: str | torch.device | None) -> torch.device:
    """The torch device the worlds live on: CUDA by default, or Warp's CPU device."""
    try:
        dev = torch.device("cuda" if device is None else device)
    except (RuntimeError, TypeError) as e:
        raise ArgumentError(f"device: expected None, 'cuda', 'cuda:<k>' or 'cpu', got {device!r}") from e
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type != "cuda":
        raise ArgumentError(f"device: expected None, 'cuda', 'cuda:<k>' or 'cpu', got {device!r}")
    if not torch.cuda.is_available():
        raise CapabilityError(_NO_CUDA)
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if not 0 <= index < torch.cuda.device_count():
        raise ArgumentError(
            f"device: expected a CUDA device index in [0, {torch.cuda.device_count()}), got {device!r}"
        )
    return torch.device("cuda", index)


class MjwarpBackend(SimBackend):
    """Batched MuJoCo Warp, one world per env; see the module docstring."""

    name = "mjwarp"

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize=(),
        substep_reads=(),
        nconmax: int | None = None,
        njmax: int | None = None,
    ):
        super().__init__(
            scene, num_envs, sim_dt, device=device, randomize=randomize, substep_reads=substep_reads
        )
        for arg, value in (("nconmax", nconmax), ("njmax", njmax)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ArgumentError(f"{arg}: expected a positive int or None, got {value!r}")
        self._wp, self._mjw = wp, _ = _import_engine()
        self.device = _resolve_device(device)
        wp.config.quiet = True
        wp.init()
        if self.device.type == "cpu" and not wp.is_cpu_available():
            raise CapabilityError(
                "device: backend='mjwarp' on 'cpu' needs Warp's CPU kernels (warp-clang), which this "
                "warp-lang install lacks; install the full wheel from PyPI, or use backend='mujoco' on the CPU"
            )
        self._wp_device = wp.get_device(str(self.device) if self.device.type == "cuda" else "cpu")
        self.model = load_mjmodel(scene, sim_dt, movable_com="body_com" in self._requested_dr)
        stated = {"nconmax": self.model.nconmax, "njmax": self.model.njmax}  # -1: unset
        self.nconmax, self.njmax = (
            given if given is not None else (stated[arg] if stated[arg] > 0 else None)
            for arg, given in (("nconmax", nconmax), ("njmax", njmax))
        )
        self.info = SceneInfo.from_mjmodel(self.model)
        self._dr = ModelDR(self.model, self.device, torch.float32)
        self._validate_randomize()
        with WARP_LOCK, wp.ScopedDevice(self._wp_device):
            try:  # mujoco_warp checks the model's features as it puts it on the device
                self._m = _.put_model(self.model)
            except NotImplementedError as e:
                raise CapabilityError(f"scene: mujoco_warp cannot simulate {self.scene}: {e}") from e
        # every substep computes cfrc_ext, as the mujoco backend's hidden sensor makes MuJoCo do:
        # contact forces are then the last substep's, with no extra forward per env step
        self._m.opt.run_rne_postconstraint = True

    def get_capabilities(self) -> Capabilities:
        return Capabilities(
            backend="mjwarp",
            device=str(self.device),
            dtype=torch.float32,
            deterministic=self.device.type == "cpu",
            mj_fields=True,
            mocap=True,
            height_scan=True,
            sync_free=True,
            cuda_graph=self.device.type == "cuda",
            differences=self._substep_differences,
        )

    # ---- lifecycle ----------------------------------------------------------

    def _materialize(self) -> None:
        wp, mjw = self._wp, self._mjw
        with WARP_LOCK, wp.ScopedDevice(self._wp_device):
            m = self._m
            self._d = d = mjw.make_data(
                self.model, nworld=self.num_envs, nconmax=self.nconmax, njmax=self.njmax
            )
            self._views = {name: wp.to_torch(getattr(d, name)) for name in ("time", "qpos", "qvel", "ctrl")}
            self._out = {name: wp.to_torch(getattr(d, name)) for name in _OUTPUTS}
            self._reset_mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            self._wp_reset_mask = wp.from_torch(self._reset_mask)
            mjw.forward(m, d)  # derived quantities at qpos0 before the first step
        mj = self.model
        self._root = torch.as_tensor(mj.body_rootid, dtype=torch.int64, device=self.device)
        self._site_body = mj.site_bodyid.astype(np.int64)
        self._dof_ancestor = torch.as_tensor(
            self._m.body_isdofancestor.numpy()[:, : mj.nv] != 0, device=self.device
        )  # (nbody, nv): the dofs that move each body
        self._runner = WarpRunner(wp, self._wp_device, self.device)
        self._rays = HeightRays(self._runner, wp, mjw, self._wp_device, self.num_envs)
        self._device_ids: dict[bytes, torch.Tensor] = {}
        self._fresh = True  # derived quantities describe the current state
        self._const_stale = False  # a DR write changed what mjw.set_const derives from
        self._wrench_pending = False
        self._pushed = False  # the last step ran with a wrench on
        self._stepped = False  # a step ran since the last pop_diverged

    def _close(self) -> None:
        with WARP_LOCK:  # frees device memory, which must not land inside another thread's capture
            self._runner.graphs.clear()
            del self._views, self._out, self._d, self._m

    # ---- running engine work ------------------------------------------------

    def _steps(self, nsteps: int):
        m, d, step = self._m, self._d, self._mjw.step

        def work() -> None:
            for _ in range(nsteps):
                step(m, d)

        return work

    def _forward_work(self) -> None:
        self._mjw.forward(self._m, self._d)
        self._mjw._src.smooth.rne_postconstraint(self._m, self._d)

    def _refresh(self) -> None:
        """Bring derived quantities to the current state (once per step)."""
        if not self._fresh:
            self._update_constants()
            self._runner.run("forward", self._forward_work)
            self._fresh = True

    def _update_constants(self) -> None:
        """Recompute the model constants (mjw.set_const, one captured graph) after DR writes
        to mass, COM or armature: once, however many terms and rows were written."""
        if self._const_stale:
            self._runner.run("set_const", lambda: self._mjw.set_const(self._m, self._d))
            self._const_stale = False

    # ---- hot path -----------------------------------------------------------

    def _step(self, ctrl: torch.Tensor, nsteps: int) -> None:
        self._update_constants()
        self._views["ctrl"].copy_(ctrl)
        self._runner.run(("step", nsteps), self._steps(nsteps))
        self._fresh = False
        self._stepped = True
        self._pushed = self._wrench_pending  # the last substep's cfrc_ext includes the wrench
        if self._wrench_pending:
            self._out["xfrc_applied"].zero_()
            self._wrench_pending = False

    def _state_views(self) -> Mapping[str, torch.Tensor]:
        return self._views

    def _pop_diverged(self) -> torch.Tensor:
        bad = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        if not self._stepped:  # a state written since the last call has not diverged yet
            return bad
        self._stepped = False
        for x in (self._views["qpos"], self._views["qvel"], self._out["qacc"]):
            bad |= ~(x.abs() <= _MAXVAL).all(1)  # NaN compares False
        return bad

    def _set_state(self, ids: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        rows = ids.to(self.device)
        self._reset_mask.zero_()
        self._reset_mask[rows] = True
        # captured once: the graph reads the mask's contents at each replay, and an uncaptured
        # reset_data re-hashes mujoco_warp's kernels on every call (tens of milliseconds)
        self._runner.run("reset", lambda: self._mjw.reset_data(self._m, self._d, reset=self._wp_reset_mask))
        self._views["qpos"][rows] = qpos.to(torch.float32)
        self._views["qvel"][rows] = qvel.to(torch.float32)
        self._fresh = False
        self._refresh()

    def _set_state_mask(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self._reset_mask.copy_(mask)
        self._runner.run("reset", lambda: self._mjw.reset_data(self._m, self._d, reset=self._wp_reset_mask))
        rows = mask[:, None]
        for name, new in (("qpos", qpos), ("qvel", qvel)):
            view = self._views[name]
            view.copy_(torch.where(rows, new.to(view.dtype), view))
        self._fresh = False
        self._refresh()

    def _on_device(self, ids: np.ndarray) -> torch.Tensor:
        """Object ids as a device tensor, made once per set of ids: a copy from the host on
        every call would be a transfer inside the step (and one a CUDA graph cannot record)."""
        key = ids.tobytes()
        if key not in self._device_ids:
            self._device_ids[key] = torch.as_tensor(ids, device=self.device)
        return self._device_ids[key]

    def _body_views(self, body_ids: np.ndarray) -> BodyViews:
        self._refresh()
        views = mj_body_views(self._out, self._root, self._on_device(body_ids))
        return BodyViews(views.pos.clone(), views.quat.clone(), views.lin_vel, views.ang_vel)

    def _sensor_view(self, sensor_id: int) -> torch.Tensor:
        self._refresh()
        adr, dim = int(self.info.sensor_adr[sensor_id]), int(self.info.sensor_dim[sensor_id])
        return self._out["sensordata"][:, adr : adr + dim]

    def _contact_forces(self, body_ids: np.ndarray) -> torch.Tensor:
        # the last substep's, as the step left them (no forward), unless that substep had a
        # wrench on, which cfrc_ext includes: then those at the state, without it
        if self._pushed:
            self._refresh()
        return self._out["cfrc_ext"][:, self._on_device(body_ids), 3:].clone()

    def _site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        self._refresh()
        o, body = self._out, int(self._site_body[site_id])
        mask = self._dof_ancestor[body].to(torch.float32)  # (nv,)
        cdof = o["cdof"]  # (N, nv, 6) [rot, lin] at the root's subtree COM
        offset = o["site_xpos"][:, site_id] - o["subtree_com"][:, int(self.model.body_rootid[body])]
        ang = cdof[..., :3]
        lin = cdof[..., 3:] + torch.linalg.cross(ang, offset[:, None, :].expand_as(ang), dim=-1)
        return (lin * mask[:, None]).transpose(1, 2).contiguous(), (ang * mask[:, None]).transpose(
            1, 2
        ).contiguous()

    def _apply_body_wrench(self, body_ids: np.ndarray, force: torch.Tensor, torque: torch.Tensor) -> None:
        xfrc, ids = self._out["xfrc_applied"], self._on_device(body_ids)
        xfrc.zero_()
        xfrc[:, ids, :3] = force.to(torch.float32)
        xfrc[:, ids, 3:] = torque.to(torch.float32)
        self._wrench_pending = True

    def _mj_field(self, name: str) -> torch.Tensor:
        self._refresh()
        values = self._out[name]
        if name == "site_xpos":
            values = values[:, : len(self.info.names["site"])]
        return values.clone()  # float32, the engine's (and the backend's) dtype

    def _mocap_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._out["mocap_pos"], self._out["mocap_quat"]

    def _set_mocap_mask(self, mask: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> None:
        rows = mask[:, None, None]
        for view, new in zip(self._mocap_views(), (pos, quat), strict=True):
            view.copy_(torch.where(rows, new.to(view.dtype), view))
        self._fresh = False
        self._refresh()

    def _cast_down(self, origins: torch.Tensor) -> torch.Tensor:
        return self._rays.cast_down(self._m, self._d, origins)

    # ---- snapshots ----------------------------------------------------------

    @property
    def physics_state_size(self) -> int:
        m = self.model
        return 1 + m.nq + m.nv + m.na + m.nv

    def _get_physics_state(self) -> torch.Tensor:
        v, o = self._views, self._out
        return torch.cat([v["time"][:, None], v["qpos"], v["qvel"], o["act"], o["qacc_warmstart"]], 1)

    def _set_physics_state(self, ids: torch.Tensor, state: torch.Tensor) -> None:
        rows, x = ids.to(self.device), state.to(self.device, torch.float32)
        v, o, nq, nv, na = self._views, self._out, self.nq, self.nv, self.model.na
        v["time"][rows] = x[:, 0]
        v["qpos"][rows] = x[:, 1 : 1 + nq]
        v["qvel"][rows] = x[:, 1 + nq : 1 + nq + nv]
        start = 1 + nq + nv
        for field, width in (("act", na), ("qacc_warmstart", nv)):
            o[field][rows] = x[:, start : start + width] if x.shape[1] > start else 0.0
            start += width
        self._fresh = False
        self._refresh()

    # ---- domain randomization ----------------------------------------------

    def _dr_terms(self) -> Mapping[str, DRTerm]:
        return self._dr.terms(declare=("body_com",))  # compiled for it: see compile_spec

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        return self._dr.limits(term, values)

    def _dr_default(self, term: str) -> torch.Tensor:
        # as the engine holds it: compiled in float64, stored in float32
        return torch.from_numpy(self._dr.default(term).astype(np.float32).astype(np.float64))

    def _field(self, name: str) -> torch.Tensor:
        """torch view (rows, ...) of a Warp model field ("opt.<name>": an option); rows is
        1 (shared by all worlds) or num_envs."""
        obj, attr = (self._m.opt, name[4:]) if name.startswith("opt.") else (self._m, name)
        return self._wp.to_torch(getattr(obj, attr))

    def _expand(self, name: str) -> torch.Tensor:
        """Make a model field per world (one row per env), and return its torch view."""
        wp = self._wp
        obj, attr = (self._m.opt, name[4:]) if name.startswith("opt.") else (self._m, name)
        array = getattr(obj, attr)
        if array.shape[0] != self.num_envs:
            with WARP_LOCK:  # a device copy, kept out of other threads' captures
                host = np.repeat(array.numpy()[:1], self.num_envs, axis=0)
                setattr(obj, attr, wp.array(host, dtype=array.dtype, device=self._wp_device))
                self._runner.graphs.clear()  # captured graphs hold the old array
                self.graph_epoch += 1
        return self._field(name)

    def _dr_values(self, term: str) -> torch.Tensor:
        values = self._field(RULES[term].field)
        return self._dr.read(term, values.expand(self.num_envs, *values.shape[1:]))

    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """torch.where on the per-world fields (the first write of a field makes it per
        world, which recaptures the graphs); constants and derived quantities follow at
        the next step or derived read, once (`_update_constants`, `_refresh`)."""
        self._dr.write(term, mask, values, self._expand)
        if RULES[term].set_const:
            for out in _SET_CONST_OUTPUTS:
                if getattr(self._m, out).shape[0] == 1 and getattr(self._m, out).size:
                    self._expand(out)
            self._const_stale = True
        self._fresh = False


# ---- the engine alone, for unienv.bench ----------------------------------------


def raw_loop(backend, decimation: int, replay: Any) -> Callable[[], tuple]:
    """mujoco_warp alone, for `unienv.bench`: write the restarted envs' states (their warm start
    cleared) and ctrl from `replay` (`unienv.bench.Replay`), replay `decimation` captured steps,
    return the qpos and qvel it read."""
    wp, mjw = _import_engine()
    model = load_mjmodel(backend.scene, backend.dt)
    num_envs = backend.num_envs
    wp.config.quiet = True
    wp_device = wp.get_device(str(backend.device))
    with wp.ScopedDevice(wp_device):
        m = mjw.put_model(model)
        d = mjw.make_data(model, nworld=num_envs)
        ctrl, qpos, qvel = wp.to_torch(d.ctrl), wp.to_torch(d.qpos), wp.to_torch(d.qvel)
        warmstart = wp.to_torch(d.qacc_warmstart)
        mjw.step(m, d)  # compile before capturing
        with wp.ScopedCapture() as capture:
            for _ in range(decimation):
                mjw.step(m, d)
    # launched on torch's stream, so the writes and the qpos/qvel reads are ordered with it
    stream = wp.stream_from_torch(torch.cuda.current_stream(wp_device.ordinal)) if wp_device.is_cuda else None
    writes, controls = replay.on(qpos.device, qpos.dtype)

    def step() -> tuple:
        i = replay.next()
        if writes[i] is not None:  # the envs that restarted, their solver warm start cleared
            rows, q, v = writes[i]
            qpos[rows], qvel[rows], warmstart[rows] = q, v, 0.0
        ctrl.copy_(controls[i])
        wp.capture_launch(capture.graph, stream=stream)
        return qpos.clone(), qvel.clone()

    return step
