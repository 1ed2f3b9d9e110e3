"""Gymnasium vector environments over a Task and a SimBackend.

`UniEnv` is a `gymnasium.vector.VectorEnv` whose inputs and outputs are torch
tensors on the backend's device, batch dimension first. One `step`:

    ctrl = task.action_to_ctrl(actions); backend.step_tensor(ctrl, decimation)
    reward, terminated from the task; truncated when the episode reaches
    max_episode_steps; then autoreset as `metadata["autoreset_mode"]` says.

Autoreset modes (Gymnasium's `AutoresetMode`):
  SAME_STEP (default)  done envs are reset inside the step that ends them; the
                       returned obs is the new episode's first; the terminal obs
                       is in info["final_obs"] (rows where info["_final_obs"])
                       and episode stats in info["final_info"]["episode_stats"].
  NEXT_STEP            the step after a done step resets those envs instead of
                       stepping them (reward 0, not done); stats in info["episode_stats"].
  DISABLED             nothing is reset; call reset(options={"reset_mask": m}).

Episode stats are {"r": return, "l": length, "t": seconds} of the envs whose
episode ended in this step. They are not under "episode", the key of
Gymnasium's RecordEpisodeStatistics, so that wrapper stacks on unienv in every
mode; unienv's own are the env's returns, before any reward wrapper.

Every info key `k` that is per env comes with a `_k` bool mask. Seeding:
env i's resets sample from its own stream keyed by seed + i
(`unienv.random`), so the same seed gives the same trajectories bit for bit on
the CPU, and env i of a vector seeded s matches a single env seeded s + i.

Domain randomization (`dr=`, see `unienv.dr`) hooks in at four places, and
costs nothing when dr is None: startup terms once after the backend is built,
reset terms in each env's reset (before its state is set), interval terms,
pushes and action latency before each physics step, and observation noise on
each observation. `env.dr_params()` gives each env's current parameters.

The step is three parts: `_transition` (DR, actions to ctrl, physics, the
task's reading, reward and termination), an autoreset function per mode, and
the observation, with divergence masking as its last write. The task is pure:
the env keeps its reading of the last state (the `prev` of the next reward) and
its per-env memory, and hands them in.

On a backend whose state lives on a device (`Capabilities.sync_free`) nothing
in a step reads a device value on the host: ended envs are reset by mask with
static shapes and every branch is a mask, so that the step can be recorded as
one CUDA graph (`cuda_graph=`, where `Capabilities.cuda_graph`). On the CPU
engine the env resets ended envs by id and skips what has nothing to do.

`numpy_env(env)` gives the NumPy form for NumPy-based RL code; `SingleEnv` is
the one-env `gymnasium.Env` that `gymnasium.make("unienv/<Task>-v0")` returns.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from unienv.arrays import numpy_dtype
from unienv.backends import SimBackend
from unienv.dr import DomainRandomization
from unienv.errors import ArgumentError, unknown_name
from unienv.random import EnvRandom
from unienv.task import Task
from unienv.tasks import require

_NONFINITE = ("raise", "zero")
# actions outside the action space: "clip" (default) or "raise"; Gymnasium's pass-through is not
# offered, since it turns a large finite action into an infinite reward (ant: ctrl cost of 1e200**2)
_OUT_OF_BOUNDS = ("clip", "raise")
SEED_RANGE = (0, 2**32)  # seeds are ints in [0, 2**32), as NumPy's legacy seeding takes


class UniEnv(VectorEnv):
    """num_envs copies of a task on one batched backend; see the module docstring."""

    def __init__(
        self,
        task: Task,
        backend: SimBackend,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        render_env_ids: Sequence[int] | None = None,
        render_size: tuple[int, int] = (480, 640),
        nonfinite_actions: str = "raise",
        out_of_bounds_actions: str = "clip",
        dr: Any = None,
        seed: int | None = None,
        cuda_graph: bool | None = None,
    ):
        """dr: a DR config (mapping or DictConfig, see unienv.dr) or None; seed
        seeds the first reset and the DR streams (startup terms draw from it);
        cuda_graph: replay each step as one CUDA graph (default: where the backend
        allows it, `Capabilities.cuda_graph`); out_of_bounds_actions: what a finite action
        outside the action space does, "clip" (to the space's bounds, what the actuators'
        ctrlrange does to the physics anyway; the reward then sees the clipped action) or
        "raise" (at once on mujoco; on mjwarp and genesis, which read nothing back in a step,
        clipped in the step and raised at the next reset()); render_env_ids: the envs render()
        draws (default every env, one frame each, as Gymnasium's vector RecordVideo expects)."""
        autoreset_mode = _autoreset_mode(autoreset_mode)
        if max_episode_steps is None:
            max_episode_steps = task.max_episode_steps
        if (
            isinstance(max_episode_steps, bool)
            or not isinstance(max_episode_steps, int)
            or max_episode_steps < 1
        ):
            raise ArgumentError(f"max_episode_steps: expected a positive int, got {max_episode_steps!r}")
        if render_mode not in (None, "rgb_array"):
            raise ArgumentError(f"render_mode: expected None or 'rgb_array', got {render_mode!r}")
        if cuda_graph not in (None, True, False):
            raise ArgumentError(f"cuda_graph: expected None, True or False, got {cuda_graph!r}")
        if nonfinite_actions not in _NONFINITE:
            raise ArgumentError(f"nonfinite_actions: expected one of {_NONFINITE}, got {nonfinite_actions!r}")
        if out_of_bounds_actions not in _OUT_OF_BOUNDS:
            raise ArgumentError(
                f"out_of_bounds_actions: expected one of {_OUT_OF_BOUNDS}, got {out_of_bounds_actions!r}"
            )
        if render_env_ids is None:
            render_env_ids = range(backend.num_envs)
        ids = list(render_env_ids) if isinstance(render_env_ids, (Sequence, range)) else None
        if (
            not ids
            or any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids)
            or min(ids) < 0
            or max(ids) >= backend.num_envs
        ):
            raise ArgumentError(
                f"render_env_ids: expected a non-empty list of int ids in [0, {backend.num_envs}), "
                f"got {render_env_ids!r}"
            )
        render_env_ids = [int(i) for i in ids]
        if abs(backend.dt - task.sim_dt) > 1e-12:
            raise ArgumentError(f"backend: its sim_dt {backend.dt} differs from the task's {task.sim_dt}")

        self.task, self.backend = task, backend
        self.num_envs = backend.num_envs
        self.device = backend.device
        self.max_episode_steps = max_episode_steps
        self.render_mode = render_mode
        self.render_env_ids = render_env_ids
        self.render_size = render_size
        self.nonfinite_actions = nonfinite_actions
        self.out_of_bounds_actions = out_of_bounds_actions
        self.single_action_space = task.single_action_space
        self.single_observation_space = task.single_observation_space
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.metadata = {
            "autoreset_mode": autoreset_mode,
            "render_modes": ["rgb_array"],
            "render_fps": round(1.0 / task.dt),
        }
        self._act_dim = int(np.prod(self.single_action_space.shape))
        low, high = self.single_action_space.low.reshape(-1), self.single_action_space.high.reshape(-1)
        self._low_np, self._high_np = low, high
        # the usual space, [-b, b] in every dimension: its check is one reduction, |a|.max() <= b
        symmetric = (low == -high).all() and (high == high[0]).all()
        self._action_bound = float(high[0]) if symmetric else None
        self._act_low = torch.as_tensor(low, dtype=backend.get_capabilities().dtype, device=backend.device)
        self._act_high = torch.as_tensor(high, dtype=backend.get_capabilities().dtype, device=backend.device)
        self.dr = DomainRandomization(dr, backend, task, seed) if dr else None  # checked before the build

        require(task, backend)
        backend.materialize()
        task.setup(backend)
        caps = backend.get_capabilities()
        self.dtype = caps.dtype
        # device backends: masks and static shapes, no host reads; the CPU engine: row ids
        self._sync_free = caps.sync_free
        self._mocap = caps.mocap and backend.nmocap > 0
        if cuda_graph and not caps.cuda_graph:
            gym.logger.warn(
                f"cuda_graph: the {caps.backend} backend on {caps.device} cannot be captured; stepping eagerly"
            )
        self._graph_wanted = caps.cuda_graph if cuda_graph is None else cuda_graph and caps.cuda_graph
        self._graph: _StepGraph | None = None
        self._eager_steps = 0  # since the last reset of the graph (capture waits for warm-up steps)
        n, dev = self.num_envs, self.device
        self._random = EnvRandom(n, dev)
        if seed is not None:
            self._random.seed(_checked_seed(seed))
        if self.dr is not None:
            self.dr.startup()
        # the env's own arrays are of the task's namespace (`Task.xp`): NumPy views of torch
        # tensors where the task computes in NumPy (the CPU engine), torch tensors otherwise
        xp = self._xp = task.xp
        self._host_arrays = xp.name == "numpy"
        self._np_dtype = numpy_dtype(caps.dtype)  # of actions as the task gets them
        self._array = (lambda t: t.numpy()) if self._host_arrays else (lambda t: t)
        self._tensor = torch.from_numpy if self._host_arrays else (lambda a: a)
        # steps into each env's current episode; writable, e.g. for random episode starts
        self.episode_length = torch.zeros(n, dtype=torch.int64, device=dev)
        self._length = self._array(self.episode_length)
        self._return = xp.zeros(n, task.dtype)
        self._start = xp.zeros(n, xp.float64)  # perf_counter at the episode's start
        self._now = torch.zeros((), dtype=torch.float64, device=dev)  # perf_counter at this step (sync_free)
        self._pending_reset = xp.zeros(n, xp.bool)  # NEXT_STEP
        self._nonfinite_seen = torch.zeros((), dtype=torch.bool, device=dev)  # sync-free "raise" mode
        self._all_ids = torch.arange(n, device=dev)
        self._none = xp.zeros(n, xp.bool)
        self._obs_dtype = getattr(xp, np.dtype(self.single_observation_space.dtype).name)
        self._memory: dict[str, Any] = {}
        self._reading: dict[str, Any] | None = None  # the task's reading behind the last obs
        self._renderer = None

    @property
    def autoreset_mode(self) -> AutoresetMode:
        """metadata["autoreset_mode"], as an attribute too, as Gymnasium's own vector envs have it."""
        return self.metadata["autoreset_mode"]

    # ---- reset --------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset all envs, or those in options["reset_mask"]; returns (obs, info).

        seed: an int in [0, 2**32) (env i then draws from seed + i) or None. Every argument is
        checked before anything changes."""
        seed = None if seed is None else _checked_seed(seed)
        mask = self._reset_mask(options)
        if bool(self._nonfinite_seen):  # the user's reset pays this sync, not the step
            self._nonfinite_seen.zero_()
            raise ArgumentError(
                "actions: NaN or inf in an earlier step, or with out_of_bounds_actions='raise' a value "
                "outside the action space (non-finite rows were zeroed and flagged in "
                "info['nonfinite_action'], others clipped; nonfinite_actions='zero' and "
                "out_of_bounds_actions='clip' accept them)"
            )
        if seed is not None:
            self._random.seed(seed)
            if self.dr is not None:
                self.dr.seed(seed)
        self._now.fill_(time.perf_counter())
        if self._reading is None:  # the first reset: every env, whatever the mask
            mask = ~self._none
        obs = self._reset_envs(mask, None)
        self._pending_reset &= ~mask
        return self._tensor(obs), {}

    def _reset_mask(self, options: Any) -> torch.Tensor:
        """The envs reset(options=...) resets: options["reset_mask"], or all."""
        if options is None:
            return ~self._none
        if not isinstance(options, dict):
            raise ArgumentError(f"options: expected a dict or None, got {type(options).__name__}")
        unknown = sorted(set(options) - {"reset_mask"}, key=str)
        if unknown:
            raise ArgumentError(f"options: {unknown_name('key', unknown[0], ['reset_mask'])}")
        if "reset_mask" not in options:
            return ~self._none
        given = options["reset_mask"]
        mask = given if isinstance(given, torch.Tensor) else torch.as_tensor(np.asarray(given))
        if mask.dtype != torch.bool or mask.shape != (self.num_envs,):
            raise ArgumentError(
                f"options['reset_mask']: expected a bool array of shape ({self.num_envs},), "
                f"got {type(given).__name__} of {mask.dtype} {tuple(mask.shape)}"
            )
        return self._array(mask.to(self.device))

    def _reset_envs(self, mask, obs):
        """Start new episodes in the envs of `mask`; returns the observation, `obs`
        (a fresh one if None) with those envs' rows replaced by their first."""
        xp, task = self._xp, self.task
        if self._sync_free:
            ids, rng = self._all_ids, self._random.for_mask(mask)
        else:
            if obs is not None and not mask.any():
                return obs
            ids = np.flatnonzero(mask) if self._host_arrays else torch.nonzero(mask).flatten()
            rng = self._random.for_envs(ids)
        if self._reading is not None:  # episodes end: what carries across them (a curriculum)
            task.on_reset(mask, self._reading, self._memory)
        if self.dr is not None:
            self.dr.reset(self._tensor(mask))
        qpos, qvel = task.reset_state(ids, rng)
        memory = task.reset_memory(rng)
        if self.dr is not None:
            qpos, qvel = self._dr_reset_state(mask, ids, qpos, qvel)
        if self._sync_free:
            self.backend.set_state_tensor_mask(mask, qpos, qvel)
            self._keep(
                "_memory", {k: _where_rows(mask, v, self._memory.get(k, v)) for k, v in memory.items()}
            )
        else:
            self._set_rows(ids, qpos, qvel)
            for k, v in memory.items():
                if k not in self._memory:
                    self._memory[k] = xp.zeros((self.num_envs, *v.shape[1:]), v.dtype)
                self._memory[k][ids] = v
        self._place_mocap(mask, ids)
        _clear(self._return, mask, 0.0)
        _clear(self._length, mask, 0)
        _clear(self._start, mask, self._clock())
        self._keep("_reading", task.read(self.backend))
        fresh = self._finish_obs(task.observe(self._reading, self._memory), mask)
        return fresh if obs is None else xp.where(mask[:, None], fresh, obs)

    # The CPU engine's hot path: the env hands the backend arrays it made itself (ctrl from
    # checked actions, states for its own sorted ids), so it calls the engine hooks past the
    # contract's argument checks (2 us a step at 1 env, 20-75 us at 256 envs, where they run right
    # after the physics), checking in NumPy only what a task's bug could break: shapes and
    # finiteness. Torch tasks and device backends take the public calls.

    def _physics_step(self, ctrl) -> None:
        """backend.step_tensor(ctrl, task.decimation)."""
        if not self._host_arrays:
            self.backend.step_tensor(ctrl, self.task.decimation)
            return
        self._check_task_output("action_to_ctrl", "ctrl", ctrl, (self.num_envs, self.backend.nu))
        self.backend.step_unchecked(torch.from_numpy(ctrl), self.task.decimation)

    def _set_rows(self, ids, qpos, qvel) -> None:
        """backend.set_state_tensor(ids, qpos, qvel), ids sorted (backends that take ids)."""
        if not self._host_arrays:
            self.backend.set_state_tensor(ids, qpos, qvel)
            return
        self._check_task_output("reset_state", "qpos", qpos, (len(ids), self.backend.nq))
        self._check_task_output("reset_state", "qvel", qvel, (len(ids), self.backend.nv))
        self.backend.set_state_unchecked(torch.from_numpy(ids), torch.from_numpy(qpos), torch.from_numpy(qvel))

    def _check_task_output(self, method: str, name: str, x: np.ndarray, shape: tuple[int, int]) -> None:
        source = f"{type(self.task).__name__}.{method}"
        if x.shape != shape:
            raise ArgumentError(f"{name}: {source} gave shape {x.shape}, expected {shape}")
        if not np.isfinite(x).all():
            raise ArgumentError(f"{name}: {source} gave NaN or inf")

    def _place_mocap(self, mask, ids) -> None:
        """Move the task's mocap bodies for the envs just reset, where the backend can (elsewhere
        they only show in renders)."""
        pose = self.task.mocap_pose(self._memory) if self._mocap else None
        if pose is None:
            return
        if self._sync_free:
            self.backend.set_mocap_pose_tensor_mask(mask, *pose)
        else:
            pos, quat = (self._tensor(x[ids]) for x in pose)
            self.backend.set_mocap_pose_tensor(self._tensor(ids), pos, quat)

    def _dr_reset_state(self, mask, ids, qpos, qvel):
        """The DR manager works on full-width torch rows; the CPU path holds rows for ids only."""
        if self._sync_free:
            return self.dr.reset_state(mask, qpos, qvel)
        full_q = self._xp.zeros((self.num_envs, qpos.shape[1]), qpos.dtype)
        full_v = self._xp.zeros((self.num_envs, qvel.shape[1]), qvel.dtype)
        full_q[ids], full_v[ids] = qpos, qvel
        full_q, full_v = self.dr.reset_state(*map(self._tensor, (mask, full_q, full_v)))
        return self._array(full_q)[ids], self._array(full_v)[ids]

    def _keep(self, name: str, value):
        """Carry state to the next step: on a sync_free backend in place, into the tensors
        the last step left (so that a captured CUDA graph of the step reads what its last
        replay wrote); otherwise by rebinding. `value`: a tensor or a dict of them."""
        old = getattr(self, name)
        if not self._sync_free or old is None or (isinstance(old, dict) and old.keys() != value.keys()):
            setattr(self, name, value)
        elif isinstance(old, dict):
            for k, v in value.items():
                if v is not old[k]:
                    old[k].copy_(v)
        elif value is not old:
            old.copy_(value)

    def _finish_obs(self, obs, fresh_noise):
        """The task's observation in the space's dtype, with DR noise (fresh where asked)."""
        obs = self._xp.astype(obs, self._obs_dtype)
        if self.dr is None:
            return obs
        fresh_noise = None if fresh_noise is None else self._tensor(fresh_noise)
        return self._array(self.dr.observation(self._tensor(obs), fresh_noise))

    def observe(self) -> torch.Tensor:
        """The observation of the state the backend holds now (fresh DR noise).

        Call it after writing the backend's state directly (set_state_tensor): the
        next step's reward then differences against that state.
        """
        self._keep("_reading", self.task.read(self.backend))
        return self._tensor(self._finish_obs(self.task.observe(self._reading, self._memory), None))

    def dr_params(self) -> dict[str, torch.Tensor]:
        """Each DR term's current per-env values, (num_envs, E); {} without DR."""
        return {} if self.dr is None else self.dr.params()

    # ---- step: transition, autoreset, observation ---------------------------

    def step(self, actions):
        """Apply actions (num_envs, act_dim); returns obs, reward, terminated, truncated, info."""
        if self._reading is None:
            raise ArgumentError("step: call reset() before the first step")
        actions = self._as_actions(actions)
        if self._host_arrays:
            obs, reward, terminated, truncated, info = self._step(actions)
            tensor = torch.from_numpy
            return tensor(obs), tensor(reward), tensor(terminated), tensor(truncated), _as_tensors(info)
        if self._sync_free:
            self._now.fill_(time.perf_counter())  # a value sent to the device, not read back
        if self._graph_wanted:
            if self._graph is not None and self._graph.epoch != self.backend.graph_epoch:
                self._graph, self._eager_steps = None, 0  # the engine moved memory: capture anew
            if self._graph is None and self._eager_steps >= _GRAPH_WARMUP:
                self._graph = self._capture(actions)
            if self._graph is not None:
                return self._graph.replay(actions)
            self._eager_steps += 1
        return self._step(actions)

    def _step(self, actions):
        """The step's work, in the task's namespace: transition, autoreset, outputs."""
        actions, info = self._checked_values(actions)
        obs, reward, terminated, truncated, diverged = self._transition(actions, info)
        mode = self.metadata["autoreset_mode"]
        if mode == AutoresetMode.SAME_STEP:
            obs = self._autoreset_same_step(obs, terminated | truncated, diverged, info)
        elif mode == AutoresetMode.NEXT_STEP:
            obs, reward, terminated, truncated = self._autoreset_next_step(
                obs, reward, terminated, truncated, info
            )
        else:
            self._episode_info(terminated | truncated, info)
        return obs, reward, terminated, truncated, info

    def _transition(self, actions, info: dict):
        """One env step of physics and the task's outputs, before any reset."""
        task, xp, before, memory = self.task, self._xp, self._reading, self._memory
        applied = actions if self.dr is None else self._array(self.dr.actions(self._tensor(actions)))
        self._physics_step(task.action_to_ctrl(applied))
        reading = task.read(self.backend)
        reward, terms = task.reward(reading, before, actions, memory)
        terminated = task.terminated(reading, memory)
        self._keep("_memory", task.remember(reading, actions, memory))
        self._keep("_reading", reading)
        memory = self._memory
        self._length += 1
        truncated = self._length >= self.max_episode_steps
        obs = self._finish_obs(task.observe(reading, memory), None)
        diverged = self._array(self.backend.pop_diverged())
        if self._sync_free or diverged.any():  # never hand out a diverged state: end the episode
            truncated = truncated | diverged
            reward = xp.where(diverged, 0.0, reward)
            obs = xp.where(diverged[:, None], 0.0, obs)
            info["diverged"], info["_diverged"] = diverged, diverged
        self._return += reward
        info["reward_terms"] = terms
        return obs, reward, terminated, truncated, diverged

    def _autoreset_same_step(self, obs, done, diverged, info):
        """Done envs start anew now; their last obs goes to info["final_obs"]."""
        if not self._sync_free and not done.any():
            return obs
        info["final_obs"], info["_final_obs"] = obs, done
        info["final_info"], info["_final_info"] = (
            {"episode_stats": self._episode_stats(done), "_episode_stats": done},
            done,
        )
        return self._reset_envs(done, obs)

    def _autoreset_next_step(self, obs, reward, terminated, truncated, info):
        """Envs that ended last step start anew instead of counting this one (reward 0, not done)."""
        xp, pending = self._xp, self._pending_reset
        if self._sync_free or pending.any():
            obs = self._reset_envs(pending, obs)
            reward = xp.where(pending, 0.0, reward)
            terminated, truncated = terminated & ~pending, truncated & ~pending
        done = terminated | truncated
        self._episode_info(done, info)
        self._keep("_pending_reset", done)
        return obs, reward, terminated, truncated

    def _episode_info(self, done, info: dict) -> None:
        """Episode stats of the envs that just ended, in info["episode_stats"] (NEXT_STEP, DISABLED)."""
        if self._sync_free or done.any():
            info["episode_stats"], info["_episode_stats"] = self._episode_stats(done), done

    def _capture(self, actions: torch.Tensor) -> _StepGraph | None:
        """Record one step as a CUDA graph (it runs when replayed); None, with a warning
        that says why, if the step cannot be captured."""
        graph = _StepGraph(actions, self.backend.graph_epoch)
        try:
            with torch.cuda.graph(graph.graph):
                graph.outputs = self._step(graph.actions)
        except Exception as e:  # e.g. an engine call that is not capturable
            gym.logger.warn(
                f"cuda_graph: the env step could not be captured ({type(e).__name__}: {e}); stepping eagerly"
            )
            self._graph_wanted = False
            return None
        return graph

    def _as_actions(self, actions) -> torch.Tensor | np.ndarray:
        """actions as a tensor (num_envs, act_dim) in the backend's dtype and on its device; a
        NumPy array where the task computes in NumPy (converted there: no torch allocation)."""
        shape = (self.num_envs, self._act_dim)
        if isinstance(actions, np.ndarray):
            if actions.dtype.kind != "f":
                raise ArgumentError(f"actions: expected a float array, got {actions.dtype}")
            if actions.shape != shape:
                raise ArgumentError(f"actions: expected shape {shape}, got {actions.shape}")
            actions = actions.astype(self._np_dtype, copy=False)
            return actions if self._host_arrays else torch.from_numpy(actions).to(self.device)
        if not isinstance(actions, torch.Tensor):
            raise ArgumentError(f"actions: expected a tensor or array {shape}, got {type(actions).__name__}")
        if actions.shape != shape:
            raise ArgumentError(f"actions: expected shape {shape}, got {tuple(actions.shape)}")
        if not actions.dtype.is_floating_point:
            raise ArgumentError(f"actions: expected a float tensor, got {actions.dtype}")
        if not self._host_arrays:
            return actions.to(self.device, self.dtype)
        if actions.dtype is torch.bfloat16:  # the one float dtype NumPy lacks
            actions = actions.to(self.dtype)
        return actions.numpy(force=True).astype(self._np_dtype, copy=False)

    def _checked_values(self, actions):
        """Rows that are not finite raise (CPU engine) or are zeroed and flagged in info
        (device backends: no host read; "raise" then raises at the next reset()); finite
        values outside the action space are clipped or refused (`out_of_bounds_actions`)."""
        info = {}
        if self._sync_free:
            finite = torch.isfinite(actions).all(1)
            actions = actions.masked_fill(~finite[:, None], 0.0)
            info["nonfinite_action"], info["_nonfinite_action"] = ~finite, ~finite
            if self.nonfinite_actions == "raise":
                self._nonfinite_seen |= ~finite.all()
            if self.out_of_bounds_actions == "raise":
                self._nonfinite_seen |= ((actions < self._act_low) | (actions > self._act_high)).any()
            return torch.clamp(actions, self._act_low, self._act_high), info
        # the CPU engine: host reads are free; one check (False for NaN too) in the usual case
        a, low, high, bound = actions, self._low_np, self._high_np, self._action_bound
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
                    f"actions: expected values in the action space [{self.single_action_space.low.min()}, "
                    f"{self.single_action_space.high.max()}], got values outside it in envs {bad[:10]} "
                    "(out_of_bounds_actions='clip' clips them)"
                )
        info = {k: self._xp.asarray(v) for k, v in info.items()}
        return self._xp.asarray(np.clip(a, low, high)), info

    def _clock(self) -> float | torch.Tensor:
        """Now, by time.perf_counter: on a sync_free backend the device copy made at the
        step's start (a captured step reads it anew at each replay)."""
        return self._now if self._sync_free else time.perf_counter()

    def _episode_stats(self, done) -> dict:
        xp, elapsed = self._xp, self._clock() - self._start
        return {
            "r": xp.where(done, self._return, 0.0),
            "l": xp.where(done, self._length, 0),
            "t": xp.where(done, elapsed, 0.0),
        }

    # ---- render / close -----------------------------------------------------

    def render(self) -> tuple[np.ndarray, ...] | None:
        """RGB frames (H, W, 3) uint8 of the envs in render_env_ids."""
        if self.render_mode is None:
            gym.logger.warn("render() needs render_mode='rgb_array'")
            return None
        if self._renderer is None:
            from unienv.render import Renderer

            height, width = self.render_size
            self._renderer = Renderer(self.task.scene, width=width, height=height, camera=self.task.camera)
        qpos = self.backend.get_state_views()["qpos"][self.render_env_ids].cpu().numpy()
        pose = self.task.mocap_pose(self._memory) if self._memory else None
        if pose is None:
            return tuple(self._renderer.render(q) for q in qpos)
        pos, quat = (_to_numpy(x[self.render_env_ids]) for x in pose)
        return tuple(self._renderer.render(q, p, r) for q, p, r in zip(qpos, pos, quat, strict=True))

    def close_extras(self, **kwargs: Any) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.backend.close()


