"""Genesis's state read in MuJoCo's conventions: body views, sensors and site Jacobians.

Genesis keeps MuJoCo's body order and free-joint layout, but it does not parse MJCF sensors and
its own Jacobian takes a free joint's rotation in the world frame and leaves ball joints out.
These functions compute what the contract serves from Genesis's link poses (`body_views`, world
frame, wxyz quaternions) and the joints' qpos, by MuJoCo's definitions; each returns a fresh
tensor in the state's dtype, on its device, with no host read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
import torch

from unienv.backends.scene import BodyViews
from unienv.errors import CapabilityError


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product of wxyz quaternions, (..., 4)."""
    aw, av, bw, bv = a[..., :1], a[..., 1:], b[..., :1], b[..., 1:]
    return torch.cat(
        [aw * bw - (av * bv).sum(-1, keepdim=True), aw * bv + bw * av + torch.cross(av, bv, dim=-1)], -1
    )


def conj(q: torch.Tensor) -> torch.Tensor:
    """The inverse rotation of unit wxyz quaternions."""
    return torch.cat([q[..., :1], -q[..., 1:]], -1)


def rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (..., 3) rotated by the wxyz quaternion q (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(u, v, dim=-1)
    return v + w * t + torch.cross(u, t, dim=-1)


SENSORS = ("jointpos", "jointvel", "framepos", "framequat")


def sensor_value(
    m: mujoco.MjModel, sensor_id: int, qpos: torch.Tensor, qvel: torch.Tensor, body_views: Callable
) -> torch.Tensor:
    """The MJCF sensors Genesis does not parse, computed from the state (qpos, qvel, and
    `body_views(ids)` in world frame): joint position and velocity, and a site's or body's
    world position and orientation. A fresh copy."""
    kind = mujoco.mjtSensor(int(m.sensor_type[sensor_id])).name[len("mjSENS_") :].lower()
    obj, objtype = int(m.sensor_objid[sensor_id]), int(m.sensor_objtype[sensor_id])
    if kind in ("jointpos", "jointvel"):
        adr = (m.jnt_qposadr if kind == "jointpos" else m.jnt_dofadr)[obj]
        return (qpos if kind == "jointpos" else qvel)[:, adr : adr + 1].clone()
    site = objtype == mujoco.mjtObj.mjOBJ_SITE.value
    body_kinds = (mujoco.mjtObj.mjOBJ_BODY.value, mujoco.mjtObj.mjOBJ_XBODY.value)
    if kind not in SENSORS or int(m.sensor_refid[sensor_id]) >= 0 or not (site or objtype in body_kinds):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SENSOR, sensor_id) or f"sensor{sensor_id}"
        raise CapabilityError(
            f"the genesis backend computes {', '.join(SENSORS)} sensors of sites and bodies in the "
            f"world frame only; sensor {name!r} is a {kind}"
        )
    body = int(m.site_bodyid[obj]) if site else obj
    views = body_views(np.array([body]))
    pos, quat = views.pos[:, 0], views.quat[:, 0]
    if not site:
        return pos if kind == "framepos" else quat
    local = torch.as_tensor(m.site_pos[obj], dtype=pos.dtype, device=pos.device)
    if kind == "framepos":
        return pos + rotate(quat, local.expand_as(pos))
    return quat_mul(
        quat, torch.as_tensor(m.site_quat[obj], dtype=quat.dtype, device=quat.device).expand_as(quat)
    )


