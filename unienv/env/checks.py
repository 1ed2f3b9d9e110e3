"""The env's argument checks: each refuses with an `ArgumentError` naming the argument,
before anything changes (construction options, seeds, reset options, actions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from unienv.errors import ArgumentError, unknown_name
from unienv.utils import limits
from unienv.utils.limits import MAX_COUNT

NONFINITE_ACTIONS = ("raise", "zero")
# actions outside the action space: "clip" (default) or "raise"; Gymnasium's pass-through is not
# offered, since it turns a large finite action into an infinite reward (ant: ctrl cost of 1e200**2)
OUT_OF_BOUNDS_ACTIONS = ("clip", "raise")
SEED_RANGE = (0, 2**32)  # seeds are ints in [0, 2**32), as NumPy's legacy seeding takes
MAX_RENDER_SIZE = 8192  # pixels per side of an offscreen frame


def checked_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"seed: expected an int in [0, 2**32) or None, got {seed!r}")
    if not SEED_RANGE[0] <= seed < SEED_RANGE[1]:
        raise ArgumentError(f"seed: expected an int in [0, 2**32) or None, got {seed}")
    return int(seed)


def checked_autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """An AutoresetMode, or its name or value in any case."""
    if isinstance(mode, AutoresetMode):
        return mode
    names = {m.name.lower(): m for m in AutoresetMode} | {m.value: m for m in AutoresetMode}
    if isinstance(mode, str) and mode.lower() in names:
        return names[mode.lower()]
    raise ArgumentError(f"autoreset_mode: expected one of {[m.name for m in AutoresetMode]}, got {mode!r}")


def checked_max_episode_steps(steps: Any, task: Any) -> int:
    """The episode length in env steps: the given int, or the task's (its episode_length_s / dt)."""
    where = "max_episode_steps"
    if steps is None:
        steps = task.max_episode_steps
        where += f" (the task's episode_length_s={task.episode_length_s} / dt={task.dt})"
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ArgumentError(f"{where}: expected a positive int, got {steps!r}")
    if steps > MAX_COUNT:  # episode lengths count in int64 on every backend
        raise ArgumentError(f"{where}: expected at most 2**62 (episode lengths count in int64), got {steps}")
    return int(steps)


def checked_render_size(size: Any) -> tuple[int, int]:
    """(height, width) of rendered frames: two ints in [1, MAX_RENDER_SIZE]."""
    pair = tuple(size) if isinstance(size, (tuple, list)) else None
    if (
        pair is None
        or len(pair) != 2
        or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in pair)
        or not all(1 <= x <= MAX_RENDER_SIZE for x in pair)
    ):
        raise ArgumentError(
            f"render_size: expected (height, width), two ints in [1, {MAX_RENDER_SIZE}], got {size!r}"
        )
    return int(pair[0]), int(pair[1])


def check_options(
    render_mode: Any, cuda_graph: Any, nonfinite_actions: Any, out_of_bounds_actions: Any
) -> None:
    """UniEnv's choices among named options."""
    if render_mode not in (None, "rgb_array"):
        raise ArgumentError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
    if cuda_graph not in (None, True, False):
        raise ArgumentError(f"cuda_graph: expected None, True or False, got {cuda_graph!r}")
    if nonfinite_actions not in NONFINITE_ACTIONS:
        raise ArgumentError(
            f"nonfinite_actions: expected one of {NONFINITE_ACTIONS}, got {nonfinite_actions!r}"
        )
    if out_of_bounds_actions not in OUT_OF_BOUNDS_ACTIONS:
        raise ArgumentError(
            f"out_of_bounds_actions: expected one of {OUT_OF_BOUNDS_ACTIONS}, got {out_of_bounds_actions!r}"
        )


def checked_render_env_ids(render_env_ids: Sequence[int] | None, num_envs: int) -> list[int]:
    """The envs render() draws: a non-empty list of ids in [0, num_envs) (default: all)."""
    if render_env_ids is None:
        render_env_ids = range(num_envs)
    ids = list(render_env_ids) if isinstance(render_env_ids, (Sequence, range)) else None
    if (
        not ids
        or any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids)
        or min(ids) < 0
        or max(ids) >= num_envs
    ):
        raise ArgumentError(
            f"render_env_ids: expected a non-empty list of int ids in [0, {num_envs}), got {render_env_ids!r}"
        )
    return [int(i) for i in ids]