_GRAPH_WARMUP = 2  # eager steps before a capture: lazy allocations and engine graphs happen there


class _StepGraph:
    """One env step recorded as a CUDA graph: static actions in, static outputs out."""

    def __init__(self, actions: torch.Tensor, epoch: int):
        self.graph = torch.cuda.CUDAGraph()
        self.actions = actions.clone()
        self.epoch = epoch
        self.outputs: tuple = ()

    def replay(self, actions: torch.Tensor) -> tuple:
        """Run the step on new actions; the outputs are copies (the next replay rewrites them)."""
        self.actions.copy_(actions)
        self.graph.replay()
        return _cloned(self.outputs)


def _cloned(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, dict):
        return {k: _cloned(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(_cloned(v) for v in x)
    return x


def _clear(x, mask, value) -> None:
    """x[mask] = value, in place: masked_fill_ for a tensor (no host sync), a masked write in NumPy."""
    if isinstance(x, torch.Tensor):
        x.masked_fill_(mask, value)
    else:
        x[mask] = value


def _as_tensors(info: dict) -> dict:
    """An info dict's NumPy arrays as torch tensors sharing their memory, through nested dicts."""
    return {k: _as_tensor(v) for k, v in info.items()}


def _as_tensor(x: Any) -> Any:
    if x.__class__ is np.ndarray:
        return torch.from_numpy(x)
    return _as_tensors(x) if isinstance(x, dict) else x


def _where_rows(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    """Rows of `new` where mask (num_envs,), of `old` elsewhere, for any trailing shape."""
    return torch.where(mask.view(-1, *[1] * (new.ndim - 1)), new, old)


def _checked_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"seed: expected an int in [0, 2**32) or None, got {seed!r}")
    if not SEED_RANGE[0] <= seed < SEED_RANGE[1]:
        raise ArgumentError(f"seed: expected an int in [0, 2**32) or None, got {seed}")
    return int(seed)


def _autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    names = {m.name.lower(): m for m in AutoresetMode} | {m.value: m for m in AutoresetMode}
    if isinstance(mode, str) and mode.lower() in names:
        return names[mode.lower()]
    raise ArgumentError(f"autoreset_mode: expected one of {[m.name for m in AutoresetMode]}, got {mode!r}")


# ---- NumPy form -----------------------------------------------------------------


def _to_numpy(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, dict):
        return {k: _to_numpy(v) for k, v in x.items()}
    return x


class NumpyEnv(VectorWrapper):
    """A UniEnv with NumPy inputs and outputs (arrays on the host), infos included."""

    def step(self, actions):
        return tuple(_to_numpy(x) for x in self.env.step(torch.as_tensor(np.asarray(actions))))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        return tuple(_to_numpy(x) for x in self.env.reset(seed=seed, options=options))


def numpy_env(env: UniEnv) -> NumpyEnv:
    return NumpyEnv(env)


# ---- single env (gymnasium.make) --------------------------------------------------


class SingleEnv(gym.Env):
    """One env of a task as a plain `gymnasium.Env` with NumPy outputs."""

    def __init__(self, vector_env: UniEnv):
        if vector_env.num_envs != 1:
            raise ArgumentError(f"vector_env: expected num_envs=1, got {vector_env.num_envs}")
        if vector_env.metadata["autoreset_mode"] != AutoresetMode.DISABLED:
            raise ArgumentError("vector_env: expected autoreset_mode=DISABLED")
        self.vector_env = vector_env
        self.action_space = vector_env.single_action_space
        self.observation_space = vector_env.single_observation_space
        self.render_mode = vector_env.render_mode
        self.metadata = {"render_modes": ["rgb_array"], "render_fps": vector_env.metadata["render_fps"]}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, info = self.vector_env.reset(seed=seed, options=options)
        return obs[0].cpu().numpy(), {}

    def step(self, action):
        action = torch.as_tensor(np.asarray(action, dtype=self.action_space.dtype))[None]
        obs, reward, terminated, truncated, info = self.vector_env.step(action)
        single = {k: float(v[0]) for k, v in info["reward_terms"].items()}
        return obs[0].cpu().numpy(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), single

    def render(self):
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def close(self):
        self.vector_env.close()
