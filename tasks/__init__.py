"""unienv's tasks, grouped by family: gym/ (Gymnasium's suite), dmc/ (the DeepMind Control
Suite), velocity/ (legged velocity: one task, a spec per robot), manipulation/ and tracking/; the
scenes that ship with unienv are in assets/.

TASKS maps the command-line name to "module:Class", or for a legged velocity task to the robot
spec that the velocity task is bound to (`velocity("h1")`). A task's options are its
`Options` dataclass (unienv.task): `option_defaults` and `checked_options` read
it, and `store_configs` makes Hydra's `task` config group from it, so that each
option is written once, in the task's module.
"""

import dataclasses
import importlib
import importlib.util
import math
import os
from collections.abc import Mapping
from typing import Any, NamedTuple

import gymnasium

from unienv.errors import ArgumentError, CapabilityError, install_command, unknown_name

GYM_ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
"""Where Gymnasium keeps the MJCF models of its MuJoCo environments."""


class Velocity(NamedTuple):
    """A registry entry that binds the legged velocity task (velocity/task.py) to a robot spec:
    the spec at "module:ATTRIBUTE" (velocity/robots/), on generated terrain by default where
    `rough` (the *_rough ids)."""

    robot: str
    rough: bool = False


def velocity(robot: str, rough: bool = False) -> Velocity:
    """The entry of the velocity task of velocity/robots/<robot>.py's spec, <ROBOT>."""
    return Velocity(f"unienv.tasks.velocity.robots.{robot}:{robot.upper()}", rough)


ASSETS = os.path.join(os.path.dirname(__file__), "assets")
"""The scenes that ship with unienv (cartpole, the quadruped, the reach arm)."""

TASKS: dict[str, str | Velocity] = {
    # Gymnasium's suite (gym/)
    "cartpole": "unienv.tasks.gym.cartpole:Cartpole",
    "inverted_pendulum": "unienv.tasks.gym.inverted_pendulum:InvertedPendulum",
    "inverted_double_pendulum": "unienv.tasks.gym.inverted_double_pendulum:InvertedDoublePendulum",
    "reacher": "unienv.tasks.gym.reacher:Reacher",
    "half_cheetah": "unienv.tasks.gym.half_cheetah:HalfCheetah",
    "hopper": "unienv.tasks.gym.hopper:Hopper",
    "walker2d": "unienv.tasks.gym.walker2d:Walker2d",
    "ant": "unienv.tasks.gym.ant:Ant",
    "humanoid": "unienv.tasks.gym.humanoid:Humanoid",
    # legged velocity (velocity/): one task, a spec per robot in velocity/robots/
    "quadruped": velocity("quadruped"),
    "quadruped_rough": velocity("quadruped", rough=True),
    "go1_velocity": velocity("go1"),
    "go1_velocity_rough": velocity("go1", rough=True),
    "g1_velocity": velocity("g1"),
    "g1_velocity_rough": velocity("g1", rough=True),
    "h1_velocity": velocity("h1"),
    "barkour_velocity": velocity("barkour"),
    # manipulation (manipulation/)
    "reach": "unienv.tasks.manipulation.reach:Reach",
    "panda_lift": "unienv.tasks.manipulation.panda_lift:PandaLift",
    "panda_place": "unienv.tasks.manipulation.panda_place:PandaPlace",
    "leap_cube_rotate": "unienv.tasks.manipulation.leap_cube_rotate:LeapCubeRotate",
    # motion tracking (tracking/)
    "g1_tracking": "unienv.tasks.tracking.g1_tracking:G1Tracking",
}