def site_jacobian(
    m: mujoco.MjModel, site_id: int, qpos: torch.Tensor, body_views: Callable
) -> tuple[torch.Tensor, torch.Tensor]:
    """Built in MuJoCo's conventions from the parent links' poses and the joints' qpos
    (Genesis's own Jacobian takes a free joint's rotation in the world frame and leaves ball
    joints out): a dof turning about a world axis a at anchor p moves the site by
    a x (site - p) and turns it about a; a slide moves it along its axis.

    As MuJoCo does, each joint of a body acts on the frame its earlier joints left: its
    anchor and axis are taken there, then its motion is applied. Ball and free rotations are
    about the body's own axes after the rotation (qvel is body-frame there), a free joint's
    translation is world-aligned."""
    body = int(m.site_bodyid[site_id])
    chain = [body]
    while chain[-1] > 0:
        chain.append(int(m.body_parentid[chain[-1]]))
    chain = chain[::-1]  # from the world to the site's body
    views = body_views(np.asarray(chain))
    n, dtype, device = qpos.shape[0], qpos.dtype, qpos.device
    eye = torch.eye(3, dtype=dtype, device=device).expand(n, 3, 3)

    def vector(x: np.ndarray) -> torch.Tensor:  # a model vector, one row per env
        return torch.as_tensor(x, dtype=dtype, device=device).expand(n, len(x))

    def axes(q: torch.Tensor) -> torch.Tensor:  # (n, 3 axes, 3) of the frame of quaternion q
        return rotate(q[:, None].expand(n, 3, 4), eye)

    columns = []  # (dof, world axis (n, 3), anchor (n, 3) or None for a translation)
    for i, b in enumerate(chain[1:], start=1):
        parent_pos, parent_quat = views.pos[:, i - 1], views.quat[:, i - 1]
        p = parent_pos + rotate(parent_quat, vector(m.body_pos[b]))
        q = quat_mul(parent_quat, vector(m.body_quat[b]))
        for j in range(int(m.body_jntadr[b]), int(m.body_jntadr[b]) + int(m.body_jntnum[b])):
            kind, dof, adr = int(m.jnt_type[j]), int(m.jnt_dofadr[j]), int(m.jnt_qposadr[j])
            anchor = p + rotate(q, vector(m.jnt_pos[j]))
            if kind == mujoco.mjtJoint.mjJNT_FREE.value:
                p, q = qpos[:, adr : adr + 3], qpos[:, adr + 3 : adr + 7]
                columns += [(dof + k, eye[:, k], None) for k in range(3)]
                columns += [(dof + 3 + k, axes(q)[:, k], p) for k in range(3)]
            elif kind == mujoco.mjtJoint.mjJNT_BALL.value:
                turned = quat_mul(q, qpos[:, adr : adr + 4])
                p = anchor + rotate(turned, rotate(conj(q), p - anchor))
                q = turned
                columns += [(dof + k, axes(q)[:, k], anchor) for k in range(3)]
            else:
                axis = rotate(q, vector(m.jnt_axis[j]))
                angle = qpos[:, adr : adr + 1] - float(m.qpos0[adr])
                if kind == mujoco.mjtJoint.mjJNT_SLIDE.value:
                    p = p + angle * axis
                    columns.append((dof, axis, None))
                else:
                    turn = torch.cat([torch.cos(angle / 2), torch.sin(angle / 2) * axis], -1)
                    p, q = anchor + rotate(turn, p - anchor), quat_mul(turn, q)
                    columns.append((dof, axis, anchor))
    site = p + rotate(q, vector(m.site_pos[site_id]))
    jacp = torch.zeros(n, 3, m.nv, dtype=dtype, device=device)
    jacr = torch.zeros_like(jacp)
    for dof, axis, anchor in columns:
        if anchor is None:
            jacp[:, :, dof] = axis
        else:
            jacr[:, :, dof] = axis
            jacp[:, :, dof] = torch.cross(axis, site - anchor, dim=-1)
    return jacp, jacr


def link_views(
    sol: Any, links: torch.Tensor, body_link: np.ndarray, body_ids: np.ndarray, envs: torch.Tensor
) -> BodyViews:
    """BodyViews of MJCF bodies from Genesis's links (`links`: each body's link, `body_link`: -1
    for the world body, which Genesis dropped: it is at rest at the origin). Runs Genesis's
    forward kinematics for `envs` first if a step left link poses behind qpos."""
    if not (sol._is_forward_pos_updated and sol._is_forward_vel_updated):
        from genesis.engine.solvers.rigid.abd.forward_kinematics import kernel_forward_kinematics_links_geoms

        kernel_forward_kinematics_links_geoms(
            envs, sol.dyn_state, sol.dyn_info, sol.rigid_info, sol.rigid_config
        )
        sol._is_forward_pos_updated = sol._is_forward_vel_updated = True
    ids = links[body_ids]
    pos, quat = sol.get_links_pos(ids), sol.get_links_quat(ids)
    lin, ang = sol.get_links_vel(ids), sol.get_links_ang(ids)
    world = np.flatnonzero(body_link[body_ids] < 0)  # on the host: the ids are
    if world.size:
        for x in (pos, lin, ang):
            x[:, world] = 0.0
        quat[:, world] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=quat.dtype, device=quat.device)
    return BodyViews(pos, quat, lin, ang)
