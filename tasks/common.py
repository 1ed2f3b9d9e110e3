"""Pure batched helpers that several tasks share: state reads, reward terms, resets.

Every function maps tensors (N, ...) to tensors, in the dtype it is given, and
keeps no state. Gymnasium's MuJoCo locomotion tasks are built from the same
pieces: a forward velocity over the env step, a quadratic control cost, health
as state inside ranges, and a reset at qpos0 plus noise.
"""

from __future__ import annotations

import torch

from unienv.backends.base import SimBackend
from unienv.random import Sampler


def read_state(backend: SimBackend) -> dict[str, torch.Tensor]:
    """qpos and qvel as copies (the views change with the next step)."""
    s = backend.get_state_views()
    return {"qpos": s["qpos"].clone(), "qvel": s["qvel"].clone()}


def forward_velocity(x: torch.Tensor, x_before: torch.Tensor, dt: float) -> torch.Tensor:
    """Velocity along x over one env step of dt seconds."""
    return (x - x_before) / dt


def ctrl_cost(action: torch.Tensor, weight: float) -> torch.Tensor:
    """-weight |action|^2 per env."""
    return -weight * action.square().sum(1)


def locomotion_terms(task, s, prev, action: torch.Tensor) -> dict[str, torch.Tensor]:
    """Gymnasium's forward, healthy and ctrl reward terms, from the task's options of those
    names: the root's x velocity over the step (qpos[:, 0]), a reward while s["healthy"],
    and the control cost."""
    return {
        "forward": task.forward_reward_weight
        * forward_velocity(s["qpos"][:, 0], prev["qpos"][:, 0], task.dt),
        "healthy": task.healthy_reward * s["healthy"].to(task.dtype),
        "ctrl": ctrl_cost(action, task.ctrl_cost_weight),
    }


def unhealthy(task, s) -> torch.Tensor:
    """Termination when not s["healthy"], if the task's terminate_when_unhealthy says so."""
    return ~s["healthy"] if task.terminate_when_unhealthy else torch.zeros_like(s["healthy"])


def inside(x: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """low < x < high, elementwise."""
    return (x > low) & (x < high)


def noisy_reset(
    qpos0: torch.Tensor, nv: int, rng: Sampler, scale: float, gaussian_qvel: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """qpos0 + U(-scale, scale), and qvel U(-scale, scale) or N(0, scale^2): Gymnasium's resets."""
    dtype = qpos0.dtype
    qpos = qpos0 + rng.uniform(tuple(qpos0.shape), -scale, scale, dtype=dtype)
    if gaussian_qvel:
        return qpos, scale * rng.normal((nv,), dtype=dtype)
    return qpos, rng.uniform((nv,), -scale, scale, dtype=dtype)


def rotate(quat: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (..., 3) rotated by the body-to-world quaternions quat (..., 4) wxyz (broadcast)."""
    w, u = quat[..., :1], quat[..., 1:]
    uv = (u * v).sum(-1, keepdim=True)
    return v * (2 * w.square() - 1) + 2 * w * torch.linalg.cross(u.expand_as(v), v, dim=-1) + 2 * u * uv


def rotate_inverse(quat: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """v (..., 3) expressed in the frame of the body-to-world quaternions quat (..., 4) wxyz."""
    w, u = quat[..., :1], quat[..., 1:]
    uv = (u * v).sum(-1, keepdim=True)
    return v * (2 * w.square() - 1) - 2 * w * torch.linalg.cross(u.expand_as(v), v, dim=-1) + 2 * u * uv
