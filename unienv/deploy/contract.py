"""The deployment contract: what a policy file says of its robot, timing, actions and observation.

    contract = contract_of(env)                 # a dict of JSON values, or None
    differences_from_env(meta, env)             # play.py: the first line names what differs
    model_path("unitree_go1")                   # --model: an MJCF path or a Menagerie name

A policy file's contract against a robot model (`python -m unienv deploy check`) is
unienv.deploy.check's, which reads the file with training's loaders.

Most of it comes from the task: its declarations (`Task.deployment()`: each observation block
as a quantity with its frame, offset and scale; the commands; the action's scale and default
pose keyframe), its timing (`sim_dt`, `decimation`), its `root_body` and `observation_blocks()`.
The robot's part (names in action order, gains, limits, masses, the hash) comes from the task's
scene compiled by MuJoCo, through `unienv.deploy.runner.robot_facts`, the same function that the
standalone runner and the check apply to a robot team's model, so that both sides agree by
construction. The schema is on docs/deployment.md. A task that declares nothing has no contract.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from unienv import robots
from unienv.backends.scene import load_mjmodel
from unienv.deploy import runner
from unienv.errors import ArgumentError, UnienvError


def contract_of(env) -> dict[str, Any] | None:
    """The contract of a policy for `env` (a unienv VectorEnv or a wrapper of one), or None."""
    task = env.unwrapped.task
    declared = task.deployment()
    if declared is None:
        return None
    model = load_mjmodel(task.scene, task.sim_dt)
    robot = runner.robot_facts(model, task.root_body)
    keyframe = declared["action"]["default_pose"]
    qpos = _keyframe(model, keyframe)
    ids = [model.joint(name).id for name in robot["joints"]]
    default = {name: float(qpos[model.jnt_qposadr[j]]) for name, j in zip(robot["joints"], ids, strict=True)}
    scale = declared["action"]["scale"]
    blocks = []
    for name, width in task.observation_blocks().items():
        definition = declared["observation"].get(name, {"quantity": name})
        entry = {"name": name, "width": width, "history": 1, "scale": 1.0, **definition}
        entry["scale"] = runner._g(entry["scale"]) if np.ndim(entry["scale"]) else float(entry["scale"])
        blocks.append(entry)
    return {
        "schema": runner.SCHEMA,
        "task": task.name,
        "robot": robot,
        "default_pose": default,
        "default_pose_keyframe": keyframe,
        "action": {
            "type": declared["action"]["type"],
            "scale": runner._g(np.broadcast_to(np.asarray(scale, dtype=np.float64), (len(ids),))),
            "offset": [default[n] for n in robot["joints"]],
        },
        "control": {"sim_dt": task.sim_dt, "decimation": task.decimation, "period": task.dt},
        "observation": blocks,
        "quaternion": "wxyz",
        "commands": [{"name": n, "low": lo, "high": hi} for n, (lo, hi) in declared["commands"].items()],
    }


def _keyframe(model, name: str) -> np.ndarray:
    for k in range(model.nkey):
        if model.key(k).name == name:
            return model.key_qpos[k]
    raise ArgumentError(f"deployment: the scene has no keyframe {name!r} (the task's default pose)")


def differences_from_env(meta: dict, env) -> list[str]:
    """How a policy's recorded contract differs from the one `env` gives, one line each (empty
    when either has none: an older file, or a task that declares nothing)."""
    theirs, ours = meta.get("contract"), contract_of(env)
    if theirs is None or ours is None:
        return []
    return [line.replace("{other}", "this env") for line in runner.differences(theirs, ours)]


def model_path(spec: str) -> str:
    """`--model`: an MJCF file as given, or a Menagerie robot found by `unienv.robots` (installed
    asset packages included): `unitree_go1` (its scene.xml) or `unitree_g1/scene_mjx.xml`."""
    if os.path.isfile(spec):
        return spec
    if os.path.isdir(spec):  # a model folder: its scene is a file in it, named as a path
        scene = os.path.join(spec, "scene.xml")
        hint = f" (its scene: {scene})" if os.path.isfile(scene) else ""
        raise ArgumentError(f"--model: {spec} is a folder; expected an MJCF file or a Menagerie name{hint}")
    if os.path.isabs(spec) or spec.startswith(("./", "../")):  # a path, never a Menagerie name
        raise ArgumentError(f"--model: file not found: {spec!r}")
    name, _, file = spec.partition("/")
    try:
        return robots.model_file(name, file or "scene.xml")
    except UnienvError as e:
        raise ArgumentError(f"--model: no MJCF file {spec!r}, nor a Menagerie model: {e}") from None
