"""Policies that ship with unienv, by name, and what a policy file says its env was.

    path = policy_path("go1_trot")            # unienv/policies/go1_trot.safetensors; a path as is
    path, task, options = played_env(spec, task, options, overrides)   # play.py: the policy's own env

The shipped policies (unienv/policies/, listed by `shipped()`) were trained by the documented
commands of docs/laptop.md; each file carries its task, options and deployment contract like any
policy file train.py writes. play.py plays a policy on the env it was trained for: the file's task
and task options, except those the command line sets (Hydra's overrides), so that
`python play.py policy=go1_trot` needs nothing else.
"""

from __future__ import annotations

import os

from unienv.training.policy import load_policy

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "policies")
"""The folder of the policies unienv ships (package data)."""


def shipped() -> list[str]:
    """The names of the shipped policies."""
    if not os.path.isdir(SHIPPED):
        return []
    return sorted(f[: -len(".safetensors")] for f in os.listdir(SHIPPED) if f.endswith(".safetensors"))


def policy_path(spec: str) -> str:
    """spec as a path: a shipped policy's file for its name, else spec itself ("zero", "random" and
    paths pass through; make_policy says what is wrong with one that is neither)."""
    if isinstance(spec, str) and spec in shipped():
        return os.path.join(SHIPPED, f"{spec}.safetensors")
    return spec


def played_env(spec: str, task: str, options: dict, overrides: list[str]) -> tuple[str, str, dict]:
    """(policy path, task, task options) that play.py plays `spec` (a shipped name or a path) on:
    a policy file's own env (`trained_env`), printing the options it takes from the file."""
    path = policy_path(spec)
    if not (str(path).endswith(".safetensors") and os.path.isfile(path)):
        return path, task, options
    task, options, adopted = trained_env(load_policy(path)[1], task, options, overrides)
    if adopted:
        print(f"{task}: from the policy file, " + ", ".join(f"task.{k}={options[k]}" for k in adopted))
    return path, task, options


def trained_env(meta: dict, task: str, options: dict, overrides: list[str]) -> tuple[str, dict, list[str]]:
    """(task, task options, the options taken from the file) to play a policy file on: its own
    task and options, the command line's where it sets them. `overrides`: Hydra's command-line
    overrides ("task=go1_velocity", "task.seed_noise=0.1", ...); where they name another task
    than the policy's, that task stays and the layout check refuses the policy, naming why."""
    keys = [o.lstrip("+~").split("=", 1)[0] for o in overrides]
    if "task" in keys and task != meta["task"]:
        return task, options, []
    given = {k.split(".")[1] for k in keys if k.startswith("task.")}
    kept = {k: v for k, v in options.items() if k in given}
    theirs = {k: v for k, v in meta["task_options"].items() if k not in given}
    adopted = sorted(k for k, v in theirs.items() if task != meta["task"] or options.get(k) != v)
    return meta["task"], {**theirs, **kept}, adopted
