"""Training checkpoints: a run's whole state at an iteration boundary, written atomically, restored exactly.

    save_checkpoint(path, state)        # temporary name, then os.replace: a reader never sees half a file
    state = load_checkpoint(path)       # a file, or a run dir (its newest model_<it>.pt)
    snapshot = env_state(env)           # everything a unienv VectorEnv carries from one step to the next
    load_env_state(env, snapshot)       # into an env built with the same task, backend, num_envs and DR

What an env carries between steps, and so what `env_state` holds:
- the physics of every env, `backend.get_physics_state()` (time, qpos, qvel and the engine's solver
  state, such as MuJoCo's warm start), so the next step is bit-identical;
- every tensor and NumPy array the env, its task, its DR manager and its random streams keep
  (`unienv.utils.random` counters, per-env memory such as commands, the task's last reading, episode
  returns and lengths, a terrain curriculum's levels, DR's current parameters, latency rings and
  timers), found by walking those objects' attributes and named by their attribute path;
- the per-env DR parameters written to the backend (body masses, frictions, ...), rewritten from
  the DR manager's record of them.
Wall-clock fields (an episode's start time) are left as the new process has them: they only feed
the episode's duration in seconds.

A checkpoint is a dict of tensors, numbers, strings, lists and dicts written with torch.save and
read with `torch.load(weights_only=True)`, which rebuilds only those types and never runs code from
the file. Restoring is exact on the CPU: an env restored from a snapshot steps bit for bit as the
env that was snapshotted, and train.py continues a run as if it had never stopped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from unienv.backends import SimBackend
from unienv.errors import ArgumentError
from unienv.training.untrusted import load_torch
from unienv.utils import limits
from unienv.utils.files import written

FORMAT = "unienv.train/1"  # train.py's PPO run (unienv.training.runner)
OFFPOLICY_FORMAT = "unienv.train.offpolicy/1"  # its off-policy run (unienv.training.offpolicy.loop)
CHECKPOINT = re.compile(r"model_(\d+)\.pt")
# per-env wall-clock times: a new process has its own clock
_CLOCKS = ("_start", "_now")
# what the walk leaves alone: the backend (its physics is snapshotted through the contract), the
# renderer and a captured CUDA graph (rebuilt on demand)
_SKIP = ("backend", "_renderer", "_graph", *_CLOCKS)


def save_checkpoint(path: str, state: dict, fmt: str = FORMAT) -> None:
    """Write `state` to path atomically (a temporary file beside it, then os.replace), marked as
    `fmt`: FORMAT for rsl_rl's PPO, OFFPOLICY_FORMAT for the off-policy learner."""
    with written(path) as temporary:
        torch.save({"format": fmt, **state}, temporary)


def find_checkpoint(path: str) -> str:
    """path itself if it is a file; for a run dir, its newest model_<it>.pt (the highest it)."""
    if os.path.exists(path) and not os.path.isdir(path):
        return path  # a file, or something else that load_torch refuses unopened
    if not os.path.isdir(path):
        raise ArgumentError(
            f"train.resume: expected a run dir or a checkpoint file, got {path!r} (not found)"
        )
    found = [(int(m[1]), name) for name in os.listdir(path) if (m := CHECKPOINT.fullmatch(name))]
    if not found:
        raise ArgumentError(f"train.resume: {path} holds no checkpoint (model_<iteration>.pt)")
    return os.path.join(path, max(found)[1])


def load_checkpoint(path: str) -> tuple[str, dict]:
    """(the file read, its state) for a checkpoint file or a run dir; refuses anything else."""
    path = find_checkpoint(path)
    state = load_torch(path, "train.resume")  # a regular file, stored entries, no code run
    if not isinstance(state, dict) or state.get("format") not in FIELDS:
        given = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ArgumentError(
            f"train.resume: {path} has format {given!r}, expected one of {sorted(FIELDS)} (a checkpoint "
            "of this unienv's train.py; rsl_rl's own model_<it>.pt files hold no env state)"
        )
    _check_fields(state, path, FIELDS[state["format"]])
    return path, state


# the top-level fields of each format's checkpoint and their types (runner.Runner.save and
# offpolicy.loop.OffPolicyRun.state write them)
COMMON = {"run": dict, "iterations": int, "seconds": float, "env": dict, "torch_rng": torch.Tensor,
          "cuda_rng": list, "curve": list}  # fmt: skip
FIELDS = {
    FORMAT: COMMON | {"algorithm": dict, "adapter": dict, "logger": dict},
    OFFPOLICY_FORMAT: COMMON
    | {"env_steps": int, "learner": dict, "replay": dict, "obs": torch.Tensor, "sums": dict},
}
MAX_ROW = 256
"""The most entries of one learning-curve row (and of each dict in it)."""


