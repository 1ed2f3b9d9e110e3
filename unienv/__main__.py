"""`unienv list` (or `python -m unienv list`): every task, its spaces, and the backends that run it;
`unienv options TASK`: the task's options (`task.<option>=` on the command line), their defaults
and what each means, from the task's options dataclass;
`unienv sim2sim --task T`: each backend against MuJoCo on a task (unienv.tools.sim2sim);
`unienv export policy.safetensors --onnx policy.onnx`: a policy file as ONNX (unienv.training.export);
`unienv deploy check policy.onnx --model M`: the policy's contract against a robot's model (unienv.deploy);
`unienv motion convert clip.csv --robot g1 --fps 30`: a retargeted clip as a motion file (unienv.tools.motion).

A backend runs a task when its capabilities (`get_capabilities()`) include
every feature the task declares in `requires`, and, for a task on generated
terrain (a heightfield in its scene), `height_scan`: a backend that casts rays
onto terrain is one that parses heightfields (Genesis does neither, and refuses
such a scene). No task is built. To read a backend's features it is constructed
once on a small scene, never materialized, and the result is cached (in
$XDG_CACHE_HOME/unienv, keyed by the backend module's path and modification
time), since some engines take tens of seconds to initialize. A backend that
needs a device this machine lacks (mjwarp without CUDA) is probed on the CPU
instead, and the listing says that it runs there with `device=cpu`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import tempfile

import mujoco

from unienv import backends
from unienv.backends.base import load_mjmodel
from unienv.errors import ArgumentError, CapabilityError, install_command
from unienv.robots import RobotNotFoundError
from unienv.tasks import DMC_TASKS, TASKS, gym_id, task_class, task_config
from unienv.tools import cli


def _probe_scene() -> str:
    """A small scene that ships with unienv (cartpole's), to probe a backend's features on."""
    from unienv.tasks import ASSETS

    return os.path.join(ASSETS, "cartpole.xml")


PROBE_LOG = os.path.join(tempfile.gettempdir(), "unienv_list.log")
"""Where the engines' own output goes while `list` probes them."""


def _cache_path() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "unienv", "capabilities.json")


def _probe(name: str) -> dict[str, bool | str]:
    """The boolean features of backend `name`, by constructing it on a small scene on its default
    device, or on the CPU (then `"device": "cpu"` says so) where that device is not here."""
    try:
        backend = backends.create(name, _probe_scene(), 1, 0.01)
        device = None
    except CapabilityError:  # e.g. mjwarp without a CUDA GPU: Warp's CPU device still runs it
        backend = backends.create(name, _probe_scene(), 1, 0.01, device="cpu")
        device = "cpu"
    try:
        caps = backend.get_capabilities()
    finally:
        backend.close()
    found: dict[str, bool | str] = {
        f.name: getattr(caps, f.name) for f in dataclasses.fields(caps) if f.type in (bool, "bool")
    }
    if device:
        found["device"] = device
    return found


def backend_features() -> dict[str, dict[str, bool | str] | str]:
    """Backend name -> its features (name -> bool, and "device": "cpu" where it was probed on the
    CPU because its default device is missing), or a string saying why it is unavailable."""
    try:
        with open(_cache_path()) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    found: dict[str, dict[str, bool | str] | str] = {}
    for name, entry in backends.BACKENDS.items():
        extra = entry.extra
        spec = importlib.util.find_spec(entry.module)
        if spec is None:
            found[name] = "not available in this unienv"
            continue
        key = f"{name}:{spec.origin}:{os.path.getmtime(spec.origin)}:{_has_cuda()}"
        if key in cache:
            found[name] = cache[key]
            continue
        try:
            with cli.engine_output_to(PROBE_LOG):  # engines' banners and warnings, not the table
                found[name] = cache[key] = _probe(name)
        except ModuleNotFoundError as e:
            found[name] = f"not installed ({install_command(extra)})" if extra else f"unavailable: {e}"
        except Exception as e:  # an engine that fails to start here
            found[name] = f"unavailable: {type(e).__name__}: {e}"
    try:
        os.makedirs(os.path.dirname(_cache_path()), exist_ok=True)
        with open(_cache_path(), "w") as f:
            json.dump(cache, f)
    except OSError:
        pass
    return found


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def needs(task, model: mujoco.MjModel) -> tuple[str, ...]:
    """The backend features `task` needs: its `requires`, and `height_scan` (heightfield support)
    where its scene (compiled as `model`) has a heightfield."""
    terrain = (model.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD).any()
    return (*task.requires, "height_scan") if terrain else tuple(task.requires)


