"""What every train.py run reads from its Hydra config: the env's options, the checked training
options, the process group, and metrics.json's writer."""

from __future__ import annotations

import os

from omegaconf import DictConfig, OmegaConf

from unienv.errors import ArgumentError
from unienv.utils import files


def write_json(path: str, data: dict) -> None:
    """data as JSON at path, replaced whole (a reader never sees half a file)."""
    files.write_json(path, data, indent=1)


def process_group() -> tuple[int, int, int]:
    """(rank, local rank, world size) from torchrun's environment; (0, 0, 1) without torchrun."""
    return int(os.getenv("RANK", "0")), int(os.getenv("LOCAL_RANK", "0")), int(os.getenv("WORLD_SIZE", "1"))


def checked_minutes(minutes):
    """train.checkpoint_minutes: a number > 0, or None (no timer)."""
    if minutes is not None and (
        isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes <= 0
    ):
        raise ArgumentError(f"train.checkpoint_minutes: expected a number > 0 or null, got {minutes!r}")
    return minutes


def env_options(cfg: DictConfig) -> tuple[str, str, dict, dict]:
    """(task, backend, task options, backend options) as unienv.make takes them from the config."""
    task_options = OmegaConf.to_container(cfg.task, resolve=True)
    backend_options = OmegaConf.to_container(cfg.backend)
    task, backend = task_options.pop("name"), backend_options.pop("name")
    return task, backend, task_options, {k: v for k, v in backend_options.items() if v is not None}
