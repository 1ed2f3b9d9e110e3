"""Where MuJoCo's objects are in Genesis's scene, and Genesis's solver options.

Cold path only. `materialize()` maps MJCF bodies and geoms to Genesis's links and geoms and
checks that Genesis kept MuJoCo's qpos and dof order and joint types (`map_layout`), so that no
state conversion is needed. What the backend refuses to simulate is in `genesis_checks`.
"""

from __future__ import annotations

import warnings
from typing import Any

import genesis as gs
import mujoco
import numpy as np
import torch

from unienv.errors import ArgumentError

INTEGRATORS = {"euler": "Euler", "implicitfast": "implicitfast"}
# MuJoCo's integrator (mjtIntegrator) -> the closest Genesis has
FROM_MUJOCO = {
    int(mujoco.mjtIntegrator.mjINT_EULER): "euler",
    int(mujoco.mjtIntegrator.mjINT_RK4): "implicitfast",
    int(mujoco.mjtIntegrator.mjINT_IMPLICIT): "implicitfast",
    int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): "implicitfast",
}


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The torch device the backend runs on: CUDA device 0 (where Quadrants runs) or the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ArgumentError(f"device: expected 'cpu', 'cuda' or None, got {device!r}") from e
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ArgumentError(f"device: {device!r} requested but CUDA is not available; use 'cpu' or None")
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


def force_range(m: mujoco.MjModel, dtype: torch.dtype, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-actuator force limits in joint units: gear * forcerange, then the joint's actfrcrange."""
    lo, hi = [], []
    for a in range(m.nu):
        low, high = -np.inf, np.inf
        if m.actuator_forcelimited[a]:
            low, high = np.sort(m.actuator_gear[a, 0] * m.actuator_forcerange[a])
        j = int(m.actuator_trnid[a, 0])
        if m.jnt_actfrclimited[j]:
            low, high = np.clip([low, high], *m.jnt_actfrcrange[j])
        lo.append(low)
        hi.append(high)
    return (torch.tensor(x, dtype=dtype, device=device) for x in (lo, hi))


def map_layout(m: mujoco.MjModel, ent: Any, scene: str) -> tuple[np.ndarray, np.ndarray]:
    """Each MJCF body's Genesis link (-1: the world, which Genesis dropped) and each geom's Genesis
    geom (-1: not colliding, which Genesis drops), after checking that Genesis kept MuJoCo's qpos/dof
    order and joint types."""
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
            f"scene: Genesis parsed {scene!r} into a joint layout that differs from MuJoCo's "
            "(order or type); the genesis backend cannot map its state"
        )
    # Genesis drops the world body when it holds no geometry
    links = ent.links
    offset = m.nbody - len(links)
    if offset not in (0, 1):
        raise ArgumentError(f"scene: Genesis made {len(links)} links of {m.nbody} MJCF bodies")
    body_link = np.arange(m.nbody) - offset  # -1: the world, not a Genesis link
    # Genesis keeps the colliding geoms only, link by link, in MJCF order
    geom_of_body: dict[int, list[int]] = {}
    for g in range(m.ngeom):
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            geom_of_body.setdefault(int(m.geom_bodyid[g]), []).append(g)
    geom_gs = np.full(m.ngeom, -1, dtype=np.int64)
    for link in links:
        mj_geoms = geom_of_body.get(link.idx - link.entity.link_start + offset, [])
        if len(mj_geoms) != len(link.geoms):
            raise ArgumentError(
                f"scene: Genesis made {len(link.geoms)} collision geoms of body {link.name!r}"
            )
        for g, geom in zip(mj_geoms, link.geoms, strict=True):
            geom_gs[g] = geom.idx
    return body_link, geom_gs


def choose_integrator(m: mujoco.MjModel, integrator: str | None, scene: str) -> tuple[str, tuple[str, ...]]:
    """Genesis's integrator (one of INTEGRATORS): the one asked for, else the closest to the
    scene's; and the difference from MuJoCo, one line, warned of where the scene's is missing."""
    differences: tuple[str, ...] = ()
    if integrator is None:
        integrator = FROM_MUJOCO[int(m.opt.integrator)]
        scene_integrator = mujoco.mjtIntegrator(int(m.opt.integrator)).name[len("mjINT_") :].lower()
        if scene_integrator != integrator:
            differences = (
                f"integrator: the scene asks for {scene_integrator}, which Genesis lacks; "
                f"it runs {integrator} (pass integrator= to choose)",
            )
            warnings.warn(f"genesis backend, {scene}: {differences[0]}", stacklevel=3)
    if integrator not in INTEGRATORS:
        raise ArgumentError(f"integrator: expected one of {sorted(INTEGRATORS)}, got {integrator!r}")
    return integrator, differences


def solver_options(integrator: str, batch_flags: list[str], extra: Any) -> dict[str, Any]:
    """Genesis's RigidOptions for a scene run as MuJoCo would (its compatibility mode, MuJoCo's
    solref), with the per-env batch flags DR needs and the user's `extra` options, validated now
    (Genesis must be initialised)."""
    options = {
        "integrator": getattr(gs.integrator, INTEGRATORS[integrator]),
        "enable_mujoco_compatibility": True,
        "constraint_timeconst": 0.02,  # MuJoCo's default solref[0]
    }
    options.update(dict.fromkeys(batch_flags, True))
    options.update(extra or {})
    try:  # validate every option now, on the cold path
        gs.options.RigidOptions(**options)
    except Exception as e:
        raise ArgumentError(f"rigid_options: not valid Genesis RigidOptions: {e}") from e
    return options