def _check_fields(state: dict, path: str, fields: dict[str, type]) -> None:
    """Each of `fields` present and of its type, the iteration count within [0, MAX_COUNT],
    and the curve one flat row of numbers (and dicts of numbers) per iteration."""
    for key, kind in fields.items():
        value = state.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            given = "nothing" if key not in state else type(value).__name__
            raise ArgumentError(
                f"train.resume: {path}: field '{key}': expected a {kind.__name__}, got {given}"
            )
    limits.check_size(
        f"train.resume: {path}: field 'iterations'", state["iterations"], limits.MAX_COUNT, low=0
    )
    if not np.isfinite(state["seconds"]) or state["seconds"] < 0:
        raise ArgumentError(
            f"train.resume: {path}: field 'seconds': expected a time >= 0, got {state['seconds']}"
        )
    curve = state["curve"]
    if len(curve) != state["iterations"]:
        raise ArgumentError(
            f"train.resume: {path}: field 'curve': expected {state['iterations']} rows, got {len(curve)}"
        )
    for i, row in enumerate(curve):
        where = f"train.resume: {path}: field 'curve' row {i}"
        if not isinstance(row, dict) or not isinstance(row.get("env_steps"), int) or len(row) > MAX_ROW:
            raise ArgumentError(f"{where}: expected a dict of at most {MAX_ROW} numbers with 'env_steps'")
        for value in row.values():
            inner = value.values() if isinstance(value, dict) and len(value) <= MAX_ROW else (value,)
            if not all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in inner):
                raise ArgumentError(
                    f"{where}: expected numbers, or dicts of numbers, got {type(value).__name__}"
                )


def _arrays(obj: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any, Any, Any]]:
    """(path, container, key, value) for each tensor and NumPy array reachable from obj through
    the attributes of unienv's objects, dicts, lists and tuples (each object once)."""
    if isinstance(obj, (torch.Tensor, np.ndarray)) or id(obj) in seen or isinstance(obj, SimBackend):
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        items = [(k, v) for k, v in obj.items() if isinstance(k, str)]
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    elif type(obj).__module__.split(".")[0] in ("unienv", "tasks") and hasattr(obj, "__dict__"):
        items = [(k, v) for k, v in vars(obj).items() if k not in _SKIP]
    else:
        return
    for key, value in items:
        here = f"{path}.{key}"
        if isinstance(value, (torch.Tensor, np.ndarray)):
            yield here, obj, key, value
        else:
            yield from _arrays(value, here, seen)


def env_state(env) -> dict[str, Any]:
    """A copy of everything `env` (a unienv VectorEnv or a wrapper of one) carries between steps;
    see the module docstring. Tensors are moved to the CPU."""
    base = env.unwrapped
    arrays = {
        path: torch.as_tensor(np.array(value) if isinstance(value, np.ndarray) else value)
        .detach()
        .cpu()
        .clone()
        for path, _, _, value in _arrays(base, "env", set())
    }
    return {"physics": base.backend.get_physics_state().detach().cpu().clone(), "arrays": arrays}


def load_env_state(env, state: dict[str, Any]) -> None:
    """Restore a snapshot of `env_state` into env, built as the snapshotted env was. Every array
    is checked first (`check_env_state`); configuration is compared, never restored."""
    base = env.unwrapped
    targets = {path: (container, key, value) for path, container, key, value in _arrays(base, "env", set())}
    physics = check_env_state(base, state, {path: t[2] for path, t in targets.items()})
    for path, value in state["arrays"].items():
        if not _configuration(path):
            _assign(*targets[path], value)
    backend = base.backend
    backend.set_physics_state(physics.to(backend.device))
    if base.dr is not None:  # the per-env model parameters DR wrote into the backend
        from unienv.dr import backend_params

        ids = torch.arange(base.num_envs, device=backend.device)
        for param in backend_params(base.dr.terms):
            values = base.dr._current[param]
            backend.set_dr_param(param, ids, values.to(backend.device, backend.get_capabilities().dtype))


# arrays an env computes from its config (action bounds, DR's columns and defaults, index
# ranges): compared with the env's, never written, so no file can change a shared space
_CONFIG = re.compile(
    r"env\._path\..*|env\._everyone|env\.dr\._env_index|env\.dr\._bound\.\d+\.(cols|base|subtree)"
)
_KEYS = re.compile(r".*\._keys(_numpy)?")
_LENGTHS = ("env.episode_length", "env._length")


def _configuration(path: str) -> bool:
    return _CONFIG.fullmatch(path) is not None