# the DeepMind Control Suite (docs/dmc.md), offered where the dm-control package that ships
# its models is installed (the dmc extra)
DMC_TASKS = {
    "dmc_acrobot_swingup": "unienv.tasks.dmc.acrobot:AcrobotSwingup",
    "dmc_acrobot_swingup_sparse": "unienv.tasks.dmc.acrobot:AcrobotSwingupSparse",
    "dmc_ball_in_cup_catch": "unienv.tasks.dmc.ball_in_cup:BallInCupCatch",
    "dmc_cartpole_balance": "unienv.tasks.dmc.cartpole:CartpoleBalance",
    "dmc_cartpole_balance_sparse": "unienv.tasks.dmc.cartpole:CartpoleBalanceSparse",
    "dmc_cartpole_swingup": "unienv.tasks.dmc.cartpole:CartpoleSwingup",
    "dmc_cartpole_swingup_sparse": "unienv.tasks.dmc.cartpole:CartpoleSwingupSparse",
    "dmc_cheetah_run": "unienv.tasks.dmc.cheetah:CheetahRun",
    "dmc_finger_spin": "unienv.tasks.dmc.finger:FingerSpin",
    "dmc_finger_turn_easy": "unienv.tasks.dmc.finger:FingerTurnEasy",
    "dmc_finger_turn_hard": "unienv.tasks.dmc.finger:FingerTurnHard",
    "dmc_fish_swim": "unienv.tasks.dmc.fish:FishSwim",
    "dmc_hopper_stand": "unienv.tasks.dmc.hopper:HopperStand",
    "dmc_hopper_hop": "unienv.tasks.dmc.hopper:HopperHop",
    "dmc_humanoid_stand": "unienv.tasks.dmc.humanoid:HumanoidStand",
    "dmc_humanoid_walk": "unienv.tasks.dmc.humanoid:HumanoidWalk",
    "dmc_humanoid_run": "unienv.tasks.dmc.humanoid:HumanoidRun",
    "dmc_pendulum_swingup": "unienv.tasks.dmc.pendulum:PendulumSwingup",
    "dmc_point_mass_easy": "unienv.tasks.dmc.point_mass:PointMassEasy",
    "dmc_reacher_easy": "unienv.tasks.dmc.reacher:ReacherEasy",
    "dmc_reacher_hard": "unienv.tasks.dmc.reacher:ReacherHard",
    "dmc_swimmer_swimmer6": "unienv.tasks.dmc.swimmer:SwimmerSwimmer6",
    "dmc_walker_stand": "unienv.tasks.dmc.walker:WalkerStand",
    "dmc_walker_walk": "unienv.tasks.dmc.walker:WalkerWalk",
    "dmc_walker_run": "unienv.tasks.dmc.walker:WalkerRun",
}
if importlib.util.find_spec("dm_control") is not None:
    TASKS |= DMC_TASKS


def task_class(name: str):
    """The Task class registered under `name` (lower-case, e.g. "ant"); a velocity entry's is
    the velocity task bound to its robot (`unienv.tasks.velocity.task.bind`). A DMC task without
    the dmc extra is refused with the command that installs it, not as a misspelling."""
    if name in DMC_TASKS and name not in TASKS:
        raise ModuleNotFoundError(
            f"task {name!r} is a DeepMind Control Suite task, whose models the 'dm_control' package "
            f"ships; install it with: {install_command('dmc')}",
            name="dm_control",
        )
    if name not in TASKS:
        raise unknown_name("task", name, TASKS)
    entry = TASKS[name]
    if isinstance(entry, Velocity):
        return importlib.import_module("unienv.tasks.velocity.task").bind(name, *entry)
    module, cls = entry.split(":")
    return getattr(importlib.import_module(module), cls)


# task options that must be physically meaningful beyond being finite numbers
POSITIVE_OPTIONS = {"episode_length_s", "max_angle", "rail", "action_scale", "base_height_target", "max_tilt"}
POSITIVE_OPTIONS |= {"precision_scale", "contact_cost_max"}
POSITIVE_OPTIONS |= {"max_anchor_height_error", "max_anchor_gravity_error", "max_end_effector_height_error"}
POSITIVE_OPTIONS |= {"success_tolerance", "reach_scale", "grasp_distance", "damping", "rotation_gain"}
POSITIVE_OPTIONS |= {"max_distance", "adaptive_alpha", "place_scale", "lifted_height"}
POSITIVE_OPTIONS |= {"tracking_sigma", "yaw_sigma", "swing_height"}
NONNEGATIVE_OPTIONS = {"reset_noise_scale", "adaptive_uniform", "gait_frequency"}


