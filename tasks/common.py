"""Pure batched helpers that several tasks share: state reads, reward terms, resets.

Every function maps arrays (N, ...) to arrays of the same namespace (NumPy or torch,
see `unienv.utils.arrays`), in the dtype it is given, and keeps no state; the few that need
a namespace call take the task (`task.xp`) or `xp`. Gymnasium's MuJoCo locomotion
tasks are built from the same pieces: a forward velocity over the env step, a
quadratic control cost, health as state inside ranges, and a reset at qpos0 plus noise.
"""

from __future__ import annotations

from typing import Any

from unienv.backends.base import SimBackend
from unienv.utils.random import Sampler


def read_state(task, backend: SimBackend) -> dict[str, Any]:
    """qpos and qvel as copies (the views change with the next step), in the task's namespace."""
    s, xp = backend.get_state_views(), task.xp
    return {"qpos": xp.copy(xp.asarray(s["qpos"])), "qvel": xp.copy(xp.asarray(s["qvel"]))}


def forward_velocity(x, x_before, dt: float):
    """Velocity along x over one env step of dt seconds."""
    return (x - x_before) / dt


def ctrl_cost(action, weight: float):
    """-weight |action|^2 per env."""
    return -weight * (action * action).sum(1)


def v5_ctrl_cost(task, action, weight: float):
    """-weight |action|^2 per env as Gymnasium's v5 computes it from its float32 actions:
    squared, summed and weighted in float32 (then in the task's dtype, exactly)."""
    xp = task.xp
    a = xp.astype(action, xp.float32)
    return xp.astype(-weight * (a * a).sum(1), task.dtype)


def v5_total(terms: dict[str, Any], costs: tuple[str, ...] = ("ctrl", "contact")):
    """The reward in v5's order: the rewards summed, then the costs summed and subtracted
    ((forward + healthy) - (ctrl + contact)); `terms` holds the costs negated, so the costs'
    sum is added (negation is exact)."""
    gains = [v for k, v in terms.items() if k not in costs]
    losses = [v for k, v in terms.items() if k in costs]
    out = sum(gains[1:], gains[0])
    return out + sum(losses[1:], losses[0]) if losses else out


def locomotion_terms(task, s, prev, action) -> dict[str, Any]:
    """Gymnasium's forward, healthy and ctrl reward terms, from the task's options of those
    names: the root's x velocity over the step (qpos[:, 0]), a reward while s["healthy"],
    and the control cost (v5's, in float32)."""
    return {
        "forward": task.forward_reward_weight
        * forward_velocity(s["qpos"][:, 0], prev["qpos"][:, 0], task.dt),
        "healthy": task.healthy_reward * task.xp.astype(s["healthy"], task.dtype),
        "ctrl": v5_ctrl_cost(task, action, task.ctrl_cost_weight),
    }


def healthy_state(task, s):
    """A finite state (qpos and qvel), the first part of Gymnasium's health checks."""
    xp = task.xp
    return xp.isfinite(s["qpos"]).all(1) & xp.isfinite(s["qvel"]).all(1)


def unhealthy(task, s):
    """Termination when not s["healthy"], if the task's terminate_when_unhealthy says so."""
    return ~s["healthy"] if task.terminate_when_unhealthy else task.xp.zeros_like(s["healthy"])


def inside(x, low: float, high: float):
    """low < x < high, elementwise."""
    return (x > low) & (x < high)


def noisy_reset(qpos0, nv: int, rng: Sampler, scale: float, gaussian_qvel: bool = False):
    """qpos0 + U(-scale, scale), and qvel U(-scale, scale) or N(0, scale^2): Gymnasium's resets."""
    dtype, (nq,) = qpos0.dtype, qpos0.shape
    if gaussian_qvel:
        qpos = qpos0 + rng.uniform((nq,), -scale, scale, dtype=dtype)
        return qpos, scale * rng.normal((nv,), dtype=dtype)
    noise = rng.uniform((nq + nv,), -scale, scale, dtype=dtype)  # one draw: the numbers of two in a row
    return qpos0 + noise[:, :nq], noise[:, nq:]


def rotate(xp, quat, v):
    """v (..., 3) rotated by the body-to-world quaternions quat (..., 4) wxyz (broadcast):
    v + w t + u x t with t = 2 u x v, two cross products. For one vector shared by the batch
    (a constant offset) cheaper at 256 envs than rotation_matrix's per-env matmul."""
    w, u = quat[..., :1], quat[..., 1:]
    t = 2.0 * xp.cross(u, v)
    return v + w * t + xp.cross(u, t)


def rotation_matrix(xp, quat):
    """(N, 3, 3) rotation matrices of unit wxyz quaternions (N, 4), body to world (the body's
    axes are the columns), mju_quat2Mat's formulas term by term. Elementwise, in a fixed
    order, and never a matrix product: BLAS kernels (which differ by CPU, OPENBLAS_CORETYPE)
    would set the last bits. v @ R turns world vectors into the body frame (`to_body`),
    R @ v body vectors into the world."""
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    ww, xx, yy, zz = w * w, x * x, y * y, z * z
    wx, wy, wz, xy, xz, yz = w * x, w * y, w * z, x * y, x * z, y * z
    rows = (
        (ww + xx - yy - zz, 2 * xy - 2 * wz, 2 * xz + 2 * wy),
        (2 * xy + 2 * wz, ww - xx + yy - zz, 2 * yz - 2 * wx),
        (2 * xz - 2 * wy, 2 * yz + 2 * wx, ww - xx - yy + zz),
    )
    return xp.stack([xp.stack(row, 1) for row in rows], 1)


def to_body(v, rot):
    """World vectors v (N, 3) in the body frames of rot (N, 3, 3): v @ R, summed in index
    order elementwise (no BLAS kernel in the last bits, see `rotation_matrix`)."""
    return v[:, 0, None] * rot[:, 0] + v[:, 1, None] * rot[:, 1] + v[:, 2, None] * rot[:, 2]
