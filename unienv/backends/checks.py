"""Argument checks of the SimBackend contract, in one place, and the two input policies.

Every public call of `SimBackend` checks its arguments here before anything is written, so a
call that raises has changed nothing. Each check raises `ArgumentError` naming the argument
and what was expected (shape, dtype, device, range), and returns the argument in the form
the engine hooks take (tensors on the backend's device, sorted int64 env ids).

Non-finite values (NaN, inf) are where the two execution models differ, and only there:
  * `HostInputs` (host reads are free: the CPU engine) refuses them at once, by reading them
    on the host, and the call writes nothing;
  * `DeviceInputs` (`Capabilities.sync_free`: the engine's state lives where a host read
    would wait for it) never reads a device value on the host: it zeroes what it cannot
    use, leaves masked rows unwritten, and flags the envs for `pop_diverged`.
A backend chooses one of them once (`SimBackend._inputs`); its methods are then the same
code for both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from unienv.backends.dr_rules import DR_TERMS, DRTerm
from unienv.errors import ArgumentError, CapabilityError, unknown_name
from unienv.utils import limits

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)

Problems = Sequence[tuple[torch.Tensor, str]]
"""(rows (n,) bool, message) pairs: the rows of an argument that break one rule, on the device."""


def nonfinite(dtype: torch.dtype) -> str:
    """What is wrong with a non-finite argument of a backend computing in `dtype`."""
    return f"contains NaN or inf, or a value beyond {str(dtype).removeprefix('torch.')}'s range"


def checked_counts(num_envs: Any, sim_dt: Any) -> None:
    """The constructor's num_envs (a positive int) and sim_dt (a positive finite number)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
        raise ArgumentError(f"num_envs: expected a positive int, got {num_envs!r}")
    if num_envs < 1:
        raise ArgumentError(f"num_envs: expected a positive int, got {num_envs}")
    if (
        isinstance(sim_dt, bool)
        or not isinstance(sim_dt, (int, float))
        or not np.isfinite(sim_dt)
        or sim_dt <= 0
    ):
        raise ArgumentError(f"sim_dt: expected a positive finite number, got {sim_dt!r}")


def checked_nsteps(nsteps: Any) -> int:
    if nsteps.__class__ is not int or nsteps < 1:
        raise ArgumentError(f"nsteps: expected a positive int, got {nsteps!r}")
    return nsteps


