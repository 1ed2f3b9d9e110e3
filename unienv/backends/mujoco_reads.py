"""The `mujoco` backend's reads: the forward stages each read needs, and the reads themselves,
in NumPy (the batch's own arrays) and as the contract's torch tensors.

The stages: a read names the highest stage it needs (body views and Jacobians `mjSTAGE_VEL`,
sensors and MuJoCo fields the whole `mj_forward`, `_SENSED` with sensors on); the first read
after a step computes it over every env, and the next step computes it inside its own batch
call (the module docstring of `unienv.backends.mujoco` says when and what it costs).
A substep read (`substep_reads=`) computes nothing at the state: it serves what the step's
last substep left (and a written row's values at its new state), and a read at the state
that would recompute it raises.

`HostReads` serves a task that computes in NumPy (what the env hands `Task.read` on the CPU
engine): the same reads with the same checks and values, as NumPy arrays, with no torch view
in between. A task would convert each view back with `xp.asarray`, and each torch call in a
NumPy step costs a few microseconds, more inside the step's loop than alone (measured:
inverted_pendulum's single env 15 us of about 90 for its two state views).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np
import torch

from unienv.backends.scene import BodyViews, host_body_views
from unienv.errors import CapabilityError

_ACC = mujoco.mjtStage.mjSTAGE_ACC.value
_VEL = mujoco.mjtStage.mjSTAGE_VEL.value
_NONE = mujoco.mjtStage.mjSTAGE_NONE.value
# the whole mj_forward with sensors on (cfrc_ext too, which the hidden sensor makes MuJoCo
# compute); _ACC alone is mj_forward with sensors off, all that MuJoCo fields but cfrc_ext need
_SENSED = _ACC + 1
_SENSORS_OFF = int(mujoco.mjtDisableBit.mjDSBL_SENSOR)
_POS = mujoco.mjtStage.mjSTAGE_POS.value
# the stage that computes each MuJoCo field at the state (cfrc_ext: the hidden sensor's)
_FIELD_STAGE = {
    "cinert": _POS,
    "xipos": _POS,
    "site_xpos": _POS,
    "cvel": _VEL,
    "qfrc_actuator": _ACC,
    "qfrc_constraint": _ACC,
    "cfrc_ext": _SENSED,
}
# the forward stage at the state that overwrites each substep read: kinematics and collision
# (cfrc_ext's contacts) run in the position stage; acceleration-stage sensors are kept by a
# forward up to the velocity stage in the step's own call, which a full forward (run with
# sensors off) is not
RECOMPUTED_AT = {**_FIELD_STAGE, "cfrc_ext": _POS, "body_views": _POS, "sensors": _ACC}


class MujocoReads:
    """MujocoBackend's reads and the stage bookkeeping behind them (a mixin: the batch, its
    bound outputs and the freshness flags are the backend's, made in `_materialize`)."""

    def host_reads(self) -> HostReads:
        return HostReads(self)

    # ---- stages ---------------------------------------------------------------

    def _sensors(self, on: bool) -> None:
        """Sensors on or off in the batch's next calls (set only when that changes: a write
        to the per-simulation flags costs a microsecond)."""
        flags = self._disableflags
        if flags is not None and on is not self._sensors_on:
            flags[:] = self.model.opt.disableflags | (0 if on else _SENSORS_OFF)
            self._sensors_on = on

    def _forward(self, rows: np.ndarray | None = None, stage: int = _SENSED) -> None:
        """The forward stages up to `stage` for those rows (or all), sensors included but at
        _ACC (the fields without sensors)."""
        self._sensors(stage != _ACC)
        self._batch.forward(rows, stage=min(stage, _ACC))

    def _refresh(self, stage: int = _SENSED) -> None:
        """The forward stages up to `stage` over all envs if a step left them behind the state,
        or mj_forward over the rows whose state was set since."""
        if stage > self._state_cap:
            raise CapabilityError(
                f"substep_reads: a read at the returned state would recompute {self._capped_by}, "
                "which this backend serves as the last substep left it"
            )
        self._wanted = max(self._wanted, stage)
        if self._fresh < stage:
            # a forward short of the acceleration stage leaves the acceleration-stage sensors
            # to whichever simulation last ran on the batch's MjData: with those as substep
            # reads (which only the step's own call keeps), the whole mj_forward runs here
            stage = _SENSED if self._floor == _VEL else stage
            self._forward(stage=stage)
            self._fresh = stage
            self._stale[:] = False
            self._any_stale = False
        else:
            self._refresh_stale()

    def _refresh_stale(self) -> None:
        """mj_forward for the rows whose state was set since their outputs were computed."""
        if self._any_stale:
            stale = self._stale  # every row (a whole reset): no ids, which the batch converts
            self._forward(None if stale.all() else np.flatnonzero(stale))
            self._stale[:] = False
            self._any_stale = False

    # ---- the reads in NumPy -----------------------------------------------------

    def _host_body_views(self, body_ids: np.ndarray) -> BodyViews:
        if "body_views" in self._substep_reads:
            self._refresh_stale()
        else:
            self._refresh(_VEL)  # xpos, xquat, subtree_com (positions) and cvel (velocities)
        return host_body_views(self._out, self._root, body_ids)

    def _sensor_columns(self, sensor_id: int) -> slice:
        # as substep reads, acceleration-stage sensors are the last substep's (every step then
        # runs it with sensors on and the position and velocity ones at the state, as mj_step1)
        self._refresh(_VEL if "sensors" in self._substep_reads else _SENSED)
        adr = int(self.info.sensor_adr[sensor_id])
        return slice(adr, adr + int(self.info.sensor_dim[sensor_id]))

    def _host_contact_forces(self, body_ids: np.ndarray) -> np.ndarray:
        # the last substep's (no mj_forward), unless it had a wrench on (which cfrc_ext includes)
        # or ran without sensors (no read before it): then those at the state, without the wrench
        if self._pushed or not self._contacts_read:
            self._contacts_read = True
            self._refresh()
        else:
            self._refresh_stale()  # a reset row's are those at its new state
        return self._out["cfrc_ext"][:, body_ids, 3:]  # a gather in NumPy: a copy

    def _host_site_jacobian(self, site_id: int) -> tuple[np.ndarray, np.ndarray]:
        self._refresh(_VEL)
        body = int(self.model.site_bodyid[site_id])
        return self._batch.jac(body, self._out["site_xpos"][:, site_id])

    def _host_mj_field(self, name: str) -> np.ndarray:
        if name not in self._mj_bound:  # a newly bound output is filled by the next call
            self._mj_bound[name] = self._batch.bind(name)
            self._fresh = _NONE
        if name == "cfrc_ext" and name in self._substep_reads:
            self._refresh_stale()
            return self._post_constraint_cfrc_ext()
        if name in self._substep_reads:
            self._refresh_stale()
        else:
            self._refresh(_FIELD_STAGE[name])  # only cfrc_ext needs the sensors
        value = self._mj_bound[name].copy()
        if name == "site_xpos":  # without the hidden sensor's site, which is last
            value = value[:, : len(self.info.names["site"])]
        return value

    def _post_constraint_cfrc_ext(self) -> np.ndarray:
        """cfrc_ext as mj_rnePostConstraint computes it from what each simulation's last call
        left (the last substep's last stage, as Gymnasium reads it): MuJoCo computes it only
        for sensors, which RK4 evaluates at a substep's first stage, so it is computed here on
        each simulation's MjData, which the batch keeps for this read (`persistent`)."""
        data, out = self._post_data, self._cfrc_ext
        for i in range(self.num_envs):
            self._batch.get_data(i, data)
            mujoco.mj_rnePostConstraint(self.model, data)
            out[i] = data.cfrc_ext
        return out.copy()

    # ---- the contract's tensors: the same arrays, wrapped ------------------------

    def _state_views(self) -> Mapping[str, torch.Tensor]:
        return self._views

    def _body_views(self, body_ids: np.ndarray) -> BodyViews:
        return BodyViews(*map(torch.from_numpy, self._host_body_views(body_ids)))

    def _sensor_view(self, sensor_id: int) -> torch.Tensor:
        return self._sensordata[:, self._sensor_columns(sensor_id)]

    def _contact_forces(self, body_ids: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(self._host_contact_forces(body_ids))

    def _site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        jacp, jacr = self._host_site_jacobian(site_id)
        return torch.from_numpy(jacp), torch.from_numpy(jacr)

    def _mj_field(self, name: str) -> torch.Tensor:
        return torch.from_numpy(self._host_mj_field(name))


class HostReads:
    """A MujocoBackend's reads as NumPy arrays: `get_state_views`, `get_body_views`,
    `get_sensor_view`, `get_contact_forces`, `get_site_jacobian` and `get_mj_field` with the
    backend's checks and values (the state views share the batch's rows; the sensor view is a
    read-only view of its output). Every other attribute is the backend's own."""

    def __init__(self, backend: MujocoReads):
        self.backend = backend

    def __getattr__(self, name: str) -> Any:
        if name == "backend":  # not set yet (an object being copied): no recursion
            raise AttributeError(name)
        return getattr(self.backend, name)

    def get_state_views(self) -> Mapping[str, np.ndarray]:
        self.backend._ready()
        return self.backend._host_views

    def get_body_views(self, body_ids: Any) -> BodyViews:
        b = self.backend
        return b._host_body_views(b._checked_bodies(body_ids, "body_views"))

    def get_sensor_view(self, name: str) -> np.ndarray:
        b = self.backend
        return b._out["sensordata"][:, b._sensor_columns(b._checked_sensor(name))]

    def get_contact_forces(self, body_ids: Any) -> np.ndarray:
        b = self.backend
        return b._host_contact_forces(b._checked_bodies(body_ids, "contact_forces"))

    def get_site_jacobian(self, site_id: int) -> tuple[np.ndarray, np.ndarray]:
        b = self.backend
        return b._host_site_jacobian(b._checked_site(site_id))

    def get_mj_field(self, name: str) -> np.ndarray:
        b = self.backend
        return b._host_mj_field(b._checked_field(name))
