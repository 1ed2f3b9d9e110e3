"""Bounds on what a config or a file can make unienv allocate or hold, checked before it does.

Every size that a config or a file sets (an action-latency ring, a history buffer, a network
layer, a heightfield, an episode length, a render size) goes through `check_size` (a whole
number in [low, bound]) and, where it allocates in proportion, `check_memory` (the bytes it
needs against the memory free on the device it lands on, the same probe that bounds
`num_envs` in `unienv.backends`). Every value that reaches an engine or an observation goes
through `check_fits` (finite, and within the range of the dtype that will hold it). Each raises
`ArgumentError` naming the argument, the bound or the bytes, before anything is allocated or
written: a refused config or file changes nothing.
"""

from __future__ import annotations

import math
import os
import resource
from typing import Any

import numpy as np
import torch

from unienv.errors import ArgumentError

MAX_COUNT = 2**62
"""The largest step count (an episode length, a DR interval): counters are int64 on every backend."""


def check_size(where: str, value: Any, bound: int, low: int = 1, unit: str = "") -> int:
    """value as an int in [low, bound] (Python or NumPy ints, or a float that is a whole number,
    as YAML and JSON give); `where` names it in the refusal, `unit` says what it counts."""
    whole = isinstance(value, (int, np.integer)) or (
        isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value)
    )
    if isinstance(value, bool) or not whole or not low <= value <= bound:
        what = f" of {unit}" if unit else ""
        huge = isinstance(value, (int, np.integer)) and not isinstance(value, bool) and abs(value) > 2**64
        shown = f"about {float(value):.6g}" if huge else repr(value)
        raise ArgumentError(f"{where}: expected a whole number{what} in [{low}, {bound}], got {shown}")
    return int(value)


def available(device: Any = None) -> tuple[int, str]:
    """(bytes free, where) on `device`: free GPU memory for a CUDA device, available RAM else."""
    dev = torch.device("cpu" if device is None else device)
    if dev.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.mem_get_info(dev)[0], f"free on {dev}"
    return available_ram(), "of available RAM"


def check_memory(where: str, nbytes: int, device: Any = None, what: str = "") -> None:
    """Refuse an allocation of `nbytes` on `device` that would not fit in the memory free there;
    `what` says what would be allocated (e.g. "a ring of 1000000001 steps x 2 envs x 8 actions")."""
    have, there = available(device)
    if nbytes > have:
        held = f" for {what}" if what else ""
        raise ArgumentError(
            f"{where}: needs {readable_bytes(nbytes)}{held}, more than the {readable_bytes(have)} {there}"
        )


def check_fits(where: str, values: Any, dtype: torch.dtype | np.dtype, squared: bool = False) -> None:
    """Refuse values that are not finite, or beyond the range of `dtype` (a float's largest
    finite value, an int's bounds): stored there, they would become inf or wrap. With `squared`,
    a float's bound is the square root of its largest value, for a state that the engine squares
    (norms, energies, contact distances): beyond it, the first step's arithmetic gives inf."""
    x = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values, dtype=np.float64)
    dt = _numpy_dtype(dtype)
    info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    low, high = float(info.min), float(info.max)
    if squared and dt.kind == "f":
        low, high = -math.sqrt(high), math.sqrt(high)
    if not np.isfinite(x).all():
        raise ArgumentError(f"{where}: expected finite values for {dt.name}, got {_extreme(x)}")
    if x.size and (x.max() > high or x.min() < low):
        which = "the square root of " if squared and dt.kind == "f" else ""
        raise ArgumentError(
            f"{where}: expected values within {which}{dt.name}'s range [{low:.6g}, {high:.6g}], "
            f"got {_extreme(x)}"
        )


def _numpy_dtype(dtype: torch.dtype | np.dtype) -> np.dtype:
    if isinstance(dtype, torch.dtype):
        return torch.empty((), dtype=dtype).numpy().dtype
    return np.dtype(dtype)


def _extreme(x: np.ndarray) -> str:
    """The value of x that is furthest out (a NaN first), for a refusal."""
    flat = x.reshape(-1)
    if np.isnan(flat).any():
        return "nan"
    return f"{float(flat[np.argmax(np.abs(flat))]):.6g}"


def available_ram() -> int:
    """Bytes this process can still allocate without swapping or being stopped: the kernel's
    MemAvailable (free pages where there is no /proc), and below it the room left in the
    process's cgroup (a container's memory limit, cgroup v2 or v1) and in its address-space
    limit (RLIMIT_AS, `ulimit -v`)."""
    found = [_proc_kib("/proc/meminfo", "MemAvailable")]
    if found[0] is None:
        found = [os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    for limit, usage in CGROUP_FILES:
        try:
            with open(limit) as a, open(usage) as b:
                cap, used = a.read().strip(), int(b.read())
        except (OSError, ValueError):
            continue
        if cap.isdigit() and int(cap) < 1 << 60:  # "max", or v1's page-rounded 2**63: no limit
            found.append(int(cap) - used)
    cap = resource.getrlimit(resource.RLIMIT_AS)[0]
    size = _proc_kib("/proc/self/status", "VmSize")
    if cap != resource.RLIM_INFINITY and size is not None:
        found.append(cap - size)
    return max(0, min(found))


CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _proc_kib(path: str, key: str) -> int | None:
    """The `key:` line of a /proc file in bytes (its value is in KiB), or None where absent."""
    try:
        with open(path) as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def readable_bytes(n: float) -> str:
    """A byte count as a person reads it: 1.5 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return ""
