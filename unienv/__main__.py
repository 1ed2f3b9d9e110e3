"""`unienv list` (or `python -m unienv list`): every task, its spaces, and the backends that run it;
`unienv sim2sim --task T`: each backend against MuJoCo on a task (unienv.sim2sim).

A backend runs a task when its capabilities (`get_capabilities()`) include
every feature the task declares in `requires`; no task is built. To read a
backend's features it is constructed once on a small scene, never
materialized, and the result is cached (in $XDG_CACHE_HOME/unienv, keyed by
the backend module's path and modification time), since some engines take
tens of seconds to initialize.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys

from unienv import backends, cli
from unienv.errors import install_command
from unienv.tasks import TASKS, gym_id, task_class


def _probe_scene() -> str:
    from unienv.tasks import cartpole

    return cartpole.SCENE


def _cache_path() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "unienv", "capabilities.json")


def _probe(name: str) -> dict[str, bool]:
    """The boolean features of backend `name`, by constructing it on a small scene."""
    backend = backends.create(name, _probe_scene(), 1, 0.01)
    try:
        caps = backend.get_capabilities()
    finally:
        backend.close()
    return {f.name: getattr(caps, f.name) for f in dataclasses.fields(caps) if f.type in (bool, "bool")}


def backend_features() -> dict[str, dict[str, bool] | str]:
    """Backend name -> its features (name -> bool), or a string saying why it is unavailable."""
    try:
        with open(_cache_path()) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    found: dict[str, dict[str, bool] | str] = {}
    for name, entry in backends.BACKENDS.items():
        extra = entry.extra
        spec = importlib.util.find_spec(entry.module)
        if spec is None:
            found[name] = "not available in this unienv"
            continue
        key = f"{name}:{spec.origin}:{os.path.getmtime(spec.origin)}"
        if key in cache:
            found[name] = cache[key]
            continue
        try:
            found[name] = cache[key] = _probe(name)
        except ModuleNotFoundError as e:
            found[name] = f"not installed ({install_command(extra)})" if extra else f"unavailable: {e}"
        except Exception as e:  # e.g. no CUDA device
            found[name] = f"unavailable: {type(e).__name__}: {e}"
    try:
        os.makedirs(os.path.dirname(_cache_path()), exist_ok=True)
        with open(_cache_path(), "w") as f:
            json.dump(cache, f)
    except OSError:
        pass
    return found


def list_tasks(out=sys.stdout) -> None:
    caps = backend_features()
    usable = {name: c for name, c in caps.items() if not isinstance(c, str)}
    rows = [("task", "gym id", "action", "observation", "backends")]
    for name in TASKS:
        task = task_class(name)()
        needs = task.requires
        runs = [b for b, c in usable.items() if all(c.get(f, False) for f in needs)]
        rows.append(
            (
                name,
                gym_id(name),
                str(task.single_action_space.shape),
                str(task.single_observation_space.shape),
                ", ".join(runs) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip(), file=out)
    for name, c in caps.items():
        if isinstance(c, str):
            print(f"{name}: {c}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="unienv", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the tasks, their spaces and the backends that run them")
    commands.add_parser(
        "sim2sim", help="each backend against MuJoCo on a task (see unienv.sim2sim)", add_help=False
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "list":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        list_tasks()
    elif args.command == "sim2sim":
        from unienv import sim2sim

        sim2sim.main(rest)
    return 0


def console() -> None:
    """The `unienv` command: main() with cli's one-line errors."""
    cli.run(main)


if __name__ == "__main__":
    console()
