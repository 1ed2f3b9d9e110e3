"""unienv's tasks: one short module each, with its scene under assets/.

TASKS maps the command-line name to "module:Class"; a task's module is
imported only when the task is made.
"""

import importlib
import os

import gymnasium

from unienv.errors import CapabilityError, unknown_name

GYM_ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
"""Where Gymnasium keeps the MJCF models of its MuJoCo environments."""

TASKS = {
    "cartpole": "unienv.tasks.cartpole:Cartpole",
    "ant": "unienv.tasks.ant:Ant",
    "inverted_pendulum": "unienv.tasks.inverted_pendulum:InvertedPendulum",
    "inverted_double_pendulum": "unienv.tasks.inverted_double_pendulum:InvertedDoublePendulum",
    "reacher": "unienv.tasks.reacher:Reacher",
    "half_cheetah": "unienv.tasks.half_cheetah:HalfCheetah",
    "hopper": "unienv.tasks.hopper:Hopper",
    "walker2d": "unienv.tasks.walker2d:Walker2d",
    "humanoid": "unienv.tasks.humanoid:Humanoid",
    "quadruped": "unienv.tasks.quadruped:Quadruped",
    "quadruped_rough": "unienv.tasks.quadruped_rough:QuadrupedRough",
    "reach": "unienv.tasks.reach:Reach",
}


def task_class(name: str):
    """The Task class registered under `name` (lower-case, e.g. "ant")."""
    if name not in TASKS:
        raise unknown_name("task", name, TASKS)
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def require(task, backend) -> None:
    """Raise CapabilityError unless `backend` declares every feature in `task.requires`.

    UniEnv calls it before task.setup(), so a task fails at construction on a
    backend that lacks what it needs, never later in a step.
    """
    caps = backend.get_capabilities()
    missing = [f for f in task.requires if not getattr(caps, f)]
    if missing:
        raise CapabilityError(
            f"task {task.name!r} needs {', '.join(missing)}, which the {caps.backend} backend does not support"
        )


def gym_id(name: str) -> str:
    """The Gymnasium id of a task: "cartpole" -> "unienv/Cartpole-v0"."""
    return "unienv/" + "".join(part.capitalize() for part in name.split("_")) + "-v0"