def checked_rows(
    x: Any, name: str, n: int, width: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """A float tensor (n, width) on `device`, in `dtype` (a value beyond that dtype's range
    becomes inf in the cast); its values are not read."""
    if x.__class__ is not torch.Tensor:
        raise ArgumentError(f"{name}: expected a torch.Tensor ({n}, {width}), got {type(x).__name__}")
    if x.shape != (n, width):
        raise ArgumentError(f"{name}: expected shape ({n}, {width}), got {tuple(x.shape)}")
    if x.dtype is not dtype:
        if not x.dtype.is_floating_point:
            raise ArgumentError(f"{name}: expected a float tensor, got {x.dtype}")
        x = x.to(dtype)
    if x.device != device:
        raise ArgumentError(f"{name}: expected a tensor on {device}, got {x.device}")
    return x


def checked_array(x: Any, name: str, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """A float tensor of that shape, moved to `device`; its values are not read."""
    if not isinstance(x, torch.Tensor):
        raise ArgumentError(f"{name}: expected a torch.Tensor {shape}, got {type(x).__name__}")
    if tuple(x.shape) != shape:
        raise ArgumentError(f"{name}: expected shape {shape}, got {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise ArgumentError(f"{name}: expected a float tensor, got {x.dtype}")
    return x.to(device)


def refuse_nonfinite(x: torch.Tensor, name: str, dtype: torch.dtype) -> None:
    """Raise ArgumentError naming `x` if it holds NaN or inf, or a value beyond `dtype`'s range
    (a host read)."""
    if not bool(torch.isfinite(x.to(dtype)).all()):
        raise ArgumentError(f"{name}: {nonfinite(dtype)}")


def refuse_nonfinite_rows(x: torch.Tensor, name: str, dtype: torch.dtype) -> None:
    """As refuse_nonfinite, for rows already in `dtype` (checked_rows' result); a CPU tensor is
    read in NumPy, a few microseconds less per call than torch."""
    ok = np.isfinite(x.detach().numpy()).all() if x.device.type == "cpu" else torch.isfinite(x).all()
    if not bool(ok):
        raise ArgumentError(f"{name}: {nonfinite(dtype)}")


def refuse_beyond_rows(x: torch.Tensor, name: str, dtype: torch.dtype) -> None:
    """As refuse_nonfinite_rows, and refuse |values| beyond the square root of `dtype`'s largest
    (one reduction: NaN fails the comparison too); `limits.check_fits` words the refusal."""
    bound = float(torch.finfo(dtype).max) ** 0.5
    ok = (np.abs(x.detach().numpy()) <= bound).all() if x.device.type == "cpu" else (x.abs() <= bound).all()
    if not bool(ok):
        refuse_nonfinite_rows(x, name, dtype)  # NaN and inf worded as everywhere else
        limits.check_fits(name, x, dtype, squared=True)


def checked_mask(mask: Any, num_envs: int, device: torch.device | None = None) -> torch.Tensor:
    """A bool (num_envs,) tensor (the state and mocap writes' mask), on `device` if given."""
    if mask.__class__ is not torch.Tensor or mask.dtype != torch.bool or mask.shape != (num_envs,):
        raise ArgumentError(
            f"mask: expected a bool torch.Tensor of shape ({num_envs},), "
            f"got {type(mask).__name__} {getattr(mask, 'dtype', '')} {tuple(getattr(mask, 'shape', ()))}"
        )
    if device is not None and mask.device != device:
        raise ArgumentError(f"mask: expected a tensor on {device}, got {mask.device}")
    return mask


def checked_dr_mask(mask: Any, num_envs: int, device: torch.device) -> torch.Tensor:
    """A bool (num_envs,) tensor, moved to `device` (the DR writes' mask)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != (num_envs,):
        got = f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ArgumentError(f"mask: expected a bool tensor of shape ({num_envs},), got {got}")
    return mask.to(device)


def checked_ids(env_ids: Any, num_envs: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Sorted unique int64 CPU ids in [0, num_envs), and the sorting order (None if sorted)."""
    if isinstance(env_ids, (list, tuple)) and not env_ids:
        env_ids = torch.zeros(0, dtype=torch.int64)  # torch reads [] as float32
    if env_ids.__class__ is np.ndarray and env_ids.dtype == np.int64 and env_ids.ndim == 1:
        a = env_ids  # NumPy ids (the env's own on the CPU engine): no round trip through torch
        ids = torch.from_numpy(np.ascontiguousarray(a))
    else:
        expected = f"env_ids: expected a 1-D sequence or tensor of integer ids in [0, {num_envs})"
        try:
            ids = torch.as_tensor(env_ids)
        except (TypeError, ValueError, RuntimeError):
            raise ArgumentError(f"{expected}, got {env_ids!r}") from None
        if ids.ndim != 1 or ids.dtype not in _INT_DTYPES:
            dtype = str(ids.dtype).removeprefix("torch.")
            raise ArgumentError(f"{expected}, got {type(env_ids).__name__} of {dtype} {tuple(ids.shape)}")
        ids = ids.to("cpu", torch.int64)
        a = ids.numpy()  # checks in NumPy: a few microseconds less per call than in torch
    increasing = len(a) < 2 or bool((a[1:] > a[:-1]).all())  # sorted and unique
    if len(a) and ((a[0] < 0 or a[-1] >= num_envs) if increasing else (a.min() < 0 or a.max() >= num_envs)):
        raise ArgumentError(f"env_ids: expected ids in [0, {num_envs}), got {a.tolist()}")
    if increasing:
        return ids, None
    if len(np.unique(a)) != len(a):
        raise ArgumentError(f"env_ids: ids must be unique, got {a.tolist()}")
    order = torch.from_numpy(np.argsort(a))
    return ids[order], order


def checked_object_ids(ids: Any, kind: str, count: int) -> np.ndarray:
    """1-D int64 ids of objects of `kind` (body, site, ...), each in [0, count)."""
    if ids.__class__ is np.ndarray and ids.ndim == 1 and ids.dtype == np.int64:  # a task's own ids
        if ids.size and (ids.min() < 0 or ids.max() >= count):
            raise ArgumentError(f"{kind}_ids: expected ids in [0, {count}), got {ids.tolist()}")
        return ids
    arr = np.asarray(ids.cpu() if isinstance(ids, torch.Tensor) else ids)
    if arr.ndim == 0:
        arr = arr[None]
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentError(f"{kind}_ids: expected 1-D integer ids, got {arr.dtype} {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= count):
        raise ArgumentError(f"{kind}_ids: expected ids in [0, {count}), got {arr.tolist()}")
    return arr.astype(np.int64)


def checked_offsets(offsets: Any) -> None:
    """A height scan's offsets: a (P, 2) torch.Tensor."""
    if offsets.__class__ is not torch.Tensor or offsets.ndim != 2 or offsets.shape[1] != 2:
        raise ArgumentError(
            f"offsets: expected a (P, 2) torch.Tensor, got {type(offsets).__name__} "
            f"{tuple(getattr(offsets, 'shape', ()))}"
        )


def checked_state_width(state: Any, n: int, size: int, portable: int) -> int:
    """The width of set_physics_state's rows: the engine's full `size` or the `portable` part."""
    if state.__class__ is not torch.Tensor:
        raise ArgumentError(f"state: expected a torch.Tensor ({n}, {size}), got {type(state).__name__}")
    width = state.shape[-1] if state.ndim == 2 else -1
    if width not in (portable, size):
        raise ArgumentError(
            f"state: expected ({n}, {size}) or ({n}, {portable}), got {tuple(getattr(state, 'shape', ()))}"
        )
    return width


def checked_term(backend: str, term: str, terms: Mapping[str, DRTerm], requested: Sequence[str]) -> DRTerm:
    """The spec of a DR term the backend can write now: CapabilityError for one it cannot (or
    must be told of at construction), a did-you-mean KeyError for an unknown name."""
    if term not in terms:
        if term in DR_TERMS:
            raise CapabilityError(f"the {backend} backend cannot randomize {term!r}")
        raise unknown_name("DR term", term, DR_TERMS)
    spec = terms[term]
    if spec.declare and term not in requested:
        raise CapabilityError(
            f"the {backend} backend must be told of {term!r} at construction: pass randomize=[{term!r}, ...]"
        )
    return spec


def checked_randomize(backend: str, requested: Sequence[str], terms: Mapping[str, DRTerm]) -> None:
    """`randomize=` against the terms the backend can write (the constructor's check)."""
    for term in requested:
        if term not in DR_TERMS:
            raise unknown_name("DR term in randomize", term, DR_TERMS)
        if term not in terms:
            raise CapabilityError(f"the {backend} backend cannot randomize {term!r}")


def refuse_rows(problems: Problems, mask: torch.Tensor) -> None:
    """Raise ArgumentError with the message of the first rule a masked row breaks (a host read)."""
    for rows, message in problems:
        if bool((rows & mask).any()):
            raise ArgumentError(message)


class HostInputs:
    """Host reads are free: a non-finite input or a bad masked row raises ArgumentError at once,
    and nothing is written."""

    def __init__(self, dtype: torch.dtype):
        self.dtype = dtype

    def ctrl(self, ctrl: torch.Tensor) -> torch.Tensor:
        refuse_nonfinite_rows(ctrl, "ctrl", self.dtype)
        return ctrl

    def states(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        refuse_nonfinite_rows(qpos, "qpos", self.dtype)
        refuse_nonfinite_rows(qvel, "qvel", self.dtype)

    def wrench(self, force: torch.Tensor, torque: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        refuse_nonfinite(force, "force", self.dtype)
        refuse_nonfinite(torque, "torque", self.dtype)
        return force, torque

    def offsets(self, offsets: torch.Tensor) -> None:
        refuse_nonfinite(offsets, "offsets", self.dtype)

    def diverged(self, diverged: torch.Tensor) -> torch.Tensor:
        return diverged

    def write_masked(
        self, mask: torch.Tensor, problems: Problems, write: Callable[[torch.Tensor], None]
    ) -> torch.Tensor:
        """Refuse the call if a masked row breaks a rule; else write the masked rows, if any."""
        refuse_rows(problems, mask)
        if bool(mask.any()):
            write(mask)
        return mask


class DeviceInputs:
    """Nothing is read on the host: a non-finite ctrl row is replaced by zeros, a non-finite
    state row is written as is, a non-finite wrench is dropped, and those envs are flagged for
    `pop_diverged`; a masked row that breaks a rule is left unwritten and cleared in the mask."""

    def __init__(self, num_envs: int, device: torch.device):
        # envs handed a non-finite ctrl or state since the last pop_diverged
        self.flagged = torch.zeros(num_envs, dtype=torch.bool, device=device)

    def ctrl(self, ctrl: torch.Tensor) -> torch.Tensor:
        bad = ~torch.isfinite(ctrl).all(1)
        self.flagged |= bad
        return ctrl.masked_fill(bad[:, None], 0.0)

    def states(self, mask: torch.Tensor, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        # (rows checked into the backend's dtype: an overflow is an inf)
        self.flagged |= mask & ~(torch.isfinite(qpos).all(1) & torch.isfinite(qvel).all(1))

    def wrench(self, force: torch.Tensor, torque: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        finite = (torch.isfinite(force) & torch.isfinite(torque)).flatten(1).all(1)[:, None, None]
        return torch.where(finite, force, 0.0), torch.where(finite, torque, 0.0)

    def offsets(self, offsets: torch.Tensor) -> None:
        pass  # a NaN ray hits nothing

    def diverged(self, diverged: torch.Tensor) -> torch.Tensor:
        diverged = diverged | self.flagged
        self.flagged.zero_()
        return diverged

    def write_masked(
        self, mask: torch.Tensor, problems: Problems, write: Callable[[torch.Tensor], None]
    ) -> torch.Tensor:
        """Write the masked rows that break no rule; the mask of those written."""
        for rows, _ in problems:
            mask = mask & ~rows
        write(mask)
        return mask
