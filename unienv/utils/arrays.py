"""The array namespaces tasks compute in: NumPy on the CPU engine, torch on device backends.

A task written against `self.xp` (see `unienv.task`) runs unchanged on both. On the
CPU engine its math runs in NumPy, whose calls cost a fraction of torch's on the small
arrays of an env step (the documentation's "Performance" page has the figures), and whose arrays
share memory with the backend's torch views, so nothing is copied at the border. On
mjwarp and genesis it runs in torch, on the device, with no host reads.

Both namespaces hold the same vocabulary, the calls whose NumPy and torch forms take
the same positional arguments (`xp.cos`, `xp.stack(arrays, 1)`, `xp.where`, ...) plus
the few that differ in name or signature:

    astype(x, dtype)       x in dtype (no copy if it is already)
    clip(x, low, high)     x (an array) clipped; low or high may be None
    copy(x)                a copy
    cross(a, b)            cross product along the last axis, broadcast
    norm(x)                Euclidean norm along the last axis
    solve(a, b)            x with a @ x = b, batched ((..., n, n), (..., n, k)); torch's
                           without its error check, which would read the device
    asarray(x, dtype=None) x as an array of this namespace (a torch tensor on the CPU
                           becomes a NumPy array sharing its memory, and back)
    zeros(shape, dtype)    on the namespace's device

Methods both kinds share work too: `x.sum(1)`, `x.all(1)`, `x.any(1)`, `x.mean(1)`,
`x.reshape(...)`, indexing, arithmetic and comparisons. dtypes are the namespace's
own (`xp.float64`, `xp.bool`); `Task.dtype` is one of them.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
import torch

# calls whose NumPy and torch forms take the same positional arguments
_SHARED = (
    "abs", "cos", "sin", "exp", "log1p", "sqrt", "square", "tanh", "floor", "arctan2", "minimum", "maximum",
    "where", "take", "isfinite", "stack", "concat", "zeros_like", "broadcast_to", "amax", "pi", "swapaxes",
    "float32", "float64", "int64", "bool",
)  # fmt: skip


_NEXT, _LAST = np.array([1, 2, 0]), np.array([2, 0, 1])  # the cross product's index cycles


def _numpy_asarray(x, dtype=None) -> np.ndarray:
    """x as a NumPy array: a CPU tensor's memory shared (no copy unless dtype converts)."""
    if x.__class__ is torch.Tensor and dtype is None:  # a view of a backend tensor: the hot path
        return x.numpy()
    return np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x, dtype=dtype)


def _numpy() -> SimpleNamespace:
    return SimpleNamespace(
        name="numpy",
        **{name: getattr(np, name) for name in _SHARED},
        astype=lambda x, dtype: x.astype(dtype, copy=False),
        clip=lambda x, low, high: x.clip(low, high),  # what np.clip calls, without its wrapper's µs
        copy=np.copy,
        cross=lambda a, b: (
            a[..., _NEXT] * b[..., _LAST] - a[..., _LAST] * b[..., _NEXT]
        ),  # np.cross: 3x slower
        norm=lambda x: np.sqrt(np.square(x).sum(-1)),
        solve=np.linalg.solve,
        asarray=_numpy_asarray,
        zeros=lambda shape, dtype: np.zeros(shape, dtype=dtype),
    )


@functools.cache
def torch_namespace(device: torch.device) -> SimpleNamespace:
    """torch's form of the vocabulary, its arrays on `device`."""
    return SimpleNamespace(
        name="torch",
        **{name: getattr(torch, name) for name in _SHARED},
        astype=lambda x, dtype: x.to(dtype),
        clip=torch.clip,
        copy=torch.clone,
        cross=lambda a, b: torch.linalg.cross(*torch.broadcast_tensors(a, b), dim=-1),
        norm=lambda x: torch.linalg.vector_norm(x, dim=-1),
        solve=lambda a, b: torch.linalg.solve_ex(a, b)[0],
        asarray=lambda x, dtype=None: torch.as_tensor(x, dtype=dtype, device=device),
        zeros=lambda shape, dtype: torch.zeros(shape, dtype=dtype, device=device),
    )


NUMPY = _numpy()


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The NumPy dtype of a torch dtype (torch.float64 -> float64)."""
    return torch.empty(0, dtype=dtype).numpy().dtype


def to_numpy(x):
    """A tensor as a NumPy array on the host, through nested dicts (anything else as is)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    return x
