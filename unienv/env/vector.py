"""UniEnv: a Gymnasium vector env over a Task and a SimBackend.

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
                       stepping them (reward and its terms 0, not done); stats in
                       info["episode_stats"].
  DISABLED             nothing is reset; call reset(options={"reset_mask": m}).

Episode stats are {"r": return, "l": length, "t": seconds} of the envs whose
episode ended in this step, the episode's mean of each of the task's metrics
(`Task.metrics`, e.g. a cube's yaw rate), whose step values info[name] gives
(`EpisodeSums`), and "is_success" (the goal met at the last step) for a task with a goal
(`Task.success`, also in info["is_success"] every step). They are not under "episode", the key of
Gymnasium's RecordEpisodeStatistics, so that wrapper stacks on unienv in every
mode; unienv's own are the env's returns, before any reward wrapper.

Every info key `k` that is per env comes with a `_k` bool mask. Seeding:
env i's resets sample from its own stream keyed by seed + i
(`unienv.utils.random`), so the same seed gives the same trajectories bit for bit on
the CPU, and env i of a vector seeded s matches a single env seeded s + i.

Domain randomization (`dr=`, see `unienv.dr`) hooks in at four places, and
costs nothing when dr is None: startup terms once after the backend is built,
reset terms in each env's reset (before its state is set), interval terms,
pushes and action latency before each physics step, and observation noise on
each observation. `env.dr_params()` gives each env's current parameters.

The step is one pipeline: `_transition` (DR, actions to ctrl, physics, the
task's reading, reward and termination), the autoreset of the mode (bound at
construction), and the observation, with divergence masking as its last write.
The task is pure: the env keeps its reading of the last state (the `prev` of the
next reward) and its per-env memory, and hands them in.

Where the state lives decides how each part runs, and that is the env's `Path`
(`unienv.env.paths`), chosen once at construction: on the CPU engine ended envs
are reset by id and work with nothing to do is skipped; on a backend whose state
lives on a device nothing in a step reads a device value on the host, ended envs
are reset by mask with static shapes, and the step can be recorded as one CUDA
graph (`cuda_graph=`, where `Capabilities.cuda_graph`; `unienv.env.graph`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from unienv.backends import SimBackend
from unienv.dr import DomainRandomization
from unienv.env.checks import (
    check_frame_memory,
    check_options,
    checked_autoreset_mode,
    checked_render_env_ids,
    checked_render_size,
    checked_repeat,
    checked_reset_mask,
    checked_seed,
)
from unienv.env.paths import choose_path, graph_wanted
from unienv.env.pixels import PixelOptions, observer, repeated
from unienv.errors import ArgumentError, BackendClosedError, NeedsResetError
from unienv.task import Task
from unienv.tasks import require
from unienv.utils.arrays import to_numpy
from unienv.utils.random import EnvRandom


def record_success(task: Task, reading: dict, memory: dict, info: dict, everyone: Any) -> None:
    """The task's success at this step (`Task.success`) into info["is_success"], for a task
    with a goal; the episode stats take it from there."""
    success = task.success(reading, memory)
    if success is not None:
        info["is_success"], info["_is_success"] = success, everyone


def end_diverged(xp: Any, diverged: Any, obs, reward, terms: dict, truncated, info: dict):
    """Never hand out a diverged state: the envs of `diverged` (a mask, or None where the host
    saw none) end (truncated), their obs and rewards 0, flagged in info."""
    if diverged is not None:
        truncated = truncated | diverged
        reward = xp.where(diverged, 0.0, reward)
        terms = {name: xp.where(diverged, 0.0, term) for name, term in terms.items()}
        obs = xp.where(diverged[:, None], 0.0, obs)
        info["diverged"], info["_diverged"] = diverged, diverged
    return obs, reward, terms, truncated


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
        obs: str = "state",
        pixels: PixelOptions | Mapping[str, Any] | None = None,
        action_repeat: int = 1,
    ):
        """dr: a DR config (mapping or DictConfig, see unienv.dr) or None; seed
        seeds the first reset and the DR streams (startup terms draw from it);
        cuda_graph: replay each step as one CUDA graph (default: where the backend
        allows it, `Capabilities.cuda_graph`); out_of_bounds_actions: what a finite action
        outside the action space does, "clip" (to the space's bounds, what the actuators'
        ctrlrange does to the physics anyway; the reward then sees the clipped action) or
        "raise" (at once on mujoco; on mjwarp and genesis, which read nothing back in a step,
        clipped in the step and raised at the next reset()); render_env_ids: the envs render()
        draws (default every env, one frame each, as Gymnasium's vector RecordVideo expects);
        obs, pixels, action_repeat: camera frames and repeated actions (unienv.env.pixels)."""
        autoreset_mode = checked_autoreset_mode(autoreset_mode)
        max_episode_steps, action_repeat = checked_repeat(action_repeat, max_episode_steps, task)
        check_options(render_mode, cuda_graph, nonfinite_actions, out_of_bounds_actions)
        render_size = checked_render_size(render_size)
        self.render_env_ids = checked_render_env_ids(render_env_ids, backend.num_envs)
        if render_mode is not None:
            check_frame_memory(render_size, len(self.render_env_ids))
        if abs(backend.dt - task.sim_dt) > 1e-12:
            raise ArgumentError(f"backend: its sim_dt {backend.dt} differs from the task's {task.sim_dt}")

        self.task, self.backend = task, backend
        self.num_envs = n = backend.num_envs
        self.device = backend.device
        self.max_episode_steps, self.action_repeat = max_episode_steps, action_repeat
        self.render_mode, self.render_size = render_mode, render_size
        self.nonfinite_actions, self.out_of_bounds_actions = nonfinite_actions, out_of_bounds_actions
        self.single_action_space = task.single_action_space
        self.single_observation_space = task.single_observation_space
        self.action_space = batch_space(self.single_action_space, n)
        self.observation_space = batch_space(self.single_observation_space, n)
        self._observer = observer(obs, pixels, backend, task)
        if self._observer.single_observation_space is not None:  # camera frames
            self.single_observation_space = self._observer.single_observation_space
            self.observation_space = batch_space(self.single_observation_space, n)
        self.metadata = {
            "autoreset_mode": autoreset_mode,
            "render_modes": ["rgb_array"],
            "render_fps": round(1.0 / task.dt),
        }
        caps = backend.get_capabilities()
        path = choose_path(caps, task)
        # checked before the build; DR selects rows as the env does
        self.dr = DomainRandomization(dr, backend, task, seed, rows=path.dr_rows) if dr else None

        require(task, backend)
        backend.materialize()
        task.setup(backend)
        self.dtype = caps.dtype
        self._mocap = caps.mocap and backend.nmocap > 0
        self._random = EnvRandom(n, self.device)
        if seed is not None:
            self._random.seed(checked_seed(seed))
        self._path = path(self, self._random, graph_wanted(caps, cuda_graph))
        if self.dr is not None:
            self.dr.startup()
        # the mode's autoreset, unbound: a bound method kept on self would make every env a
        # reference cycle, freed (with its engine's memory) only by the garbage collector
        self._autoreset = _AUTORESETS[autoreset_mode]
        # the env's own arrays are of the task's namespace (`Task.xp`): NumPy views of torch
        # tensors where the task computes in NumPy (the CPU engine), torch tensors otherwise
        xp = self._xp = self._path.xp
        # steps into each env's current episode; writable, e.g. for random episode starts
        self.episode_length = torch.zeros(n, dtype=torch.int64, device=self.device)
        self._length = self._path.array(self.episode_length)
        self._sums = EpisodeSums(xp, n, task.dtype)  # the return and the task's metrics, per episode
        self._start = xp.zeros(n, xp.float64)  # perf_counter at the episode's start
        self._pending_reset = xp.zeros(n, xp.bool)  # NEXT_STEP
        self._everyone = ~xp.zeros(n, xp.bool)
        self._obs_dtype = getattr(xp, np.dtype(task.single_observation_space.dtype).name)
        self._memory: dict[str, Any] = {}
        self._reading: dict[str, Any] | None = None  # the task's reading behind the last obs
        self._midway = False  # a step is between its first write and its end (an exception left it)
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
        return self._observer.observation(self._path.tensor(self._reset_arrays(seed, options))), {}

    def _reset_arrays(self, seed: int | None, options: dict[str, Any] | None):
        """reset's work; the first observation in the task's namespace (NumPy on the CPU engine
        with a NumPy task), before the observer (the single env's reset)."""
        self._check_open("reset")
        seed = None if seed is None else checked_seed(seed)
        mask = checked_reset_mask(options, self.num_envs)
        if self._midway and mask is not None:
            raise NeedsResetError(
                "reset: an earlier step raised midway; reset every env (no reset_mask) before stepping again"
            )
        self._path.raise_pending()
        if seed is not None:
            self._random.seed(seed)
            if self.dr is not None:
                self.dr.seed(seed)
        self._path.tick()
        # the first reset starts every env, whatever the mask
        mask = (
            self._everyone
            if mask is None or self._reading is None
            else self._path.array(mask.to(self.device))
        )
        obs = self._reset_envs(mask, None)
        self._pending_reset &= ~mask
        self._midway = False
        return obs

    def _reset_envs(self, mask, obs):
        """Start new episodes in the envs of `mask`; returns the observation, `obs`
        (a fresh one if None) with those envs' rows replaced by their first."""
        path, task, xp = self._path, self.task, self._xp
        if obs is not None and not path.any(mask):
            return obs
        selection = path.select(mask)
        if self._reading is not None:  # episodes end: what carries across them (a curriculum)
            task.on_reset(mask, self._reading, self._memory)
        if self.dr is not None:
            self.dr.reset(selection.rows)
        qpos, qvel, memory = task.reset_episode(selection.env_ids, selection.rng)
        if self.dr is not None:
            qpos, qvel = self.dr.reset_state(selection.rows, path.tensor(qpos), path.tensor(qvel))
            qpos, qvel = path.array(qpos), path.array(qvel)
        path.write_state(selection, qpos, qvel)
        self._memory = path.write_memory(selection, self._memory, memory)
        pose = task.mocap_pose(self._memory) if self._mocap else None
        if pose is not None:  # the task's mocap bodies, where the backend moves them per env
            path.write_mocap(selection, pose)
        self._observer.after_reset(mask, self._memory)
        path.clear(self._length, mask, 0)
        path.clear(self._start, mask, path.now())
        self._reading = path.keep(self._reading, task.read(path.reader))
        self._sums.clear(path, mask, task.metrics(self._reading, self._memory))
        fresh = self._finish_obs(task.observe(self._reading, self._memory), selection.rows)
        return fresh if obs is None else xp.where(mask[:, None], fresh, obs)

    def _finish_obs(self, obs, fresh_rows):
        """The task's observation in the space's dtype, with DR noise (fresh for the rows
        given; None: every env)."""
        obs = self._xp.astype(obs, self._obs_dtype)
        if self.dr is None:
            return obs
        return self._path.array(self.dr.observation(self._path.tensor(obs), fresh_rows))

    def observe(self) -> torch.Tensor:
        """The observation of the state the backend holds now (fresh DR noise).

        Call it after writing the backend's state directly (set_state_tensor): the
        next step's reward then differences against that state.
        """
        self._reading = self._path.keep(self._reading, self.task.read(self._path.reader))
        obs = self._finish_obs(self.task.observe(self._reading, self._memory), None)
        return self._observer.observation(self._path.tensor(obs), self._memory)

    def dr_params(self) -> dict[str, torch.Tensor]:
        """Each DR term's current per-env values, (num_envs, E); {} without DR."""
        return {} if self.dr is None else self.dr.params()

    # ---- step: transition, autoreset, observation ---------------------------

    def step(self, actions):
        """Apply actions (num_envs, act_dim); returns obs, reward, terminated, truncated, info.

        A step that raises after it began to write (an exception in the task's or the engine's
        code) leaves the physics, DR timers and episode counters out of step with each other:
        the env then refuses to step (NeedsResetError) until a reset() of every env."""
        return self._observer.outputs(*self._path.run(self._step, self._checked_actions(actions)))

    def _step_arrays(self, actions):
        """step, its outputs in the task's namespace (NumPy on the CPU engine with a NumPy task)."""
        return self._observer.outputs(*self._path.run_arrays(self._step, self._checked_actions(actions)))

    def _checked_actions(self, actions):
        """What every step checks first: the env open and reset, the actions' type and shape."""
        self._check_open("step")
        if self._reading is None:
            raise ArgumentError("step: call reset() before the first step")
        if self._midway:
            raise NeedsResetError("step: an earlier step raised midway; call reset() before stepping again")
        return self._path.as_actions(actions)

    def _check_open(self, call: str) -> None:
        if self.backend.closed:
            raise BackendClosedError(f"{call}: this env is closed")

    def _step(self, actions):
        """The step's work, in the task's namespace: transition, autoreset, outputs."""
        actions, info = self._path.checked_actions(actions)
        obs, reward, terminated, truncated = self._transition(actions, info)
        outputs = self._autoreset(self, obs, reward, terminated, truncated, info)
        self._midway = False
        return outputs

    def _transition(self, actions, info: dict):
        """One env step of physics and the task's outputs, before any reset."""
        path, task, xp, before, memory = self._path, self.task, self._xp, self._reading, self._memory
        self._midway = self.dr is not None  # DR's timers and latency ring move first
        applied = actions if self.dr is None else path.array(self.dr.actions(path.tensor(actions)))
        ctrl = task.control(applied, before, memory)
        outcome = None
        for _ in range(self.action_repeat):  # rewards summed until an env terminates
            # a bad ctrl is refused before it is written; NEXT_STEP's restarts need no physics
            path.physics_step(ctrl, self._pending_reset)
            self._midway = True
            reading = task.read(path.reader)
            now = (*task.reward(reading, before, actions, memory), task.terminated(reading, memory))
            outcome = now if outcome is None else repeated(xp, *outcome, *now)
            self._memory = memory = path.keep(self._memory, task.remember(reading, actions, memory))
            self._reading = before = path.keep(self._reading, reading)
        reward, terms, terminated = outcome
        record_success(task, reading, self._memory, info, self._everyone)
        self._observer.after_step(self._memory)
        self._length += 1
        truncated = self._length >= self.max_episode_steps
        obs = self._finish_obs(task.observe(reading, self._memory), None)
        obs, reward, terms, truncated = end_diverged(xp, path.diverged(), obs, reward, terms, truncated, info)
        self._sums.add(reward, task.metrics(reading, self._memory), ~self._pending_reset, info)
        info["reward_terms"] = terms
        return obs, reward, terminated, truncated

    def _autoreset_same_step(self, obs, reward, terminated, truncated, info):
        """Done envs start anew now; their last obs goes to info["final_obs"]."""
        done = terminated | truncated
        if self._path.any(done):
            info["final_obs"], info["_final_obs"] = obs, done
            info["final_info"], info["_final_info"] = (
                {"episode_stats": self._episode_stats(done, info), "_episode_stats": done},
                done,
            )
            obs = self._reset_envs(done, obs)
        return obs, reward, terminated, truncated, info

    def _autoreset_next_step(self, obs, reward, terminated, truncated, info):
        """Envs that ended last step start anew instead of counting this one (reward 0, not done)."""
        xp, pending = self._xp, self._pending_reset
        if self._path.any(pending):
            obs = self._reset_envs(pending, obs)
            reward = xp.where(pending, 0.0, reward)
            info["reward_terms"] = {k: xp.where(pending, 0.0, v) for k, v in info["reward_terms"].items()}
            terminated, truncated = terminated & ~pending, truncated & ~pending
        done = terminated | truncated
        self._episode_info(done, info)
        self._pending_reset = self._path.keep(self._pending_reset, done)
        return obs, reward, terminated, truncated, info

    def _autoreset_disabled(self, obs, reward, terminated, truncated, info):
        """Nothing resets; the caller does, with reset(options={"reset_mask": ...})."""
        self._episode_info(terminated | truncated, info)
        return obs, reward, terminated, truncated, info

    def _episode_info(self, done, info: dict) -> None:
        """Episode stats of the envs that just ended, in info["episode_stats"] (NEXT_STEP, DISABLED)."""
        if self._path.any(done):
            info["episode_stats"], info["_episode_stats"] = self._episode_stats(done, info), done

    def _episode_stats(self, done, info: dict) -> dict:
        elapsed = self._path.now() - self._start
        goal = info.get("is_success")  # this step's, the episode's last (a task with a goal)
        success = {} if goal is None else {"is_success": done & goal}
        return {**self._sums.stats(done, self._length), "t": self._xp.where(done, elapsed, 0.0)} | success

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
        return tuple(
            self._renderer.render_rows(qpos, *_drawn_marks(self.task, self._memory, self.render_env_ids))
        )

    def close_extras(self, **kwargs: Any) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._observer.close()
        self.backend.close()


def _drawn_marks(task, memory, ids) -> tuple:
    """What the task draws into the rendered envs' frames beside the state: its mocap bodies'
    positions and quaternions, and a ghost pose (None each where it draws none)."""
    if not memory:
        return None, None, None
    pose, ghost = task.mocap_pose(memory), task.ghost_qpos(memory)
    pose = (None, None) if pose is None else tuple(to_numpy(x[ids]) for x in pose)
    return (*pose, None if ghost is None else to_numpy(ghost[ids]))


_AUTORESETS = {
    AutoresetMode.SAME_STEP: UniEnv._autoreset_same_step,
    AutoresetMode.NEXT_STEP: UniEnv._autoreset_next_step,
    AutoresetMode.DISABLED: UniEnv._autoreset_disabled,
}


class EpisodeSums:
    """What each env has summed over its episode so far: its return and each of the task's
    metrics (`Task.metrics`, named by their values at the first reset). A step adds to them and
    puts the metrics' values in info (`_name`: the envs that stepped); the episode stats are the
    return and each metric's mean. In-place arithmetic and masks only: no shape changes, no host
    read, so a captured CUDA graph replays them."""

    def __init__(self, xp, num_envs: int, dtype):
        self.xp, self.dtype = xp, dtype
        self.ret, self.metrics = xp.zeros(num_envs, dtype), {}

    def clear(self, path, mask, metrics: Mapping[str, Any]) -> None:
        """Start anew the sums of the envs of `mask`."""
        for name in metrics.keys() - self.metrics.keys():
            self.metrics[name] = self.xp.zeros(len(self.ret), self.dtype)
        for sums in (self.ret, *self.metrics.values()):
            path.clear(sums, mask, 0.0)

    def add(self, reward, metrics: Mapping[str, Any], stepped, info: dict) -> None:
        self.ret += reward
        for name, value in metrics.items():
            self.metrics[name] += value
            info[name], info[f"_{name}"] = self.xp.where(stepped, value, 0.0), stepped

    def stats(self, done, length) -> dict:
        """{"r": return, "l": length, name: each metric's mean} of the envs `done`, 0 elsewhere."""
        xp, steps = self.xp, self.xp.clip(length, 1, None)
        means = {name: xp.where(done, sums / steps, 0.0) for name, sums in self.metrics.items()}
        return {"r": xp.where(done, self.ret, 0.0), "l": xp.where(done, length, 0), **means}
