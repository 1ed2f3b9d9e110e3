"""How the env runs on each execution model, chosen once at construction.

`UniEnv` is one pipeline (transition, autoreset, observation). Every question in
it whose answer depends on where the state lives goes to its `Path`:

  rows         `select(mask)`: the envs a reset touches, as a `Rows` for the
               backend and DR plus the task's `env_ids` and `rng`; `any(mask)`:
               whether masked work can be skipped (host) or always runs (device);
               `diverged()`: the engine's diverged envs, None where the host saw none
  conversions  `array(t)` and `tensor(a)` between torch and the task's namespace;
               `reader`, what the task reads the state from: the backend, or on
               HostNumpyPath its `host_reads()` (the CPU engine's NumPy arrays)
  carry        `keep(old, new)`: the new value (host), or copied into the old
               tensors in place (device: a captured CUDA graph reads what its
               last replay wrote)
  actions      `as_actions` (to the task's namespace and dtype) and `checked_actions`:
               refused at once (host), or zeroed, flagged in info and raised at the
               next reset (device: no host read)
  engine       `physics_step` (the host skips NEXT_STEP's restarts), `write_state`, `write_memory`, `write_mocap`
  clock        `now()`: perf_counter on the host; on the device a copy made at the
               step's start, which a captured step reads anew at each replay
  stepping     `run(step, actions)`: the step's outputs as torch tensors; the device
               path replays it as one CUDA graph where the backend allows;
               `run_arrays`, the same in the task's namespace (the single env's)

Three paths: `HostNumpyPath` (the CPU engine, a task in NumPy: arrays share the
backend's memory, and the engine's unchecked entries take what the env made
itself), `HostTorchPath` (the CPU engine, a torch task: the contract's checked
calls) and `DevicePath` (mjwarp, genesis: masks, static shapes, no host reads).
`choose_path` is the only code that reads `Capabilities.sync_free` and the
task's namespace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from unienv.env.checks import check_task_output, checked_action_input
from unienv.env.graph import GraphedStep
from unienv.errors import ArgumentError
from unienv.utils.arrays import numpy_dtype
from unienv.utils.random import EnvRandom, Sampler
from unienv.utils.rows import Rows, device_rows, host_rows


@dataclasses.dataclass(frozen=True)
class Selection:
    """The envs a reset starts: `rows` for the backend and DR (None on the host NumPy path
    without DR, where nothing takes them), and the task's view of them: `env_ids` (its
    namespace; every id on the device path) and `rng`, a row per row of env_ids."""

    rows: Rows | None
    env_ids: Any
    rng: Sampler


def choose_path(caps: Any, task: Any) -> type[Path]:
    """The path class for a backend's capabilities and a task's `arrays`: before the build,
    so that DR can take its row selector from it."""
    if caps.sync_free:
        return DevicePath
    return HostNumpyPath if task.arrays == "any" else HostTorchPath


class Path:
    """What the three paths share: the env's backend, task, action bounds and policies."""

    namespace: str  # the task's array namespace on this path
    dr_rows: Callable[[torch.Tensor], Rows | None]  # DR's row selector

    def __init__(self, env: Any, random: EnvRandom, cuda_graph: bool = False):
        self.backend, self.task, self.random = env.backend, env.task, random
        self.reader = self.backend  # what the task reads from (`Task.read`)
        if self.task.xp.name != self.namespace:
            raise RuntimeError(f"{type(self).__name__}: the task computes in {self.task.xp.name}")
        self.xp = self.task.xp
        self.num_envs, self.device, self.dtype = env.num_envs, env.device, env.dtype
        self.decimation = self.task.decimation
        self.nonfinite_actions, self.out_of_bounds_actions = env.nonfinite_actions, env.out_of_bounds_actions
        self.action_shape = (self.num_envs, int(np.prod(env.single_action_space.shape)))
        self.action_space = env.single_action_space
        self.np_dtype = numpy_dtype(self.dtype)  # of actions as the task gets them

    def raise_pending(self) -> None:
        """Raise what a step could only flag (device backends read nothing back in a step)."""

    def run_arrays(self, step: Callable, actions) -> tuple:
        """`run`, its outputs in the task's namespace (torch tensors but on HostNumpyPath)."""
        return self.run(step, actions)

    def tick(self) -> None:
        """Note the time at a reset or a step's start, where `now()` needs it."""