def check_env_state(base, state: Any, targets: dict[str, Any] | None = None) -> torch.Tensor:
    """Refuse a snapshot that does not fit `base` (the unwrapped env), naming the array: the
    same paths, dtypes and shapes as the env's, configuration equal, floats without NaN (inf
    only where the env's own array holds one: "none yet"), counters >= 0, episode lengths within
    the episode, random keys distinct; the physics rows finite, within float range and at
    time >= 0. Returns the physics rows; writes nothing."""
    if targets is None:
        targets = {path: value for path, _, _, value in _arrays(base, "env", set())}
    if not isinstance(state, dict) or not isinstance(state.get("arrays"), dict):
        raise ArgumentError("checkpoint: env: expected a dict with 'physics' and 'arrays'")
    saved = state["arrays"]
    missing = sorted(set(saved) ^ set(targets), key=str)
    if missing:
        raise ArgumentError(
            f"checkpoint: its env state does not fit this env (task, DR or num_envs differ): {missing[:5]}"
        )
    for path, value in saved.items():
        _check_array(f"checkpoint: {path}", value, torch.as_tensor(targets[path]), path, base)
    backend, physics = base.backend, state.get("physics")
    size = (base.num_envs, backend.physics_state_size)
    if not isinstance(physics, torch.Tensor) or tuple(physics.shape) != size:
        got = tuple(physics.shape) if isinstance(physics, torch.Tensor) else type(physics).__name__
        raise ArgumentError(f"checkpoint: its physics state has shape {got}, this env's {size}")
    if physics.dtype != torch.float64:
        raise ArgumentError(f"checkpoint: physics: expected float64, got {_name(physics.dtype)}")
    limits.check_fits("checkpoint: physics", physics, backend.get_capabilities().dtype, squared=True)
    if (physics[:, 0] < 0).any():
        raise ArgumentError(f"checkpoint: physics: time must be >= 0, got {float(physics[:, 0].min()):.6g}")
    return physics


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_array(where: str, value: Any, target: torch.Tensor, path: str, base) -> None:
    if not isinstance(value, torch.Tensor):
        raise ArgumentError(f"{where}: expected a tensor, got {type(value).__name__}")
    if value.dtype != target.dtype or tuple(value.shape) != tuple(target.shape):
        raise ArgumentError(
            f"{where}: expected {_name(target.dtype)} of shape {tuple(target.shape)}, "
            f"got {_name(value.dtype)} of shape {tuple(value.shape)}"
        )
    if _configuration(path):
        if not torch.equal(value, target.cpu()):
            raise ArgumentError(
                f"{where}: differs from this env's (configuration is compared, never restored from a file)"
            )
        return
    if value.dtype.is_floating_point:
        if torch.isnan(value).any() or (torch.isinf(value).any() and not torch.isinf(target).any()):
            raise ArgumentError(f"{where}: expected finite values, got NaN or inf")
    elif value.dtype not in (torch.bool, torch.uint64) and not _KEYS.fullmatch(path):
        if value.numel() and int(value.min()) < 0:
            raise ArgumentError(f"{where}: a counter must be >= 0, got {int(value.min())}")
        if path in _LENGTHS and value.numel() and int(value.max()) > base.max_episode_steps:
            raise ArgumentError(
                f"{where}: expected lengths <= {base.max_episode_steps}, got {int(value.max())}"
            )
    if _KEYS.fullmatch(path) and len(torch.unique(value)) != value.numel():
        raise ArgumentError(f"{where}: random keys must be distinct (one stream per env)")


def _assign(container: Any, key: Any, target: Any, value: torch.Tensor) -> None:
    """Write value into target in place (views of it stay views), or rebind the container's entry
    where target cannot be written (an expanded tensor, a read-only array)."""
    if isinstance(target, np.ndarray):
        if target.flags.writeable:
            np.copyto(target, value.numpy().astype(target.dtype, copy=False))
            return
        fresh: Any = value.numpy().astype(target.dtype).copy()
    else:
        try:
            with torch.no_grad():
                target.copy_(value)
            return
        except RuntimeError:  # memory shared between elements (expand): a tensor of its own
            fresh = value.to(target.device, target.dtype).clone()
    if isinstance(container, (dict, list)):
        container[key] = fresh
    else:
        setattr(container, key, fresh)


def run_differences(theirs: dict, ours: dict) -> list[str]:
    """What differs between a checkpoint's run identity and this run's, one line per option.

    Options that are dicts (the task's, the backend's) list only the keys that differ; where the
    task itself differs its options are left out, since they follow from it.
    """
    keys = sorted((set(theirs) | set(ours)) - {"processes"})
    if theirs.get("task") != ours.get("task"):
        keys = [key for key in keys if key != "task_options"]
    lines = []
    for key in keys:
        a, b = theirs.get(key), ours.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            lines += [
                f"{key}.{k}: the checkpoint has {a.get(k)!r}, this run {b.get(k)!r}"
                for k in sorted(set(a) | set(b), key=str)
                if a.get(k) != b.get(k)
            ]
        else:
            lines.append(f"{key}: the checkpoint has {a!r}, this run {b!r}")
    return lines
