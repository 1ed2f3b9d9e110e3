"""The Task contract: what a task declares and the pure batched functions it implements.

A task is written once for every backend. It names its scene (MJCF), its
timing (`sim_dt`, `decimation` physics steps per env step, episode length), its
action space and its observation blocks, and implements over batched arrays, in
the backend's float dtype (`self.dtype`, set by `Task.setup`):

    setup(backend)                      resolve ids and cache constants, once
    action_to_ctrl(action)              (N, act_dim) -> (N, nu) actuator inputs
    control(action, s, memory)          the same for actions relative to the state (IK):
                                        by default action_to_ctrl(action)
    read(backend) -> s                  what the task uses of the state: a dict of
                                        tensors that stay valid after the next step
    observe(s, memory)                  -> (N, obs_dim)
    reward(s, prev, action, memory)     -> (total (N,), {term name: (N,)})
    terminated(s, memory)               -> (N,) bool
    success(s, memory)                  -> (N,) bool, or None: info["is_success"]
    remember(s, action, memory)         -> the memory of the next step
    reset_state(env_ids, rng)           -> qpos, qvel: one row per row of rng
    reset_memory(rng)                   -> memory rows of the envs being reset
    reset_episode(env_ids, rng)         -> qpos, qvel, memory: by default the two above,
                                        in that order; one draw for both where the memory
                                        depends on the state's draw (a start phase)
    mocap_pose(memory)                  -> poses of the scene's mocap bodies, or None
    ghost_qpos(memory)                  -> a pose per env that videos draw translucent, or None
    on_reset(mask, s, memory)           cross-episode state (a terrain curriculum) at reset
    metrics(s, memory)                  -> {name: (N,)} reported in info and episode stats

Tasks keep no per-step state on `self`: the env owns it. State that lives across
episodes (a terrain curriculum's levels) is the one exception, moved only by `on_reset`. `prev` is the reading
that gave the last observation (the state before this step), for rewards that
difference against it. `memory` is a dict of per-env tensors (N, ...) that
lives across steps, e.g. a velocity command or the last action: the env keeps
it, resets its rows with `reset_memory` and replaces it by `remember` after
each step. A task without memory leaves both hooks alone.

Arrays: a task with `arrays = "any"` (every shipped task) computes in the array
namespace `self.xp` (`unienv.utils.arrays`): NumPy on the CPU engine, where its calls
cost a quarter of torch's, and torch on device backends. Its arrays, `rng`'s
draws, `env_ids` and `self.dtype` are that namespace's; it reads the backend's
views through `self.xp.asarray` (on the CPU engine `read` gets the backend's
`host_reads()`, whose reads are the engine's NumPy arrays: no torch in the step). A task with `arrays = "torch"` (the
default, for tasks written in plain torch) gets torch tensors everywhere.

`rng` is a `unienv.utils.random.Sampler` bound to the envs being reset: what env i
samples depends only on its own seed and draws. Its rows are those envs, or
every env when the env resets by mask (device backends); `env_ids` says which.
A task never imports an engine and never reads a tensor's value on the host.

Observation blocks: `observation_blocks()` names the parts of the observation
with their widths, {name: width}, in the order `observe` concatenates them
(the quadruped's base_lin_vel, base_ang_vel, gravity, command, joint_pos,
joint_vel, last_action). The layout, {name: slice} into the observation's
columns, and `single_observation_space`, Box(-inf, inf, (sum of widths,),
`observation_dtype`), derive from them; so observation noise, a normalizer or a
policy can address a block by name. Invariant (tests/tasks): `observe` returns
exactly the blocks' total width on every backend. A task may instead set
`single_observation_space` itself (a plain torch task); it then has one block, "obs".

Options: a task's options are one dataclass, `Options` (a `TaskOptions`: each
field with its default and a one-line doc, made with `option`). `Task(**options)`
builds it, so an unknown name fails there, and sets every field as an attribute
of the task (`task.episode_length_s`). The option checks (unienv.tasks),
Hydra's task config group and the options a policy file records all read it.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from unienv.backends.base import SimBackend
from unienv.errors import ArgumentError
from unienv.utils.arrays import NUMPY, numpy_dtype, torch_namespace
from unienv.utils.random import Sampler

Reading = dict[str, torch.Tensor]


def option(default: Any, doc: str) -> Any:
    """A field of a task's options dataclass: its default and what it means (metadata "doc").
    A dict default is copied for each instance."""
    if isinstance(default, dict):
        return dataclasses.field(default_factory=lambda: dict(default), metadata={"doc": doc})
    return dataclasses.field(default=default, metadata={"doc": doc})


@dataclasses.dataclass
class TaskOptions:
    """Base of the tasks' option dataclasses (none of its own). A field whose default is a
    tuple holds a tuple, nested ones included, whatever sequence it was given (Hydra's lists)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if isinstance(f.default, tuple):
                setattr(self, f.name, _tuples(getattr(self, f.name)))


def _tuples(value: Any) -> Any:
    """Lists and tuples, nested ones included, as tuples."""
    return tuple(map(_tuples, value)) if isinstance(value, (list, tuple)) else value


class Task(abc.ABC):
    """Base class of tasks; subclasses set the class attributes and implement the methods."""

    name: str  # lower-case, as on the command line
    scene: str  # MJCF path
    sim_dt: float
    decimation: int
    episode_length_s: float
    single_action_space: gym.spaces.Box
    # the options dataclass; Task(**options) sets each of its fields as an attribute
    Options: type[TaskOptions] = TaskOptions
    # the observation's dtype: float32, or float64 where Gymnasium's v5 environment observes float64
    observation_dtype: Any = np.float32
    # backend capabilities the task needs (Capabilities field names); UniEnv checks them
    # before setup, so a task fails at construction on a backend that lacks one
    requires: tuple[str, ...] = ()
    # derived quantities (unienv.backends.SUBSTEP_READS) read as the engine's last physics
    # substep left them, where the reference environment a task reproduces reads them; every
    # other read describes the returned state. unienv.make hands them to the backend, which
    # then skips the forward pass at the state (an engine that cannot declares it)
    substep_reads: tuple[str, ...] = ()
    # free camera for videos: lookat (or a body to track), distance, azimuth, elevation
    camera: dict[str, Any] = {"distance": 4.0, "azimuth": 90.0, "elevation": -20.0, "lookat": (0.0, 0.0, 0.5)}
    # the robot's root body: its floating base, or the first moving body of a fixed-base robot;
    # a DR config names it "<root>" (the presets push it and shift its COM), so one config fits every task
    root_body: str | None = None
    # the return at which the task counts as solved (Gymnasium's spec field; v5's on the parity tasks)
    reward_threshold: float | None = None
    # "any": written against self.xp, so NumPy on the CPU engine; "torch": torch tensors everywhere
    arrays: str = "torch"
    xp: Any = None  # the array namespace, from setup
    dtype: Any = torch.float64  # the backend's float dtype in the namespace's terms, from setup
    device: torch.device = torch.device("cpu")

    def __init__(self, **options: Any):
        """The task with `options` (names and defaults: `Options`'s fields), each an attribute."""
        values = self.Options(**options)
        for f in dataclasses.fields(values):
            setattr(self, f.name, getattr(values, f.name))

    def observation_blocks(self) -> dict[str, int]:
        """{name: width} of the observation's blocks, in the order `observe` concatenates them.
        Default, for a task that sets `single_observation_space` itself: one block, "obs"."""
        space = getattr(self, "_observation_space", type(self).single_observation_space)
        if isinstance(space, property):
            raise NotImplementedError(f"{type(self).__name__}: declare observation_blocks()")
        return {"obs": int(np.prod(space.shape))}

    @property
    def observation_layout(self) -> dict[str, slice]:
        """{name: slice(start, stop)} of each block in the observation's columns."""
        layout, start = {}, 0
        for name, width in self.observation_blocks().items():
            if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
                raise ArgumentError(
                    f"{type(self).__name__}.observation_blocks: expected a width >= 1 for {name!r}, got {width!r}"
                )
            layout[name] = slice(start, start + int(width))
            start += int(width)
        return layout

    @property
    def single_observation_space(self) -> gym.spaces.Box:
        """Box(-inf, inf, (total width of the blocks,), observation_dtype), or the space that
        the task set itself (a class attribute, or `self.single_observation_space = ...`)."""
        if hasattr(self, "_observation_space"):
            return self._observation_space
        width = max((s.stop for s in self.observation_layout.values()), default=0)
        return gym.spaces.Box(-np.inf, np.inf, (width,), self.observation_dtype)

    @single_observation_space.setter
    def single_observation_space(self, space: gym.spaces.Box) -> None:
        self._observation_space = space

    @property
    def dt(self) -> float:
        """Seconds of simulated time per env step."""
        return self.sim_dt * self.decimation

    @property
    def max_episode_steps(self) -> int:
        """Env steps after which an episode is truncated: `episode_length_s / dt`, rounded."""
        return round(self.episode_length_s / self.dt)

    @classmethod
    def default_max_episode_steps(cls) -> int:
        """max_episode_steps under the default options, from the class alone, which Gymnasium's
        registry records at `import unienv` (a robot task's constructor builds its scene file)."""
        return round(cls.default_episode_length_s() / (cls.sim_dt * cls.decimation))

    @classmethod
    def default_episode_length_s(cls) -> float:
        """The episode length under the default options, seconds."""
        return cls.Options().episode_length_s

    def deployment(self) -> dict[str, Any] | None:
        """What a deployed policy needs beyond the task's timing and scene, as data (unienv.deploy
        writes it into policy files): {"observation": {block: {"quantity", "frame", "offset",
        "scale"}}, "commands": {name: (low, high)} in the command block's order, "action":
        {"type": "joint_position", "scale", "default_pose": keyframe}}. None: no contract."""
        return None

    def setup(self, backend: SimBackend) -> None:
        """Choose the array namespace and cache the backend's dtype and device; subclasses
        resolve their ids after this."""
        caps = backend.get_capabilities()
        self.device = backend.device
        if self.arrays not in ("any", "torch"):
            raise ValueError(f"{type(self).__name__}.arrays: expected 'any' or 'torch', got {self.arrays!r}")
        if self.arrays == "any" and not caps.sync_free:  # the CPU engine: host arrays
            self.xp, self.dtype = NUMPY, numpy_dtype(caps.dtype)
        else:
            self.xp, self.dtype = torch_namespace(self.device), caps.dtype

    def array(self, x: Any) -> Any:
        """A constant as an array of the task's namespace, in the backend's dtype (cold path)."""
        return self.xp.asarray(x, dtype=self.dtype)

    def action_to_ctrl(self, action: torch.Tensor) -> torch.Tensor:
        """Actuator inputs; by default the action itself (motors driven in [-1, 1])."""
        return action

    def control(self, action: torch.Tensor, s: Reading, memory: Reading) -> torch.Tensor:
        """Actuator inputs for `action` taken in the state `s` (the reading of the last
        observation) with `memory`: for actions relative to the state, such as end-effector
        motions through inverse kinematics. By default `action_to_ctrl(action)`."""
        return self.action_to_ctrl(action)

    @abc.abstractmethod
    def read(self, backend: SimBackend) -> Reading:
        """What the task uses of the backend's state, as a dict of arrays (N, ...) that stay
        valid after the next step (copies, or values derived from the live views)."""

    @abc.abstractmethod
    def observe(self, s: Reading, memory: Reading) -> torch.Tensor:
        """The observation (N, obs_dim): the blocks of `observation_blocks()`, in their order."""

    @abc.abstractmethod
    def reward(
        self, s: Reading, prev: Reading, action: torch.Tensor, memory: Reading
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The reward of the step from `prev` to `s` under `action`: (total (N,), {term: (N,)}),
        the total the sum of the terms (`unienv.task.total`)."""

    @abc.abstractmethod
    def terminated(self, s: Reading, memory: Reading) -> torch.Tensor:
        """(N,) bool: the envs whose episode ends in a terminal state (a fall); time limits are
        the env's (`max_episode_steps`)."""

    def success(self, s: Reading, memory: Reading) -> torch.Tensor | None:
        """(N,) bool: the envs whose state meets the task's goal now. The env puts it in
        `info["is_success"]` every step and, as the episode's last value, in its episode
        statistics (Gymnasium-Robotics' name). None (the default): the task has no goal."""
        return None

    def remember(self, s: Reading, action: torch.Tensor, memory: Reading) -> Reading:
        """The memory of the next step (the last action, say); by default the memory unchanged."""
        return memory

    @abc.abstractmethod
    def reset_state(self, env_ids: Any, rng: Sampler) -> tuple[Any, Any]:
        """Initial (qpos, qvel) of the envs being reset, one row per row of `rng`."""

    def reset_memory(self, rng: Sampler) -> Reading:
        """Memory rows of the envs being reset (a new velocity command, say); by default none."""
        return {}

    def reset_episode(self, env_ids: Any, rng: Sampler) -> tuple[Any, Any, Reading]:
        """(qpos, qvel, memory) of the envs being reset, what the env calls: by default
        `reset_state`'s then `reset_memory`'s draws. A task whose memory depends on its state's
        draw (g1_tracking's start phase) overrides it, so nothing passes between the two on self."""
        qpos, qvel = self.reset_state(env_ids, rng)
        return qpos, qvel, self.reset_memory(rng)

    def metrics(self, s: Reading, memory: Reading) -> dict[str, torch.Tensor]:
        """Per-env quantities to report, {name: (N,)}, from the step's reading: the env puts each
        in info[name] every step and its episode mean in the episode stats. None by default."""
        return {}

    def on_reset(self, mask: torch.Tensor, s: Reading, memory: Reading) -> None:
        """Called by the env before the envs of `mask` (num_envs,) start new episodes (not at
        the first reset), with the reading and memory their episodes ended with; for state
        that lives across episodes, e.g. a curriculum. Masked device math only. Default: nothing."""
        return None

    def mocap_pose(self, memory: Reading) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Where the scene's mocap bodies go for an episode (a target marker, say), from the
        memory: positions (N, nmocap, 3) and wxyz quaternions (N, nmocap, 4). The env writes
        them after each reset where the backend declares `mocap`, and renders them on every
        backend. None (the default) leaves them where the scene puts them."""
        return None

    def ghost_qpos(self, memory: Reading) -> Any:
        """A pose per env (N, nq) that videos draw as a translucent copy of the robot beside
        it (a reference motion's frame, say), from the memory; None (the default): no ghost."""
        return None

    def scene_marks(self, memory: Reading) -> dict[str, dict[str, Any]]:
        """What camera images draw per env that the scene file does not say: a target marker
        kept in the memory, where dm_control edits its one model. {model field: {element name:
        (N, k) values of its first k entries}}, e.g. {"geom_pos": {"target": xy}}; the renderer
        writes them into its own copy of the model before drawing each env. {} by default."""
        return {}


def total(terms: dict[str, torch.Tensor]) -> torch.Tensor:
    """The sum of reward terms (no extra op for a single term)."""
    values = iter(terms.values())
    out = next(values)
    for v in values:
        out = out + v
    return out
