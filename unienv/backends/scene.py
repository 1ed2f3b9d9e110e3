"""MJCF scenes through MuJoCo: compiled models, their metadata, and MuJoCo's body views.

Every backend compiles its scene's MJCF with MuJoCo once (`load_mjmodel`, `compile_spec`),
whatever engine then simulates it, so the layout every backend reports (`SceneInfo`: names,
ids, qpos and dof addresses, in MJCF order) is MuJoCo's. `mj_body_views` (torch, MuJoCo
Warp's) and `host_body_views` (NumPy, `mujoco.batch`'s) turn MuJoCo's derived arrays (xpos,
xquat, cvel, subtree_com) into the contract's `BodyViews`. `MJ_FIELDS` names the derived
mjData fields `get_mj_field` serves.

Nothing here holds state; importing this module does not import mujoco (each helper does).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import tempfile
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from unienv.errors import ArgumentError
from unienv.utils.arrays import torch_namespace
from unienv.utils.files import written
from unienv.utils.untrusted import mjcf_files

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

SUBSTEP_READS = (*MJ_FIELDS, "body_views", "sensors")
"""The derived quantities a task may read as the engine's last physics substep left them
(`Task.substep_reads`, the backend's `substep_reads=`) instead of at the state the step
returns: MuJoCo's fields, body views, and acceleration-stage sensors (touch, force), whose
position and velocity sensors stay at the state, as after mj_step1. A reference
environment reads them there: Gymnasium's v5 envs after mj_step (cfrc_ext after
mj_rnePostConstraint), dm_control's legacy step its touch sensors."""


class BodyViews(NamedTuple):
    """Poses and velocities of bodies, world frame, (num_envs, B, ...)."""

    pos: torch.Tensor  # (N, B, 3) body frame origin
    quat: torch.Tensor  # (N, B, 4) wxyz, body to world
    lin_vel: torch.Tensor  # (N, B, 3) velocity of the body frame origin
    ang_vel: torch.Tensor  # (N, B, 3)


def mj_body_views(out: Mapping[str, torch.Tensor], root: torch.Tensor, ids: torch.Tensor) -> BodyViews:
    """BodyViews of bodies `ids` from MuJoCo's xpos, xquat, cvel and subtree_com (N, nbody, ...)
    as torch tensors (MuJoCo Warp's); `root` is MuJoCo's body_rootid.

    cvel is the spatial velocity [angular, linear] at the subtree COM of each
    body's root; the origin's linear velocity is v + w x (p - c).
    """
    xp = torch_namespace(ids.device)
    pos = out["xpos"][:, ids]
    cvel = out["cvel"][:, ids]
    ang = cvel[..., :3]
    lin = cvel[..., 3:] + xp.cross(ang, pos - out["subtree_com"][:, root[ids]])
    return BodyViews(pos, out["xquat"][:, ids], lin, xp.copy(ang))


def host_body_views(out: Mapping[str, np.ndarray], root: np.ndarray, ids: np.ndarray) -> BodyViews:
    """mj_body_views on NumPy arrays (`mujoco.batch`'s), as NumPy arrays: the gathers run with
    `take`, which at a few envs costs a fifth of an indexed gather."""
    pos, cvel = out["xpos"].take(ids, 1), out["cvel"].take(ids, 1)
    ang = cvel[..., :3]
    arm = pos - out["subtree_com"].take(root.take(ids), 1)
    # w x r by components, as NUMPY.cross computes it (np.cross costs three times as much)
    cross = ang.take(_NEXT, -1) * arm.take(_LAST, -1) - ang.take(_LAST, -1) * arm.take(_NEXT, -1)
    return BodyViews(pos, out["xquat"].take(ids, 1), cvel[..., 3:] + cross, ang.copy())


_NEXT, _LAST = np.array([1, 2, 0]), np.array([2, 0, 1])  # the cross product's index cycles


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


MAX_HFIELD_SIDE = 1 << 15
"""The most samples along a side of a heightfield, generated or in a scene file (MuJoCo counts
its samples in int32)."""


def load_mjmodel(scene: str | os.PathLike, sim_dt: float | None = None, movable_com: bool = False) -> Any:
    """Compile an MJCF file with MuJoCo and set its timestep to sim_dt, if given (see
    compile_spec). Every MjModel unienv makes from a file comes from here."""
    import mujoco

    path = os.fspath(scene)
    mjcf_files(path, "scene")  # no FIFO, device or folder among its files, before MuJoCo opens one
    try:
        spec = mujoco.MjSpec.from_file(path)
    except ValueError as e:
        raise ArgumentError(f"scene: {path!r} is not valid MJCF: {e}") from None
    for hfield in spec.hfields:  # MuJoCo allocates nrow * ncol floats per heightfield
        if max(hfield.nrow, hfield.ncol) > MAX_HFIELD_SIDE:
            raise ArgumentError(
                f"scene: heightfield {hfield.name!r} of {path!r} has {hfield.nrow} x {hfield.ncol} samples; "
                f"expected at most {MAX_HFIELD_SIDE} a side"
            )
    try:
        return compile_spec(spec, sim_dt, movable_com)
    except ValueError as e:
        raise ArgumentError(f"scene: {path!r} does not compile: {e}") from None


def edit_spec(scene: str | os.PathLike) -> Any:
    """The MjSpec of the MJCF file `scene`, to edit and write elsewhere with `write_spec`: its mesh
    and texture folders made absolute, so that the copy finds them where they are."""
    import mujoco

    mjcf_files(scene, "scene")
    try:
        spec = mujoco.MjSpec.from_file(os.fspath(scene))
    except ValueError as e:
        raise ArgumentError(f"scene: {os.fspath(scene)!r} is not valid MJCF: {e}") from None
    for field in ("meshdir", "texturedir"):
        folder = getattr(spec, field)
        if folder and not os.path.isabs(folder):
            setattr(spec, field, os.path.join(os.path.dirname(os.path.abspath(scene)), folder))
    return spec


def write_spec(spec: Any, scene: str | os.PathLike, folder: str) -> str:
    """Write the edited copy `spec` of the MJCF file `scene` to `folder` under the temporary
    directory, once per content (named by scene's name and a digest); returns its path."""
    xml = spec.to_xml()
    digest = hashlib.sha1(xml.encode() + os.fspath(scene).encode()).hexdigest()[:16]
    directory = os.path.join(tempfile.gettempdir(), folder)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{os.path.splitext(os.path.basename(scene))[0]}_{digest}.xml")
    if not os.path.exists(path):
        with written(path) as temporary, open(temporary, "w") as f:
            f.write(xml)
    return path


@contextlib.contextmanager
def mujoco_warnings_as_python():
    """While active, MuJoCo's warnings become Python warnings instead of stdout lines and a
    MUJOCO_LOG.TXT in the working directory, and `settotalmass`'s deprecation is dropped (for
    a parser that compiles a scene itself, as Genesis does: compile_spec applies it properly)."""

    def forward(message: str) -> None:
        if "settotalmass" not in message:
            warnings.warn(f"MuJoCo: {message}", stacklevel=2)

    with mujoco_warnings_to(forward):
        yield


@contextlib.contextmanager
def mujoco_warnings_to(handler):
    """While active, MuJoCo's warnings go to handler(message), not to stdout and MUJOCO_LOG.TXT."""
    import mujoco

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(handler)
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