def constructor_options(cls: type) -> dict[str, Any]:
    """A task class's options (the fields of its `Options` dataclass) and their defaults,
    in the dataclass's order (quadruped_rough's extends the quadruped's)."""
    return {
        f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
        for f in dataclasses.fields(cls.Options)
    }


def option_defaults(name: str) -> dict[str, Any]:
    """The task's options and their defaults."""
    return constructor_options(task_class(name))


def checked_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The task's constructor options, each checked against its default's kind: a known name
    (or "did you mean"), a bool for a bool, a finite number for a number (> 0 for a length,
    angle, time or scale, >= 0 for a noise scale), an ordered pair lo < hi for a *_range.
    Options whose default is None or a nested structure are the task's own to check."""
    params = option_defaults(name)
    checked = {}
    for key, value in options.items():
        if key not in params:
            raise unknown_name(f"option of task {name!r}", key, params)
        where, default = f"task.{key}", params[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ArgumentError(f"{where}: expected true or false, got {value!r}")
        elif isinstance(default, (int, float)):
            low = 0 if key in NONNEGATIVE_OPTIONS else None
            if not _is_number(value) or not math.isfinite(value) or (low is not None and value < low):
                raise ArgumentError(
                    f"{where}: expected a finite number{' >= 0' if low == 0 else ''}, got {value!r}"
                )
            if key in POSITIVE_OPTIONS and value <= 0:
                raise ArgumentError(f"{where}: expected a finite number > 0, got {value!r}")
        elif key.endswith("_range") and isinstance(default, tuple):
            pair = list(value) if isinstance(value, (list, tuple)) else None
            if not pair or len(pair) != 2 or not all(map(_is_number, pair)) or not pair[0] < pair[1]:
                raise ArgumentError(f"{where}: expected [lo, hi] with lo < hi, got {value!r}")
        checked[key] = value
    return checked


def _is_number(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float))


CFG_TASK = os.path.join(os.path.dirname(os.path.dirname(__file__)), "cfg", "task")
"""cfg/task/: presets (a YAML file per task that needs more than its options' defaults)."""


def task_config(name: str) -> dict[str, Any]:
    """The task's Hydra config as generated: its name and its options' defaults, as plain
    YAML values (lists for tuples)."""
    return {"name": name, **_plain(option_defaults(name))}


def store_configs() -> None:
    """Put Hydra's `task` config group into its ConfigStore (idempotent; `import unienv` does it):
    `task_options/<name>`, every task's config from its options dataclass, and `task/<name>`,
    the same for each task without a preset in cfg/task/; a preset (quadruped_rough.yaml)
    composes `/task_options/<name>@_here_` and adds only what the dataclass does not say.
    Plain dict nodes: Hydra does not type-check them, `checked_options` does."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for name in TASKS:
        node = task_config(name)
        store.store(group="task_options", name=name, node=node)
        if not os.path.exists(os.path.join(CFG_TASK, f"{name}.yaml")):
            store.store(group="task", name=name, node=node)


def _plain(value: Any) -> Any:
    """value with tuples as lists, nested ones included (what OmegaConf holds)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


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
    """The Gymnasium id of a task: "cartpole" -> "unienv/Cartpole-v0"; a DeepMind Control Suite
    task "dmc_walker_walk" -> "unienv/DMC-WalkerWalk-v0"."""
    if name.startswith("dmc_"):
        return "unienv/DMC-" + "".join(part.capitalize() for part in name[4:].split("_")) + "-v0"
    return "unienv/" + "".join(part.capitalize() for part in name.split("_")) + "-v0"
