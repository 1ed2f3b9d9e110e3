"""The `mujoco` backend: MuJoCo on the CPU through `mujoco.batch.Batch`.

One compiled model, `num_envs` simulations, stepped on a thread pool of
`nthread` threads (default: the cores this process may use). Results are
bit-identical to a loop over one MjData per env, at any thread count, so the
backend is deterministic.

Views: `get_state_views()` returns torch tensors that share memory with the
batch's float64 state rows (time, qpos, qvel, ctrl); a write to them is the
env's state at its next step. `get_sensor_view` returns a view of the batch's
sensordata output as of that call. Body views, contact forces, Jacobians and
`get_mj_field` values are computed per call (they gather rows) and are copies.
`host_reads()` gives the same reads as the batch's NumPy arrays, for tasks that
compute in NumPy (`unienv.backends.mujoco_reads`, where the reads live).

Freshness: every derived quantity but contact forces (body views, sensors,
Jacobians, `get_mj_field`) describes the state the backend holds, as after
`mj_forward`. A loop that reads only the state views and contact forces pays
what raw `mujoco.batch` pays: its steps run MuJoCo's steps alone. Each reader
names the stage it needs: body views and Jacobians the position and velocity
stages (`mjSTAGE_VEL`), sensors and `get_mj_field` the whole `mj_forward`
(`mjSTAGE_ACC`), with sensors only for sensors, contact forces and the field
`cfrc_ext` (which the hidden sensor makes MuJoCo compute): a task that reads other
fields (site positions, `qfrc_constraint`) gets its `mj_forward` inside the step's own
batch call, sensors off. The first derived read after a plain step computes that stage
over all envs; and once derived quantities are read between two steps, the next
step computes the highest stage read inside the same batch call, which saves
a second pass over the envs but not the stages' own cost: the next step's first
substep computes them again, since a batch that is not persistent keeps no
MjData between calls (measured, 256 envs: the position and velocity stages add
10% to reacher's physics, 2 substeps a step; a persistent batch was no faster
overall). `set_state_tensor` leaves the rows it writes stale, and the next
derived read (contact forces included) runs `mj_forward` for those rows alone;
a loop that reads none pays nothing for them. DR writes run `mj_forward` for the
rows they write. mj_forward writes no state, so none of this changes a trajectory.

Contact forces are those of the last physics step, as the contract says: the
`cfrc_ext` that MuJoCo's last substep computed, read without an mj_forward. Where
the backend holds a current `mj_forward` anyway (a sensor or `get_mj_field` read
made the step compute it, a state or DR write, or a step with a wrench on, whose
force cfrc_ext would include) they are those at the current state, which differ
from the last substep's by one substep of motion.

Contact forces come from MuJoCo's `cfrc_ext`, which MuJoCo computes only for
models with force-like sensors; the backend appends one hidden accelerometer
(on a site of the last body, so that the scene's own site and sensor ids hold)
to the model it simulates. Sensors run only where a reader can see them: the
substeps before a step's last run with sensors disabled (`mjDSBL_SENSOR`), and
the last one too until contact forces are first read (that first read computes
them at the state) or when a sensor or field read wants the state's mj_forward,
which then follows the substeps (in the same call, sensors on, for a step of one
substep). The per-simulation flag is written only when it changes, so a loop
that reads no contact forces writes it once. Sensors
change no state, so trajectories stay raw mujoco.batch's; models whose sensors
keep a history run them every substep.
`get_mj_field` (capability mj_fields) serves copies of other derived MjData
fields (cinert, cvel, cfrc_ext, ...).

Substep reads (`substep_reads=`, what a reference environment reads where its
step leaves it): those quantities are the batch's outputs as the step's last
substep left them, with no forward pass at the state (a written row's at its
new state); a read at the state whose forward would overwrite one raises.
cfrc_ext comes from `mj_rnePostConstraint` on each simulation's MjData after
the step, which the batch then keeps (`persistent`), as Gymnasium computes it
(the hidden sensor's is a substep's first RK4 stage's). Acceleration-stage
sensors are the last substep's, computed in the step's call with the position
and velocity stages (and their sensors) at the new state, as dm_control's
legacy step ends with mj_step1.

Mocap poses are views of the batch's mocap_pos/mocap_quat rows; a write runs
mj_forward for the rows written. Height scans are `Batch.ray` casts (MuJoCo's
mj_ray per simulation, on the batch's thread pool), which leave the state and
outputs as they are.

DR terms write per-simulation model fields (`Batch.expand`) by the rules of
`dr_rules` (inertia with mass, servo bias with kp and kd), and the terms that
feed MuJoCo's derived constants (mass, COM, armature) rerun `mj_setConst` for
the envs written. `body_com` must be named in `randomize=`: MuJoCo compiles
bodies whose COM sits at their frame origin with a shortcut (a diagonal block
of the mass matrix) that a moved COM would break, so the backend then compiles
without it (`compile_spec(movable_com=True)`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import mujoco
import numpy as np
import torch
from mujoco import batch as mjbatch

from unienv.backends.base import (
    MJ_FIELDS,
    TERRAIN_GROUP,
    Capabilities,
    DRTerm,
    SceneInfo,
    SimBackend,
    compile_spec,
    load_mjmodel,
)
from unienv.backends.dr_rules import RULES, ModelDR
from unienv.backends.mujoco_reads import _ACC, _NONE, _SENSED, _VEL, RECOMPUTED_AT, MujocoReads
from unienv.backends.scene import SUBSTEP_READS
from unienv.errors import ArgumentError

_HIDDEN_SENSOR = "_unienv_cfrc"
# warnings after which MuJoCo resets an env's data: a bad qpos, qvel or qacc (adjacent codes)
_UNSTABLE = slice(int(mujoco.mjtWarning.mjWARN_BADQPOS), int(mujoco.mjtWarning.mjWARN_BADQACC) + 1)


HostOrTensor = torch.Tensor | np.ndarray  # what the unchecked entries take on this engine


def _host(x: HostOrTensor) -> np.ndarray:
    """x as a NumPy array (a CPU tensor's memory shared)."""
    return x if x.__class__ is np.ndarray else x.detach().numpy()


def _writable(array: np.ndarray) -> torch.Tensor:
    """A torch view of a batch output (read-only in NumPy, refreshed by each call)."""
    view = array.view()
    view.flags.writeable = True
    return torch.from_numpy(view)


def with_contact_sensor(scene: str, scene_model: mujoco.MjModel, movable_com: bool) -> mujoco.MjModel:
    """The scene plus a hidden accelerometer, so that steps compute cfrc_ext."""
    spec = mujoco.MjSpec.from_file(scene)
    # on the last body, so that it is the last site and the scene's site ids hold
    site = spec.bodies[-1].add_site(name=_HIDDEN_SENSOR, group=5)
    spec.add_sensor(
        name=_HIDDEN_SENSOR,
        type=mujoco.mjtSensor.mjSENS_ACCELEROMETER,
        objtype=mujoco.mjtObj.mjOBJ_SITE,
        objname=site.name,
    )
    model = compile_spec(spec, scene_model.opt.timestep, movable_com=movable_com)
    if model.nsite != scene_model.nsite + 1 or model.site(scene_model.nsite).name != _HIDDEN_SENSOR:
        raise RuntimeError(f"{scene}: the hidden contact sensor's site did not come last")
    return model


class MujocoBackend(MujocoReads, SimBackend):
    """Batched MuJoCo on the CPU; see the module docstring."""

    name = "mujoco"
    takes_numpy = True  # the batch's rows are NumPy: host arrays are copied in as they are
    serves_substep = frozenset(SUBSTEP_READS)

    def __init__(
        self,
        scene: str | os.PathLike,
        num_envs: int,
        sim_dt: float,
        *,
        device: str | torch.device | None = None,
        randomize=(),
        substep_reads=(),
        nthread: int | None = None,
    ):
        super().__init__(
            scene, num_envs, sim_dt, device=device, randomize=randomize, substep_reads=substep_reads
        )
        if device is not None and torch.device(device).type != "cpu":
            raise ArgumentError(
                f"device: the mujoco backend runs on the CPU, got {device!r}; "
                "use backend='mjwarp' or 'genesis' for CUDA"
            )
        if nthread is None:
            nthread = len(os.sched_getaffinity(0))
        if isinstance(nthread, bool) or not isinstance(nthread, int) or nthread < 1:
            raise ArgumentError(f"nthread: expected a positive int, got {nthread!r}")
        self.device = torch.device("cpu")
        self.nthread = nthread
        scene_model = load_mjmodel(scene, sim_dt)
        self.info = SceneInfo.from_mjmodel(scene_model)
        self.model = with_contact_sensor(
            self.scene, scene_model, movable_com="body_com" in self._requested_dr
        )
        self._dr = ModelDR(self.model, self.device, torch.float64)
        self._validate_randomize()

    def get_capabilities(self) -> Capabilities:
        return Capabilities(
            backend="mujoco",
            device="cpu",
            dtype=torch.float64,
            deterministic=True,
            mj_fields=True,
            mocap=True,
            height_scan=True,
            substep_reads=self._substep_reads,
        )

    # ---- lifecycle ----------------------------------------------------------

    def _materialize(self) -> None:
        m = self.model
        substep = self._substep_reads
        # cfrc_ext as the last substep left it is computed from each simulation's own MjData
        self._batch = b = mjbatch.Batch(
            m, nsim=self.num_envs, nthread=self.nthread, persistent="cfrc_ext" in substep
        )
        self._post_data = mujoco.MjData(m) if "cfrc_ext" in substep else None
        self._cfrc_ext = np.zeros((self.num_envs, m.nbody, 6))
        b.reset(stage=_ACC)
        self._ctrl = b.bind("ctrl")
        self._qpos = b.bind("qpos")
        self._qvel = b.bind("qvel")
        self._xfrc = b.bind("xfrc_applied")
        self._host_views = {name: b.bind(name) for name in ("time", "qpos", "qvel", "ctrl")}
        self._views = {name: torch.from_numpy(view) for name, view in self._host_views.items()}
        self._mocap = (torch.from_numpy(b.bind("mocap_pos")), torch.from_numpy(b.bind("mocap_quat")))
        # derived outputs (NumPy views refreshed by each batch call): gathered in NumPy, a
        # quarter of torch's cost per call on small arrays
        self._out = {
            name: b.bind(name)
            for name in ("xpos", "xquat", "cvel", "subtree_com", "sensordata", "cfrc_ext", "site_xpos")
        }
        self._sensordata = _writable(self._out["sensordata"])  # made once: a writable view costs 10 us
        self._root = m.body_rootid.astype(np.int64)
        # outputs bound after the reset are filled by the next batch call: the first derived read runs it
        self._fresh = _NONE  # the stage up to which derived outputs describe every env's state
        self._stale = np.zeros(self.num_envs, dtype=bool)  # rows whose state was set since they were
        self._any_stale = False  # whether _stale has a row: a bool, which a step reads for free
        self._wanted = _NONE  # the highest stage read since the last step: the next one computes it
        self._unstable_warnings = b.warning[:, _UNSTABLE, 1]  # a view of the batch's counters
        self._unstable = self._unstable_warnings.sum(1)
        self._unstable_total = int(self._unstable.sum())  # of _unstable, or None after a state write
        self._wrench_pending = False
        self._pushed = False  # the last step ran with a wrench on
        # get_mj_field's fields, bound on first use; substep reads at once (a field bound later
        # is zero until the next call, which would then be a forward at the state)
        self._mj_bound = {name: b.bind(name) for name in substep if name in MJ_FIELDS}
        # the highest forward stage a read at the state may run without recomputing a substep read
        capped_by = min(substep, key=RECOMPUTED_AT.get, default=None)
        self._state_cap = _SENSED if capped_by is None else RECOMPUTED_AT[capped_by] - 1
        self._capped_by = capped_by
        # acceleration-stage sensors as substep reads: every step runs its last substep with
        # sensors on and the position and velocity stages at the new state (as mj_step1)
        self._floor = _VEL if "sensors" in substep else _NONE
        # mj_resetData clears a sim's whole buffer, arena included; for models whose state row holds
        # only these fields, zeroing the row and writing qpos and qvel is the same reset
        plain = m.neq == 0 and m.nmocap == 0 and m.npluginstate == 0 and m.nhistory == 0 and m.nflex == 0
        fields = ("time", "qpos", "qvel", "act", "qacc_warmstart", "ctrl", "qfrc_applied", "xfrc_applied")
        fields += ("userdata",)
        self._reset_by_row = plain and sum(b.bind(f)[0].size for f in fields) == b.nstate
        # substeps run without sensors where no reader sees them, unless sensors keep a history
        self._disableflags = b.expand("opt.disableflags") if m.nhistory == 0 and m.npluginstate == 0 else None
        self._sensors_on: bool | None = None  # as the flags were last written (None: not yet)
        self._contacts_read = False  # from the first contact-force read on, steps compute cfrc_ext
        self._user_sensors = m.nsensor > 1  # the scene's own, besides the hidden one

    def _close(self) -> None:
        del self._batch, self._views, self._host_views, self._out

    # ---- hot path -----------------------------------------------------------

    def _step_rows(self, ctrl: HostOrTensor, nsteps: int, ids: HostOrTensor) -> None:
        self._step(ctrl, nsteps, _host(ids))  # Batch.step over those simulations alone

    def _step(self, ctrl: torch.Tensor | np.ndarray, nsteps: int, rows: np.ndarray | None = None) -> None:
        self._ctrl[:] = ctrl if ctrl.__class__ is np.ndarray else ctrl.detach().numpy()
        # the stage read since the last step, at the new state (none with a wrench on: cfrc_ext)
        stage = max(_NONE if self._wrench_pending else self._wanted, self._floor)
        # sensors (the hidden one makes MuJoCo compute cfrc_ext; reach 9%, cartpole 4% of the
        # physics) run only where read: at the new state for a sensor or field read (a forward
        # after silent substeps, 0.2-1.6% cheaper than sensors on in the last), else in the last
        # substep once contact forces are read
        if self._disableflags is None:
            self._batch.step(rows, nstep=nsteps, stage=min(stage, _ACC))
        elif stage == _SENSED and nsteps == 1:  # one substep: its sensors cost less than a second call
            self._sensors(True)
            self._batch.step(rows, nstep=1, stage=_ACC)
        elif stage == _SENSED:
            self._sensors(False)
            self._batch.step(rows, nstep=nsteps)
            self._forward(rows, stage=_SENSED)
        elif stage == _ACC:  # MuJoCo fields without sensors: mj_forward in the same batch call
            self._sensors(False)
            self._batch.step(rows, nstep=nsteps, stage=_ACC)
        elif self._contacts_read and not self._user_sensors:
            # the hidden sensor alone costs less in every substep than a second batch call and
            # two flag writes (docs/performance.md)
            self._sensors(True)
            self._batch.step(rows, nstep=nsteps, stage=stage)
        else:
            sensed = self._contacts_read or self._floor == _VEL  # the last substep's sensors are read
            silent = nsteps - sensed
            if silent:
                self._sensors(False)
                self._batch.step(rows, nstep=silent, stage=_NONE if sensed else stage)
            if sensed:
                self._sensors(True)
                self._batch.step(rows, nstep=1, stage=stage)
        self._fresh, self._wanted = stage, _NONE
        if self._any_stale:
            self._stale[:] = False
            self._any_stale = False
        self._pushed = self._wrench_pending  # the last substep's cfrc_ext includes the wrench
        if self._wrench_pending:
            self._xfrc[:] = 0.0
            self._wrench_pending = False

    def _pop_diverged(self) -> torch.Tensor:
        diverged = self._pop_diverged_host()
        return torch.from_numpy(np.zeros(self.num_envs, dtype=bool) if diverged is None else diverged)

    def _pop_diverged_host(self) -> np.ndarray | None:
        # the counters only grow between resets: an unchanged total means no env was reset
        total = int(self._unstable_warnings.sum())
        if total == self._unstable_total:
            return None
        counts = self._unstable_warnings.sum(1)
        reset_by_mujoco = counts > self._unstable
        self._unstable, self._unstable_total = counts, total
        return reset_by_mujoco if reset_by_mujoco.any() else None  # MuJoCo never leaves a non-finite state

    def _set_state(self, ids: HostOrTensor, qpos: HostOrTensor, qvel: HostOrTensor) -> None:
        rows, b = _host(ids), self._batch
        if self._reset_by_row:
            b.state[rows] = 0.0
            b.warning[rows] = 0  # as mj_resetData does
        else:
            b.reset(rows, stage=_NONE)
        self._qpos[rows] = _host(qpos)
        self._qvel[rows] = _host(qvel)
        self._unstable[rows] = 0  # the reset cleared MuJoCo's warning counters of those rows
        self._unstable_total = None
        self._stale[rows] = True  # mj_forward at the next derived read
        self._any_stale = True

    def _apply_body_wrench(self, body_ids: np.ndarray, force: torch.Tensor, torque: torch.Tensor) -> None:
        if self._state_cap == _SENSED:  # substep reads keep the last substep's values
            self._refresh()  # contact forces read before the step must not include the wrench
        self._xfrc[:] = 0.0
        self._xfrc[:, body_ids, :3] = force.numpy()
        self._xfrc[:, body_ids, 3:] = torque.numpy()
        self._wrench_pending = True

    def _mocap_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._mocap

    def _set_mocap_mask(self, mask: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> None:
        rows = np.flatnonzero(mask.numpy())  # the CPU engine: host reads are free
        for view, new in zip(self._mocap, (pos, quat), strict=True):
            view[rows] = new[rows].to(view.dtype)
        self._forward(rows)

    def _cast_down(self, origins: torch.Tensor) -> torch.Tensor:
        # Batch.ray runs mj_kinematics on its own copies: the state and the outputs stay as they are
        group = np.zeros(mujoco.mjNGROUP, dtype=np.uint8)
        group[TERRAIN_GROUP] = 1
        dist, _ = self._batch.ray(origins.numpy(), np.array([0.0, 0.0, -1.0]), geomgroup=group)
        return torch.from_numpy(dist)

    # ---- snapshots ----------------------------------------------------------

    _SOLVER_STATE = ("act", "history", "qacc_warmstart")

    @property
    def physics_state_size(self) -> int:
        m = self.model
        return 1 + m.nq + m.nv + m.na + m.nhistory + m.nv

    def _get_physics_state(self) -> torch.Tensor:
        b = self._batch
        cols = [b.bind("time")[:, None], self._qpos, self._qvel]
        cols += [b.bind(f).reshape(self.num_envs, -1) for f in self._SOLVER_STATE]
        return torch.from_numpy(np.concatenate(cols, axis=1))

    def _set_physics_state(self, ids: torch.Tensor, state: torch.Tensor) -> None:
        b, rows, x = self._batch, ids.numpy(), state.detach().to(torch.float64).numpy()
        nq, nv = self.nq, self.nv
        b.bind("time")[rows] = x[:, 0]
        self._qpos[rows] = x[:, 1 : 1 + nq]
        self._qvel[rows] = x[:, 1 + nq : 1 + nq + nv]
        start = 1 + nq + nv
        for f in self._SOLVER_STATE:
            field = b.bind(f)
            width = int(np.prod(field.shape[1:]))
            part = x[:, start : start + width] if x.shape[1] > start else 0.0
            field.reshape(self.num_envs, -1)[rows] = part
            start += width
        self._forward(rows)

    # ---- domain randomization ----------------------------------------------

    def _dr_terms(self) -> Mapping[str, DRTerm]:
        return self._dr.terms(declare=("body_com",))

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        return self._dr.limits(term, values)

    def _dr_default(self, term: str) -> torch.Tensor:
        return torch.from_numpy(self._dr.default(term))

    def _dr_values(self, term: str) -> torch.Tensor:
        field = self._batch.expanded(RULES[term].field)
        if field is None:
            default = self._dr_default(term)
            return default.expand(self.num_envs, *default.shape)
        return torch.from_numpy(np.array(self._dr.read(term, field), dtype=np.float64))

    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        rows = np.flatnonzero(mask.numpy())  # the CPU engine: host reads are free
        if not rows.size:
            return
        b = self._batch
        self._dr.write(term, mask, values, lambda field: torch.from_numpy(b.expand(field)))
        if RULES[term].set_const:
            b.set_const(rows)
        self._forward(rows)  # derived quantities follow the new model at once


# ---- the engine alone, for unienv.bench ----------------------------------------


def raw_loop(backend, decimation: int, replay: Any, restarts_step: bool = True) -> Callable[[], tuple]:
    """mujoco.batch alone, the loop this backend wraps, for `unienv.bench`: each call writes the
    restarted envs' states (after resetting them, as `_set_state` does) and the controls of
    `replay` (`unienv.bench.Replay`), steps `decimation` times, and returns the qpos and qvel it read.
    restarts_step=False steps only the envs that did not restart (a reset step without physics,
    as NEXT_STEP's and EnvPool's)."""
    model = load_mjmodel(backend.scene, backend.dt)
    batch = mjbatch.Batch(model, nsim=backend.num_envs, nthread=backend.nthread)
    ctrl, qpos, qvel = batch.bind("ctrl"), batch.bind("qpos"), batch.bind("qvel")
    writes, controls = replay.numpy()
    by_row = backend._reset_by_row  # whether zeroing a state row resets that sim, as the backend does
    everyone = np.arange(backend.num_envs)
    stepped = [None if restarts_step or w is None else np.setdiff1d(everyone, w[0]) for w in writes]

    def step() -> tuple:
        i = replay.next()
        if writes[i] is not None:  # the envs that restarted: reset (solver warm start included), then set
            rows, q, v = writes[i]
            if by_row:
                batch.state[rows] = 0.0
            else:
                batch.reset(rows, stage=0)
            qpos[rows], qvel[rows] = q, v
        ctrl[:] = controls[i]
        batch.step(stepped[i], nstep=decimation)
        return qpos.copy(), qvel.copy()

    return step
