"""Pure batched helpers that several tasks share: state reads, reward terms, resets.

Every function maps arrays (N, ...) to arrays of the same namespace (NumPy or torch,
see `unienv.utils.arrays`), in the dtype it is given, and keeps no state; the few that need
a namespace call take the task (`task.xp`) or `xp`. Gymnasium's MuJoCo locomotion
tasks are built from the same pieces: a forward velocity over the env step, a
quadratic control cost, health as state inside ranges, and a reset at qpos0 plus noise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def locomotion_terms(task, s, prev, action) -> dict[str, Any]:
    """Gymnasium's forward, healthy and ctrl reward terms, from the task's options of those
    names: the root's x velocity over the step (qpos[:, 0]), a reward while s["healthy"],
    and the control cost."""
    return {
        "forward": task.forward_reward_weight
        * forward_velocity(s["qpos"][:, 0], prev["qpos"][:, 0], task.dt),
        "healthy": task.healthy_reward * task.xp.astype(s["healthy"], task.dtype),
        "ctrl": ctrl_cost(action, task.ctrl_cost_weight),
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


def _quat_to_matrix():
    """mju_quat2Mat's nine entries (row-major) as sums of the products q_a q_b of a wxyz
    quaternion's components: (16, 9), products flattened a-major."""
    w, x, y, z = range(4)
    entries = (  # (coefficient, a, b) per entry
        ((1, w, w), (1, x, x), (-1, y, y), (-1, z, z)),
        ((2, x, y), (-2, w, z)),
        ((2, x, z), (2, w, y)),
        ((2, x, y), (2, w, z)),
        ((1, w, w), (-1, x, x), (1, y, y), (-1, z, z)),
        ((2, y, z), (-2, w, x)),
        ((2, x, z), (-2, w, y)),
        ((2, y, z), (2, w, x)),
        ((1, w, w), (-1, x, x), (-1, y, y), (1, z, z)),
    )
    m = np.zeros((4, 4, 9))
    for k, terms in enumerate(entries):
        for c, a, b in terms:
            m[a, b, k] = c
    return m.reshape(16, 9)


QUAT_TO_MATRIX = _quat_to_matrix()


def rotation_matrix(quat, quat_to_matrix):
    """(N, 3, 3) rotation matrices of unit wxyz quaternions (N, 4), body to world (the body's
    axes are the columns), as mju_quat2Mat; quat_to_matrix: QUAT_TO_MATRIX as an array of the
    caller's namespace and dtype. Two calls, a product and a matmul (per env, so that a row's
    result does not depend on the batch), where a rotation by cross products takes a dozen.
    v @ R (v (N, 1, 3)) turns world vectors into the body frame, R @ v body vectors into the world."""
    n = len(quat)
    products = (quat[:, :, None] * quat[:, None, :]).reshape(n, 1, 16)
    return (products @ quat_to_matrix).reshape(n, 3, 3)