# ---- host ids: the CPU engine ------------------------------------------------------


class HostPath(Path):
    """Host ids: a reset touches its envs' rows only, and work with no env to do is skipped."""

    dr_rows = staticmethod(host_rows)

    def __init__(self, env: Any, random: EnvRandom, cuda_graph: bool = False):
        super().__init__(env, random)
        low, high = self.action_space.low.reshape(-1), self.action_space.high.reshape(-1)
        self.low, self.high = low, high
        # the usual space, [-b, b] in every dimension: its check is one reduction, |a|.max() <= b
        symmetric = (low == -high).all() and (high == high[0]).all()
        self.action_bound = float(high[0]) if symmetric else None

    def any(self, mask) -> bool:
        return bool(mask.any())

    def diverged(self):
        """The envs whose physics diverged since the last call, a mask in the task's namespace,
        or None where none did (the usual step, which then skips their outputs' masking)."""
        diverged = self.backend.pop_diverged_host()
        return None if diverged is None else self.xp.asarray(diverged)

    def keep(self, old, new):
        return new

    def now(self) -> float:
        return time.perf_counter()

    def write_memory(self, selection: Selection, memory: dict, fresh: dict) -> dict:
        ids = selection.env_ids
        for k, v in fresh.items():
            if k not in memory:
                memory[k] = self.xp.zeros((self.num_envs, *v.shape[1:]), v.dtype)
            memory[k][ids] = v
        return memory

    def write_mocap(self, selection: Selection, pose: tuple) -> None:
        ids = selection.env_ids
        pos, quat = (self.tensor(x[ids]) for x in pose)
        self.backend.set_mocap_pose_tensor(self.tensor(ids), pos, quat)

    def checked_actions(self, actions):
        """Host reads are free: one check (False for NaN too) in the usual case, then the
        rows that are not finite raise (or are zeroed and flagged), and values outside the
        action space are clipped or refused."""
        info = {}
        a, low, high, bound = np.asarray(actions), self.low, self.high, self.action_bound
        if np.abs(a).max() <= bound if bound is not None else ((a >= low) & (a <= high)).all():
            return actions, info
        finite = np.isfinite(a).all(1)
        if not finite.all():
            if self.nonfinite_actions == "raise":
                bad = np.flatnonzero(~finite).tolist()
                raise ArgumentError(
                    f"actions: NaN or inf in envs {bad[:10]} (nonfinite_actions='zero' replaces them)"
                )
            a = np.where(finite[:, None], a, 0.0)
            info["nonfinite_action"], info["_nonfinite_action"] = ~finite, ~finite
        if self.out_of_bounds_actions == "raise":
            outside = ((a < low) | (a > high)).any(1)
            if outside.any():
                bad = np.flatnonzero(outside).tolist()
                raise ArgumentError(
                    f"actions: expected values in the action space [{self.action_space.low.min()}, "
                    f"{self.action_space.high.max()}], got values outside it in envs {bad[:10]} "
                    "(out_of_bounds_actions='clip' clips them)"
                )
        info = {k: self.xp.asarray(v) for k, v in info.items()}
        return self.xp.asarray(np.clip(a, low, high)), info