def check_frame_memory(size: tuple[int, int], envs: int) -> None:
    """A frame per rendered env, RGB, and their tiled copy: refused where it would not fit."""
    height, width = size
    limits.check_memory(
        "render_size",
        2 * envs * height * width * 3,
        None,
        f"{envs} frames of {height} x {width} and their tiling",
    )


def checked_reset_mask(options: Any, num_envs: int) -> torch.Tensor | None:
    """options["reset_mask"] as a bool tensor (num_envs,), or None for every env."""
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ArgumentError(f"options: expected a dict or None, got {type(options).__name__}")
    unknown = sorted(set(options) - {"reset_mask"}, key=str)
    if unknown:
        raise ArgumentError(f"options: {unknown_name('key', unknown[0], ['reset_mask'])}")
    if "reset_mask" not in options:
        return None
    given = options["reset_mask"]
    if isinstance(given, torch.Tensor):
        check_plain_tensor("options['reset_mask']", given)
        dtype, shape = given.dtype, tuple(given.shape)
    else:  # a list or an array; anything else ("all", None) is an array of another dtype
        array = np.asarray(given, dtype=object if isinstance(given, (str, bytes)) else None)
        dtype, shape = array.dtype, array.shape
    if dtype not in (torch.bool, np.dtype(bool)) or shape != (num_envs,):
        raise ArgumentError(
            f"options['reset_mask']: expected a bool array of shape ({num_envs},), "
            f"got {type(given).__name__} of {str(dtype).removeprefix('torch.')} {shape}"
        )
    return given if isinstance(given, torch.Tensor) else torch.as_tensor(array)


def check_plain_tensor(name: str, x: torch.Tensor) -> None:
    """A dense tensor with data: not sparse, nested or on the meta device (none of which an
    engine can read)."""
    kind = (
        "a nested tensor"
        if x.is_nested
        else f"a {x.layout} tensor"
        if x.layout != torch.strided
        else "a tensor on the meta device (it has no data)"
        if x.device.type == "meta"
        else None
    )
    if kind is not None:
        raise ArgumentError(f"{name}: expected a dense tensor, got {kind}")


def checked_action_input(actions: Any, shape: tuple[int, int]) -> None:
    """actions: a float torch tensor or NumPy array of `shape`."""
    if isinstance(actions, np.ndarray):
        if actions.dtype.kind != "f":
            raise ArgumentError(f"actions: expected a float array, got {actions.dtype}")
        if actions.shape != shape:
            raise ArgumentError(f"actions: expected shape {shape}, got {actions.shape}")
        return
    if not isinstance(actions, torch.Tensor):
        raise ArgumentError(f"actions: expected a tensor or array {shape}, got {type(actions).__name__}")
    check_plain_tensor("actions", actions)
    if actions.shape != shape:
        raise ArgumentError(f"actions: expected shape {shape}, got {tuple(actions.shape)}")
    if not actions.dtype.is_floating_point:
        raise ArgumentError(f"actions: expected a float tensor, got {actions.dtype}")


def check_task_output(task: Any, method: str, name: str, x: np.ndarray, shape: tuple[int, int]) -> None:
    """What a task handed the engine past the contract's checks: its shape and finiteness."""
    if x.shape != shape:
        raise ArgumentError(f"{name}: {type(task).__name__}.{method} gave shape {x.shape}, expected {shape}")
    if not np.isfinite(x).all():
        raise ArgumentError(f"{name}: {type(task).__name__}.{method} gave NaN or inf")


def checked_repeat(repeat: Any, steps: Any, task: Any) -> tuple[int, int]:
    """(max_episode_steps, action_repeat): the repeat a positive int; an episode length not
    given is the task's divided by the repeat, rounded up (the same simulated time)."""
    if isinstance(repeat, bool) or not isinstance(repeat, (int, np.integer)) or repeat < 1:
        raise ArgumentError(f"action_repeat: expected a positive int, got {repeat!r}")
    if steps is None:
        return -(-checked_max_episode_steps(None, task) // int(repeat)), int(repeat)
    return checked_max_episode_steps(steps, task), int(repeat)
