"""The SimBackend contract's optional features: what a backend reads and applies beyond its state.

Each feature is a `Capabilities` flag, and a backend that declares it False raises
CapabilityError when it is used (the default hooks here do): body views, sensors, contact
forces, site Jacobians and body wrenches (True unless a backend says otherwise), MuJoCo's
derived fields (`get_mj_field`, MJ_FIELDS), mocap bodies moved per env
(`set_mocap_pose_tensor*`, `get_mocap_views`) and height scans of terrain (`get_height_scan`:
the engine's vertical ray casts onto geom group TERRAIN_GROUP, around a body in its yaw frame).

Invariants: derived quantities describe the backend's current state (but those named in its
`substep_reads=`, which describe what the last physics substep left); a write that raises has
changed nothing; a masked write on a `sync_free` backend reads nothing on the host and leaves
its bad rows unwritten (the backend's input policy, `checks.DeviceInputs`).

`SimBackend` inherits this class; an engine overrides the hooks at its bottom.
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import torch

from unienv.backends import checks
from unienv.backends.scene import MJ_FIELDS, BodyViews, SceneInfo
from unienv.errors import ArgumentError, CapabilityError, unknown_name

TERRAIN_GROUP = 2
"""The geom group of terrain (MJCF `<geom group="2">`, as `unienv.terrain` writes it): the only
geoms a height scan sees, so that the robot's own geoms never hide the ground."""
SCAN_ABOVE, SCAN_BELOW = 1.0, 4.0
"""Height-scan rays run from SCAN_ABOVE metres above the body down to SCAN_BELOW below it."""


class Features(abc.ABC):
    """The optional features of SimBackend; see the module docstring."""

    name: str
    num_envs: int
    device: torch.device
    info: SceneInfo
    _inputs: checks.HostInputs | checks.DeviceInputs
    _sensor_ids: dict[str, int]
    # and SimBackend's methods: _ready, _check_open, _require, find, _finite_array

    def get_body_views(self, body_ids: Any) -> BodyViews:
        """World-frame poses and velocities of the given bodies, (N, B, ...)."""
        return self._body_views(self._checked_bodies(body_ids, "body_views"))

    def get_sensor_view(self, name: str) -> torch.Tensor:
        """Live (num_envs, dim) view of the named sensor's output."""
        return self._sensor_view(self._checked_sensor(name))

    def get_contact_forces(self, body_ids: Any) -> torch.Tensor:
        """Net contact force on each body in the world frame, (N, B, 3).

        Forces are those of the last physics step.
        """
        return self._contact_forces(self._checked_bodies(body_ids, "contact_forces"))

    def get_site_jacobian(self, site_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Translational and rotational world-frame Jacobians of a site, (N, 3, nv) each."""
        return self._site_jacobian(self._checked_site(site_id))

    def apply_body_wrench(self, body_ids: Any, force: torch.Tensor, torque: torch.Tensor) -> None:
        """World-frame force and torque at each body's COM, for the next step only.

        force and torque are (num_envs, B, 3); a second call before the step
        replaces the first. A NaN or inf raises ArgumentError, except on a sync-free
        backend, which checks on the device and gives that env no wrench.
        """
        self._ready()
        self._require("body_wrench")
        ids = self._object_ids(body_ids, "body")
        force = checks.checked_array(force, "force", (self.num_envs, len(ids), 3), self.device)
        torque = checks.checked_array(torque, "torque", (self.num_envs, len(ids), 3), self.device)
        self._apply_body_wrench(ids, *self._inputs.wrench(force, torque))

    def get_mj_field(self, name: str) -> torch.Tensor:
        """MuJoCo's mjData field `name` (one of MJ_FIELDS) for every env, (N, ...), a copy
        in the backend's float dtype.

        Values are those at the current state, as `mj_forward` then
        `mj_rnePostConstraint` compute them (not one substep behind, as after
        `mj_step`), with the controls of the last step; a field named in the
        backend's `substep_reads=` is what `mj_step` left (cfrc_ext then after
        `mj_rnePostConstraint`), as Gymnasium reads it.
        """
        return self._mj_field(self._checked_field(name))

    def host_reads(self) -> Any:
        """What a task computing in NumPy reads from (the env hands it to `Task.read`): the
        reads above, with their checks and values, as the host arrays the engine holds where
        it holds them (the CPU engine: `unienv.backends.mujoco_reads.HostReads`, which spares
        the task a torch view per read that it would convert back), else this backend."""
        return self

    # the reads' argument checks (the backend ready, the feature declared), which the host
    # reads share

    def _checked_bodies(self, body_ids: Any, feature: str) -> np.ndarray:
        self._ready()
        self._require(feature)
        return self._object_ids(body_ids, "body")

    def _checked_sensor(self, name: str) -> int:
        self._ready()
        sensor = self._sensor_ids.get(name)
        if sensor is None:  # found once per name (a task reads its sensors every step)
            sensor = self._sensor_ids[name] = int(self.find("sensor", name)[0])
        self._require("sensors")
        return sensor

    def _checked_site(self, site_id: int) -> int:
        self._ready()
        self._require("site_jacobian")
        return int(self._object_ids([site_id], "site")[0])

    def _checked_field(self, name: str) -> str:
        self._ready()
        if name not in MJ_FIELDS:
            raise unknown_name("MuJoCo field", name, MJ_FIELDS)
        self._require("mj_fields")
        return name

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
        body = int(self._object_ids([body_id], "body")[0])
        checks.checked_offsets(offsets)
        offsets = checks.checked_array(offsets, "offsets", tuple(offsets.shape), self.device)
        self._inputs.offsets(offsets)
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
        ids, order = checks.checked_ids(env_ids, self.num_envs)
        pos = self._finite_array(pos, "pos", (len(ids), self.nmocap, 3))
        quat = self._finite_array(quat, "quat", (len(ids), self.nmocap, 4))
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
        mask = checks.checked_mask(mask, self.num_envs)
        pos = checks.checked_array(pos, "pos", (self.num_envs, self.nmocap, 3), self.device)
        quat = checks.checked_array(quat, "quat", (self.num_envs, self.nmocap, 4), self.device)
        mask = mask.to(self.device)
        good = (torch.isfinite(pos).flatten(1).all(1) & torch.isfinite(quat).flatten(1).all(1)) & (
            quat.norm(dim=-1) > 1e-9
        ).all(1)
        bad = [(~good, "pos, quat: a masked row has NaN, inf or a zero quaternion")]
        return self._inputs.write_masked(mask, bad, lambda rows: self._set_mocap_mask(rows, pos, quat))

    def _object_ids(self, ids: Any, kind: str) -> np.ndarray:
        return checks.checked_object_ids(ids, kind, len(self.info.names[kind]))

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