def list_tasks(out=sys.stdout) -> None:
    caps = backend_features()
    usable = {name: c for name, c in caps.items() if not isinstance(c, str)}
    rows = [("task", "gym id", "action", "observation", "backends")]
    need_robots = []  # tasks on a Menagerie robot that no place on this machine has
    for name in TASKS:
        try:  # a Menagerie robot's task finds its scene when it is built
            task = task_class(name)()
            model = load_mjmodel(task.scene)
        except RobotNotFoundError:
            need_robots.append(name)
            continue
        required = needs(task, model)
        runs = [
            b + (" (device=cpu)" if c.get("device") == "cpu" else "")
            for b, c in usable.items()
            if all(c.get(f, False) for f in required) and backends.BACKENDS[b].accepts(model, task.scene)
        ]
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
    if need_robots:
        print(
            f"{', '.join(need_robots)}: on MuJoCo Menagerie's robots, available with {install_command('robots')}",
            file=out,
        )
    if not DMC_TASKS.keys() <= TASKS.keys():  # dm-control, which ships their models, is absent
        print(
            f"dmc_*: the {len(DMC_TASKS)} DeepMind Control Suite tasks are available with "
            f"{install_command('dmc')}",
            file=out,
        )
    for name, c in caps.items():
        if isinstance(c, str):
            print(f"{name}: {c}", file=out)
        elif c.get("device") == "cpu":
            print(
                f"{name}: no CUDA GPU here; runs on the CPU with device=cpu "
                f"(e.g. python play.py backend={name} device=cpu), slowly: for tests",
                file=out,
            )


def list_options(name: str, out=None) -> None:
    """The options of task `name`: each as a command-line key, its doc and its default (YAML)."""
    import yaml

    defaults = task_config(name)
    rows = [("option", "meaning", "default")]
    for f in dataclasses.fields(task_class(name).Options):
        default = yaml.safe_dump(defaults[f.name], default_flow_style=True, sort_keys=False, width=1 << 16)
        rows.append((f"task.{f.name}", f.metadata.get("doc", ""), default.removesuffix("...\n").strip()))
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    for r in rows:
        print(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}", file=out or sys.stdout)


def export_policy(policy: str, out: str, check: int) -> None:
    """`unienv export`: write the ONNX file, then (where onnxruntime is installed) compare it with
    the torch policy on `check` observations."""
    from unienv.training import export
    from unienv.training.shipped import policy_path

    policy = policy_path(policy)  # a shipped policy by name (go1_trot), else the path
    if check < 0:
        raise ArgumentError(f"--check: expected a number of observations >= 0, got {check}")
    meta = export.export_onnx(policy, out)
    print(
        f"onnx: {out} ({meta['task']}: obs {tuple(meta['observation']['shape'])} -> actions "
        f"{tuple(meta['action']['shape'])}, opset {export.OPSET}, layout in metadata_props['unienv'])"
    )
    if check == 0:
        return
    if importlib.util.find_spec("onnxruntime") is None:
        print(f"not checked against torch: onnxruntime is not installed ({install_command('onnx')})")
        return
    difference = export.compare(policy, out, export.sample_observations(policy, check))
    print(f"checked: onnxruntime and torch differ by at most {difference:.2e} over {check} observations")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="unienv", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the tasks, their spaces and the backends that run them")
    options = commands.add_parser("options", help="a task's options, their defaults and what they mean")
    options.add_argument("task", help="a task's name, e.g. ant")
    commands.add_parser(
        "sim2sim", help="each backend against MuJoCo on a task (see unienv.tools.sim2sim)", add_help=False
    )
    export = commands.add_parser(
        "export", help="a policy file as ONNX, for deployment (see unienv.training.export)"
    )
    export.add_argument(
        "policy",
        help="a policy file written by train.py or save_policy (.safetensors), or a shipped one's name",
    )
    export.add_argument("--onnx", required=True, metavar="OUT", help="the ONNX file to write")
    export.add_argument(
        "--check",
        type=int,
        default=1000,
        metavar="N",
        help="compare onnxruntime's actions with torch's on N observations (0: skip; needs onnxruntime)",
    )
    commands.add_parser(
        "deploy",
        help="run a policy on plain mujoco, or check it against a robot's model (unienv.deploy)",
        add_help=False,
    )
    commands.add_parser(
        "motion",
        help="motion files for g1_tracking: convert, clip, evaluate (unienv.tools.motion)",
        add_help=False,
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "export":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        export_policy(args.policy, args.onnx, args.check)
    elif args.command == "list":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        list_tasks()
    elif args.command == "options":
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        list_options(args.task)
    elif args.command == "sim2sim":
        from unienv.tools import sim2sim

        sim2sim.main(rest)
    elif args.command == "deploy":
        from unienv.deploy.__main__ import main as deploy

        return deploy(rest)
    elif args.command == "motion":
        from unienv.tools import motion

        return motion.main(rest)
    return 0


def console() -> None:
    """The `unienv` command: main() with cli's one-line errors."""
    cli.run(main)


if __name__ == "__main__":
    console()
