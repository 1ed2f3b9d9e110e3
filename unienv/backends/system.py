"""What the machine offers a backend: the device it names and the memory its envs need.

Both checks run on the cold path, in `SimBackend.__init__`, before an engine allocates
anything: `checked_device` refuses a device torch cannot use, and `check_memory` refuses a
num_envs whose state cannot fit in the memory available (a lower bound from MuJoCo's own
per-env data), so that a too-large batch fails with a message instead of an OOM kill.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from unienv.backends.scene import load_mjmodel
from unienv.errors import ArgumentError
from unienv.utils.limits import available_ram, readable_bytes


def checked_device(device: str | torch.device) -> torch.device:
    """`device` as a torch.device: 'cpu', 'cuda' or 'cuda:<k>', a CUDA one only where torch sees a GPU."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ArgumentError(f"device: expected None, 'cpu', 'cuda' or 'cuda:<k>', got {device!r}")
    if dev.type == "cpu" and dev.index not in (None, 0):  # torch takes 'cpu:1' and ignores the index
        raise ArgumentError(
            f"device: the CPU has no index (it is one device), got {device!r}; expected 'cpu'"
        )
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ArgumentError(
            f"device: {str(device)!r} asks for a CUDA GPU, but this machine has none that torch can use "
            "(torch.cuda.is_available() is False); use device='cpu' or leave it unset"
        )
    return dev


MEMORY_CHECK_FROM = 4096  # fewer envs of any scene here fit in well under a GiB


def check_memory(scene: str | os.PathLike, num_envs: int, sim_dt: float, device: Any) -> None:
    """Refuse a num_envs whose state would not fit in the memory available, before allocating.

    The estimate is MuJoCo's per-env data of the scene (its fixed buffer plus the arena a
    forward pass uses), times num_envs: a lower bound, for every engine holds at least that."""
    import mujoco

    model = load_mjmodel(scene, sim_dt)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    need = num_envs * (data.nbuffer + data.maxuse_arena)
    dev = torch.device("cpu" if device is None else device)
    if dev.type == "cuda" and torch.cuda.is_available():
        have, where = torch.cuda.mem_get_info(dev)[0], f"free on {dev}"
    else:
        have, where = available_ram(), "of available RAM"
    if need > have:
        per_env = need / num_envs
        raise ArgumentError(
            f"num_envs: {num_envs} envs of {os.path.basename(os.fspath(scene))} need at least "
            f"{readable_bytes(need)} ({readable_bytes(per_env)} each), more than the {readable_bytes(have)} {where}; "
            f"expected at most about {int(have // per_env)}"
        )
