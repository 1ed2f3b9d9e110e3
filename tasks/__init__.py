"""unienv's tasks: one short module each, with its scene under assets/.

TASKS maps the command-line name to "module:Class"; a task's module is
imported only when the task is made.
"""

import importlib

from unienv.errors import unknown_name

TASKS = {
    "cartpole": "unienv.tasks.cartpole:Cartpole",
    "ant": "unienv.tasks.ant:Ant",
}


def task_class(name: str):
    """The Task class registered under `name` (lower-case, e.g. "ant")."""
    if name not in TASKS:
        raise unknown_name("task", name, TASKS)
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def gym_id(name: str) -> str:
    """The Gymnasium id of a task: "cartpole" -> "unienv/Cartpole-v0"."""
    return "unienv/" + "".join(part.capitalize() for part in name.split("_")) + "-v0"