class HostNumpyPath(HostPath):
    """The CPU engine with a task in NumPy: the env's arrays are NumPy views of torch
    tensors, and the env hands the engine's unchecked entries what it made itself (ctrl from
    checked actions, states for its own sorted ids), checking only what a task's bug could
    break: shapes and finiteness."""

    namespace = "numpy"
    array = staticmethod(torch.Tensor.numpy)
    tensor = staticmethod(torch.from_numpy)

    def __init__(self, env: Any, random: EnvRandom, cuda_graph: bool = False):
        super().__init__(env, random)
        self.reader = self.backend.host_reads()  # the engine's own arrays, no torch views
        self.dr_on = env.dr is not None  # DR alone takes a selection's torch rows

    @staticmethod
    def any(mask: np.ndarray) -> bool:
        return np.count_nonzero(mask) > 0  # a C call: a fifth of ndarray.any's cost on a few envs

    def select(self, mask: np.ndarray) -> Selection:
        ids = mask.nonzero()[0]  # the env's 1-D mask: np.flatnonzero's ravel and wrapper cost 4x this
        rows = Rows(torch.from_numpy(mask), torch.from_numpy(ids)) if self.dr_on else None
        return Selection(rows, ids, self.random.for_envs(ids))

    @staticmethod
    def clear(x: np.ndarray, mask: np.ndarray, value) -> None:
        x[mask] = value

    def as_actions(self, actions) -> np.ndarray:
        checked_action_input(actions, self.action_shape)
        if isinstance(actions, np.ndarray):  # contiguous: torch takes no negative strides
            return np.ascontiguousarray(actions, dtype=self.np_dtype)
        if actions.dtype is torch.bfloat16:  # the one float dtype NumPy lacks
            actions = actions.to(self.dtype)
        return actions.numpy(force=True).astype(self.np_dtype, copy=False)

    def physics_step(self, ctrl: np.ndarray, held: np.ndarray) -> None:
        """Step every env but the `held` ones (NEXT_STEP's restarts, whose step is a reset)."""
        check_task_output(self.task, "action_to_ctrl", "ctrl", ctrl, (self.num_envs, self.backend.nu))
        ids = (~held).nonzero()[0] if np.count_nonzero(held) else None
        self.backend.step_unchecked(ctrl, self.decimation, ids)

    def write_state(self, selection: Selection, qpos: np.ndarray, qvel: np.ndarray) -> None:
        n = len(selection.env_ids)
        check_task_output(self.task, "reset_state", "qpos", qpos, (n, self.backend.nq))
        check_task_output(self.task, "reset_state", "qvel", qvel, (n, self.backend.nv))
        self.backend.set_state_unchecked(selection.env_ids, qpos, qvel)

    @staticmethod
    def run_arrays(step: Callable, actions) -> tuple:
        return step(actions)

    def run(self, step: Callable, actions) -> tuple:
        obs, reward, terminated, truncated, info = step(actions)
        tensor = torch.from_numpy
        return tensor(obs), tensor(reward), tensor(terminated), tensor(truncated), _as_tensors(info)


class TorchArrays:
    """A torch task's arrays: no conversion, masked writes, the contract's checked calls."""

    namespace = "torch"

    @staticmethod
    def array(t: torch.Tensor) -> torch.Tensor:
        return t

    tensor = array

    @staticmethod
    def clear(x: torch.Tensor, mask: torch.Tensor, value) -> None:
        x.masked_fill_(mask, value)

    def as_actions(self, actions) -> torch.Tensor:
        checked_action_input(actions, self.action_shape)
        if isinstance(actions, np.ndarray):  # contiguous: torch takes no negative strides
            actions = torch.from_numpy(np.ascontiguousarray(actions, dtype=self.np_dtype))
        return actions.to(self.device, self.dtype)

    def physics_step(self, ctrl: torch.Tensor, held: torch.Tensor) -> None:
        """Step every env, the `held` ones too: on a device every world steps in one launch
        (masking them would cost more than stepping them, and selecting ids would read the
        mask on the host); a torch task on the CPU takes the contract's checked call."""
        self.backend.step_tensor(ctrl, self.decimation)


