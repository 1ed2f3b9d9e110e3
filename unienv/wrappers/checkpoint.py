"""The policy file: a torch.export program plus the layout of the task it was trained on.

    save_policy("policy.pt2", actor, env, backend="mujoco", info={"iterations": 60})
    module, meta = load_policy("policy.pt2")          # module(obs (N, obs_dim) float32) -> actions
    check_layout(meta, env)                           # raises ArgumentError if env is another layout

The file is what `torch.export.save` writes (a zip archive), with one extra file,
`unienv.json`, holding:

    format          "unienv.policy/1"
    task            the task's name, e.g. "cartpole"
    task_options    the task's constructor arguments as the env was built (JSON values)
    backend         the backend it was trained on (informational: playing it elsewhere is sim2sim)
    observation     {"shape", "dtype"} of one env's observation
    action          {"shape", "dtype", "low", "high"} of one env's action
    info            free-form training facts (library, iterations, env steps, seed, ...)

The exported program takes float32 observations (batch, *obs_shape) with any batch size and returns
deterministic actions clipped to the action bounds; it needs torch only (not rsl_rl, not unienv).

A layout matches when the task, the observation and action shapes, dtypes and bounds, and every
task option except `episode_length_s` are equal; an episode length only changes how long play runs.
"""

from __future__ import annotations

import inspect
import json
import zipfile
from typing import Any

import numpy as np
import torch

from unienv.errors import ArgumentError

FORMAT = "unienv.policy/1"
META_FILE = "unienv.json"
IGNORED_OPTIONS = ("episode_length_s",)


def _jsonable(value: Any) -> Any:
    """value with tuples, NumPy scalars and arrays turned into JSON lists and numbers."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def option_names(cls: type) -> list[str]:
    """A task class's constructor arguments; a `**options` passes its parent class's on."""
    names = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.kind == p.VAR_KEYWORD:
            names += option_names(cls.__mro__[1])
        elif p.name != "self":
            names.append(p.name)
    return names


def task_options(task) -> dict[str, Any]:
    """The constructor arguments of a task object, read back from its attributes."""
    return {name: _jsonable(getattr(task, name)) for name in option_names(type(task)) if hasattr(task, name)}


def policy_layout(env) -> dict[str, Any]:
    """What a policy for `env` (a unienv VectorEnv or a wrapper of one) sees and commands."""
    base = env.unwrapped
    obs, act = env.single_observation_space, env.single_action_space
    return {
        "task": base.task.name,
        "task_options": task_options(base.task),
        "observation": {"shape": list(obs.shape), "dtype": np.dtype(obs.dtype).name},
        "action": {
            "shape": list(act.shape),
            "dtype": np.dtype(act.dtype).name,
            "low": _jsonable(act.low),
            "high": _jsonable(act.high),
        },
    }


class _ClippedPolicy(torch.nn.Module):
    """actor(obs) clipped to the action bounds, as the training adapter clipped it."""

    def __init__(self, actor: torch.nn.Module, low: torch.Tensor, high: torch.Tensor):
        super().__init__()
        self.actor = actor
        self.register_buffer("low", low)
        self.register_buffer("high", high)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.actor(obs), self.low, self.high)


def save_policy(path: str, actor: torch.nn.Module, env, *, backend: str, info: dict | None = None) -> dict:
    """Export `actor` (float32 obs -> actions, deterministic) for `env`'s layout to `path`; returns the metadata."""
    layout = policy_layout(env)
    meta = {"format": FORMAT, **layout, "backend": backend, "info": _jsonable(info or {})}
    low = torch.as_tensor(np.asarray(layout["action"]["low"]), dtype=torch.float32)
    high = torch.as_tensor(np.asarray(layout["action"]["high"]), dtype=torch.float32)
    module = _ClippedPolicy(actor, low, high).to("cpu").eval()
    example = torch.zeros((2, *layout["observation"]["shape"]), dtype=torch.float32)
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(module, (example,), dynamic_shapes=({0: batch},))
    torch.export.save(program, path, extra_files={META_FILE: json.dumps(meta)})
    return meta


def is_policy_file(path: str) -> bool:
    """Whether `path` is a file written by save_policy."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any(name.endswith(f"/extra/{META_FILE}") for name in archive.namelist())


def load_policy(path: str, device: str | torch.device = "cpu") -> tuple[torch.nn.Module, dict]:
    """(module on `device`, metadata) from a file written by save_policy."""
    extra = {META_FILE: ""}
    program = torch.export.load(path, extra_files=extra)
    meta = json.loads(extra[META_FILE])
    if meta.get("format") != FORMAT:
        raise ArgumentError(f"policy: {path} has format {meta.get('format')!r}, expected {FORMAT!r}")
    if torch.device(device).type != "cpu":
        program = torch.export.passes.move_to_device_pass(program, torch.device(device))
    return program.module(), meta


def layout_mismatches(meta: dict, env) -> list[str]:
    """The differences between a policy's recorded layout and `env`'s, one readable line each."""
    here = policy_layout(env)
    problems = []
    if meta["task"] != here["task"]:
        problems.append(f"task: the policy was trained on {meta['task']!r}, this env is {here['task']!r}")
    for part in ("observation", "action"):
        for key, value in here[part].items():
            if meta[part].get(key) != value:
                problems.append(f"{part} {key}: the policy has {meta[part].get(key)}, this env has {value}")
    if meta["task"] == here["task"]:
        theirs, ours = meta["task_options"], here["task_options"]
        for key in sorted(set(theirs) | set(ours)):
            if key not in IGNORED_OPTIONS and theirs.get(key) != ours.get(key):
                problems.append(
                    f"task.{key}: the policy was trained with {theirs.get(key)!r}, this env has {ours.get(key)!r}"
                )
    return problems


def check_layout(meta: dict, env, path: str = "policy") -> None:
    """Raise ArgumentError naming every difference if the policy does not fit `env`."""
    problems = layout_mismatches(meta, env)
    if problems:
        raise ArgumentError(
            f"policy: {path} does not fit this env ({len(problems)} difference"
            f"{'s' if len(problems) > 1 else ''}):\n  "
            + "\n  ".join(problems)
            + "\nPlay it on the task and options it was trained with (e.g. task=... task.<option>=...)."
        )
