"""Constructors: `unienv.make(task, backend, ...)` and the Gymnasium registrations."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium.vector import AutoresetMode

from unienv import backends
from unienv import dr as domain_randomization
from unienv.env import SingleEnv, UniEnv
from unienv.env.pixels import checked_obs
from unienv.errors import unknown_name
from unienv.render.cameras import require_renderer
from unienv.tasks import DMC_TASKS, TASKS, checked_options, gym_id, task_class

DRQV2_ACTION_REPEAT = 2  # DrQ-v2's action repeat, make's default where obs has pixels


def make(
    task: str,
    backend: str = "mujoco",
    num_envs: int = 1,
    device: str | None = None,
    seed: int | None = None,
    dr: str | Mapping[str, Any] | None = None,
    autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
    task_options: Mapping[str, Any] | None = None,
    backend_options: Mapping[str, Any] | None = None,
    obs: str = "state",
    **env_options: Any,
) -> UniEnv:
    """A vector env of `task` on `backend`; `seed` seeds the first reset.

    task_options go to the task's constructor (e.g. {"swingup": True}),
    backend_options to the backend's (e.g. {"nthread": 2}), env_options to
    UniEnv (max_episode_steps, render_mode, render_env_ids, nonfinite_actions).
    dr is a domain-randomization config: a preset's name ("none", "default",
    "strong": cfg/dr/<name>.yaml, as Hydra's dr=<name>), a mapping or an OmegaConf
    DictConfig (e.g. Hydra's cfg.dr); see unienv.dr. It is checked before the backend is built.
    obs="pixels" (or "pixels+state") observes camera frames at DrQ-v2's settings (84 x 84,
    camera 0, 3 frames, action_repeat=2), each an option: pixels={"width": 64, "frame_stack": 4},
    action_repeat=1 (see unienv.env.pixels).
    """
    check_keywords(env_options)
    if checked_obs(obs) != "state":
        if backend in backends.BACKENDS:  # refused before it is built (a misspelling: create names it)
            require_renderer(backend)
        env_options.setdefault("action_repeat", DRQV2_ACTION_REPEAT)
    dr_terms = domain_randomization.parse(dr)
    the_task = task_class(task)(**checked_options(task, dict(task_options or {})))
    options = dict(backend_options or {})
    if dr_terms:  # the backend must know which parameters will vary per env
        randomize = (*options.pop("randomize", ()), *domain_randomization.backend_params(dr_terms))
        options["randomize"] = tuple(dict.fromkeys(randomize))
    if the_task.substep_reads:  # the backend must know which reads skip the forward at the state
        options["substep_reads"] = the_task.substep_reads
    sim = backends.create(backend, the_task.scene, num_envs, the_task.sim_dt, device=device, **options)
    try:
        return UniEnv(
            the_task, sim, autoreset_mode=autoreset_mode, dr=dr_terms, seed=seed, obs=obs, **env_options
        )
    except BaseException:  # a refused env option or DR term: the engine built for it is released
        sim.close()
        raise


def check_keywords(env_options: Mapping[str, Any]) -> None:
    """Refuse a keyword that neither make nor UniEnv takes, with the closest valid ones."""
    ours = [p for p in inspect.signature(make).parameters if p not in ("task", "env_options")]
    theirs = [
        p for p in inspect.signature(UniEnv.__init__).parameters if p not in ("self", "task", "backend")
    ]
    for key in env_options:
        if key not in theirs:
            raise unknown_name("keyword argument of unienv.make", key, dict.fromkeys([*ours, *theirs]))


def make_vector(task: str, num_envs: int = 1, max_episode_steps: int | None = None, **kwargs: Any) -> UniEnv:
    """Gymnasium's vector_entry_point: `gymnasium.make_vec("unienv/Ant-v0", num_envs=64)`."""
    kwargs.pop("render_mode", None) if kwargs.get("render_mode") is None else None
    return make(task, num_envs=num_envs, max_episode_steps=max_episode_steps, **kwargs)


def make_single(task: str, **kwargs: Any) -> SingleEnv:
    """Gymnasium's entry_point: one env with NumPy outputs (`gymnasium.make("unienv/Ant-v0")`)."""
    return SingleEnv(make(task, num_envs=1, autoreset_mode=AutoresetMode.DISABLED, **kwargs))


def register_envs() -> None:
    """Register every task as unienv/<Task>-v0 (idempotent), with the spec fields of its
    default options: max_episode_steps and reward_threshold (those of v5 on the parity tasks);
    each DeepMind Control Suite task also as unienv/DMC-<Task>-pixels-v0, from pixels."""
    for name in TASKS:
        env_id, task = gym_id(name), task_class(name)  # the class: building a robot task takes seconds
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point="unienv.make:make_single",
                vector_entry_point="unienv.make:make_vector",
                # max_episode_steps=None in kwargs: make_vec then leaves the episode length to the
                # task (its options may change it) instead of passing the spec's
                kwargs={"task": name, "max_episode_steps": None},
                max_episode_steps=task.default_max_episode_steps(),
                reward_threshold=task.reward_threshold,
                disable_env_checker=True,
            )
        pixels_id = env_id.removesuffix("-v0") + "-pixels-v0"
        if name in DMC_TASKS and pixels_id not in gym.registry:  # DrQ-v2's setting of the task
            gym.register(
                id=pixels_id,
                entry_point="unienv.make:make_single",
                vector_entry_point="unienv.make:make_vector",
                kwargs={"task": name, "max_episode_steps": None, "obs": "pixels"},
                max_episode_steps=-(-task.default_max_episode_steps() // DRQV2_ACTION_REPEAT),
                disable_env_checker=True,
            )