class HostTorchPath(TorchArrays, HostPath):
    """The CPU engine with a torch task: the contract's checked calls, by id."""

    def select(self, mask: torch.Tensor) -> Selection:
        ids = torch.nonzero(mask).flatten()
        return Selection(Rows(mask, ids), ids, self.random.for_envs(ids))

    def write_state(self, selection: Selection, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self.backend.set_state_tensor(selection.env_ids, qpos, qvel)

    def run(self, step: Callable, actions) -> tuple:
        return step(actions)


# ---- device masks: mjwarp, genesis ---------------------------------------------------


class DevicePath(TorchArrays, Path):
    """Device masks: every reset computes every env and writes the masked rows, with static
    shapes and no host read, so that the whole step can be recorded as one CUDA graph."""

    dr_rows = staticmethod(device_rows)

    def __init__(self, env: Any, random: EnvRandom, cuda_graph: bool = False):
        super().__init__(env, random)
        self.all_ids = torch.arange(self.num_envs, device=self.device)
        self.act_low = torch.as_tensor(
            self.action_space.low.reshape(-1), dtype=self.dtype, device=self.device
        )
        self.act_high = torch.as_tensor(
            self.action_space.high.reshape(-1), dtype=self.dtype, device=self.device
        )
        self._now = torch.zeros((), dtype=torch.float64, device=self.device)  # perf_counter at this step
        self._flagged = torch.zeros((), dtype=torch.bool, device=self.device)  # a bad action, "raise" mode
        self._graphed = GraphedStep(self.backend) if cuda_graph else None

    def select(self, mask: torch.Tensor) -> Selection:
        return Selection(Rows(mask), self.all_ids, self.random.for_mask(mask))

    def any(self, mask) -> bool:
        return True  # masked work always runs: deciding would read the mask on the host

    def diverged(self) -> torch.Tensor:
        return self.backend.pop_diverged()  # a mask: masked work always runs

    def keep(self, old, new):
        """new, copied into old's tensors where it has them (their memory stays the step's)."""
        if old is None or (isinstance(old, dict) and old.keys() != new.keys()):
            return new
        if isinstance(old, dict):
            for k, v in new.items():
                if v is not old[k]:
                    old[k].copy_(v)
        elif new is not old:
            old.copy_(new)
        return old

    def now(self) -> torch.Tensor:
        return self._now

    def raise_pending(self) -> None:
        if bool(self._flagged):  # the user's reset pays this sync, not the step
            self._flagged.zero_()
            raise ArgumentError(
                "actions: NaN or inf in an earlier step, or with out_of_bounds_actions='raise' a value "
                "outside the action space (non-finite rows were zeroed and flagged in "
                "info['nonfinite_action'], others clipped; nonfinite_actions='zero' and "
                "out_of_bounds_actions='clip' accept them)"
            )

    def checked_actions(self, actions: torch.Tensor):
        """Non-finite rows are zeroed and flagged in info, values outside the space clipped;
        with "raise", the next reset() raises (nothing is read back here)."""
        info = {}
        finite = torch.isfinite(actions).all(1)
        actions = actions.masked_fill(~finite[:, None], 0.0)
        info["nonfinite_action"], info["_nonfinite_action"] = ~finite, ~finite
        if self.nonfinite_actions == "raise":
            self._flagged |= ~finite.all()
        if self.out_of_bounds_actions == "raise":
            self._flagged |= ((actions < self.act_low) | (actions > self.act_high)).any()
        return torch.clamp(actions, self.act_low, self.act_high), info

    def write_state(self, selection: Selection, qpos: torch.Tensor, qvel: torch.Tensor) -> None:
        self.backend.set_state_tensor_mask(selection.rows.mask, qpos, qvel)

    def write_memory(self, selection: Selection, memory: dict, fresh: dict) -> dict:
        mask = selection.rows.mask
        return self.keep(memory, {k: _where_rows(mask, v, memory.get(k, v)) for k, v in fresh.items()})

    def write_mocap(self, selection: Selection, pose: tuple) -> None:
        self.backend.set_mocap_pose_tensor_mask(selection.rows.mask, *pose)

    def tick(self) -> None:
        self._now.fill_(time.perf_counter())  # a value sent to the device, not read back

    def run(self, step: Callable, actions: torch.Tensor) -> tuple:
        self.tick()
        return step(actions) if self._graphed is None else self._graphed(step, actions)


def graph_wanted(caps: Any, cuda_graph: bool | None) -> bool:
    """Whether to replay the step as a CUDA graph: where the backend allows it, unless told not to."""
    if cuda_graph and not caps.cuda_graph:
        gym.logger.warn(
            f"cuda_graph: the {caps.backend} backend on {caps.device} cannot be captured; stepping eagerly"
        )
    return caps.cuda_graph if cuda_graph is None else cuda_graph and caps.cuda_graph


def _where_rows(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Rows of `new` where mask (num_envs,), of `old` elsewhere, for any trailing shape."""
    return torch.where(mask.view(-1, *[1] * (new.ndim - 1)), new, old)


def _as_tensors(info: dict) -> dict:
    """An info dict's NumPy arrays as torch tensors sharing their memory, through nested dicts."""
    return {k: _as_tensor(v) for k, v in info.items()}


def _as_tensor(x: Any) -> Any:
    if x.__class__ is np.ndarray:
        return torch.from_numpy(x)
    return _as_tensors(x) if isinstance(x, dict) else x
