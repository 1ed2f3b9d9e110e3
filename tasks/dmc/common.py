"""What the DeepMind Control Suite tasks (tasks/dmc/) share: their models, dm_control's
`tolerance` reward shaping, its reset of joints, and a small base class.

Model: each task is one of dm_control's `suite.load(domain, task)` environments, rewritten
against unienv's Task contract. It simulates the domain's own MJCF from the installed
`dm-control` package (its `suite/` folder; only the files are read, dm_control's engine
wrapper is never imported), with dm_control's physics timestep (`sim_dt`), its control
timestep as `decimation` substeps and its time limit as the episode length (1000 steps for
every task here). Observations are dm_control's observation dict flattened in its key order
(`observation_blocks` names the keys and their widths), in float64; rewards are dm_control's,
in [0, 1]; no task terminates, every episode is truncated at its time limit.

Invariants:
- Quantities are read the way dm_control reads them and at the state the backend returns:
  body orientations are the rows of `xmat` (computed here from the body quaternions as
  `mju_quat2Mat` does), positions `xpos`, `xipos` and `site_xpos` (a geom's from its body's
  pose and its constant offset), sensors `sensordata`.
  Acceleration-stage sensors (touch) are read where dm_control's legacy step leaves them,
  as its last substep computed them (`substep_reads = ("sensors",)` in hopper and finger);
  its closing `mj_step1` puts positions, velocities and the other sensors at the state.
- The action is the actuators' input (`ctrl`), in [-1, 1] as every suite model's ctrlrange.
- Random initial states and targets come from unienv's per-env streams, drawn by the
  same rules as dm_control's (not its numbers). A target that dm_control places by editing
  the model (reacher, finger turn, fish, swimmer) lives in the env's memory instead, so every env
  has its own; the scene's marker stays where the MJCF puts it, and camera images draw each
  env's where its memory has it (`scene_marks`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import math
import os
from typing import Any
from xml.etree import ElementTree

import numpy as np

from unienv.errors import ArgumentError
from unienv.task import Task, TaskOptions, option
from unienv.tasks.common import rotation_matrix

DEFAULT_VALUE_AT_MARGIN = 0.1  # dm_control.utils.rewards' default
SIGMOIDS = (
    "gaussian",
    "hyperbolic",
    "long_tail",
    "reciprocal",
    "cosine",
    "linear",
    "quadratic",
    "tanh_squared",
)
# xmat's row-major entries by dm_control's names: xx = R[0, 0], xz = R[0, 2], zz = R[2, 2]
XMAT = {a + b: 3 * "xyz".index(a) + "xyz".index(b) for a in "xyz" for b in "xyz"}


def suite_dir() -> str | None:
    """The installed dm_control's `suite/` folder (found without importing dm_control), or None."""
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "suite")


def suite_xml(domain: str) -> str:
    """Path of dm_control's MJCF model of `domain`; ModuleNotFoundError if dm-control is absent."""
    folder = suite_dir()
    if folder is None:
        raise ModuleNotFoundError(
            f"the DeepMind Control Suite task needs the {domain}.xml model of the dm-control package: "
            "pip install 'unienv[dmc]'"
        )
    return os.path.join(folder, f"{domain}.xml")


def derived_scene(domain: str, variant: str, edit) -> str:
    """Path of a model that dm_control builds from `domain`.xml in code (swimmer's links) or
    edits once for a task (finger spin's damping): `edit(root)` changes the parsed MJCF
    (xml.etree) in place; the result is written, once per content, to unienv's cache folder
    (UNIENV_CACHE, default ~/.cache/unienv) with its includes pointing at the suite's files."""
    source = suite_xml(domain)
    root = ElementTree.parse(source).getroot()
    for include in root.iter("include"):
        include.set("file", os.path.join(os.path.dirname(source), include.get("file")))
    edit(root)
    text = ElementTree.tostring(root, encoding="unicode")
    folder = os.path.join(os.environ.get("UNIENV_CACHE", os.path.expanduser("~/.cache/unienv")), "dmc")
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = os.path.join(folder, f"{domain}_{variant}_{digest}.xml")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "w") as f:
            f.write(text)
        os.replace(partial, path)  # atomic: a concurrent reader sees all of it or nothing
    return path


def _sigmoid(xp, x, value_at_1: float, sigmoid: str):
    """dm_control's `_sigmoids`: 1 at x = 0, value_at_1 at |x| = 1, in (0, 1] elsewhere
    (0 beyond |x| = 1 for the cosine, linear and quadratic ones)."""
    if sigmoid == "gaussian":
        scale = math.sqrt(-2.0 * math.log(value_at_1))
        return xp.exp(-0.5 * (x * scale) ** 2)
    if sigmoid == "hyperbolic":
        y = x * math.acosh(1.0 / value_at_1)
        return 2.0 / (xp.exp(y) + xp.exp(-y))  # 1 / cosh(y)
    if sigmoid == "long_tail":
        return 1.0 / ((x * math.sqrt(1.0 / value_at_1 - 1.0)) ** 2 + 1.0)
    if sigmoid == "reciprocal":
        return 1.0 / (xp.abs(x) * (1.0 / value_at_1 - 1.0) + 1.0)
    if sigmoid == "tanh_squared":
        return 1.0 - xp.tanh(x * math.atanh(math.sqrt(1.0 - value_at_1))) ** 2
    if sigmoid == "cosine":
        scaled = x * (math.acos(2.0 * value_at_1 - 1.0) / math.pi)
        return xp.where(xp.abs(scaled) < 1.0, (1.0 + xp.cos(math.pi * scaled)) / 2.0, xp.zeros_like(scaled))
    if sigmoid == "linear":
        scaled = x * (1.0 - value_at_1)
        return xp.where(xp.abs(scaled) < 1.0, 1.0 - scaled, xp.zeros_like(scaled))
    scaled = x * math.sqrt(1.0 - value_at_1)  # quadratic
    return xp.where(xp.abs(scaled) < 1.0, 1.0 - scaled * scaled, xp.zeros_like(scaled))


def tolerance(
    xp,
    x,
    bounds: tuple[float, float] = (0.0, 0.0),
    margin: float = 0.0,
    sigmoid: str = "gaussian",
    value_at_margin: float = DEFAULT_VALUE_AT_MARGIN,
):
    """dm_control's reward shaping: 1 where lower <= x <= upper; outside, with d the distance
    to the nearest bound, sigmoid(d / margin) falling to value_at_margin at d = margin (0 if
    margin is 0). Elementwise over an array x of namespace xp."""
    lower, upper = bounds
    if lower > upper:
        raise ValueError(f"bounds: expected lower <= upper, got {bounds!r}")
    if margin < 0:
        raise ValueError(f"margin: expected a number >= 0, got {margin!r}")
    if sigmoid not in SIGMOIDS:
        raise ValueError(f"sigmoid: expected one of {', '.join(SIGMOIDS)}, got {sigmoid!r}")
    low_ok = (
        0 <= value_at_margin < 1 if sigmoid in ("cosine", "linear", "quadratic") else 0 < value_at_margin < 1
    )
    if not low_ok:
        raise ValueError(
            f"value_at_margin: expected a number in [0, 1) or (0, 1) for {sigmoid}, got {value_at_margin!r}"
        )
    in_bounds = (x >= lower) & (x <= upper)
    zero = xp.zeros_like(x)
    one = zero + 1.0
    if margin == 0:
        return xp.where(in_bounds, one, zero)
    d = xp.where(x < lower, lower - x, x - upper) / margin
    return xp.where(in_bounds, one, _sigmoid(xp, d, value_at_margin, sigmoid))


@dataclasses.dataclass
class DMCOptions(TaskOptions):
    episode_length_s: float | None = option(None, "s: an episode is truncated after it (null: dm_control's)")


class DMCTask(Task):
    """A dm_control suite task: the domain's model from dm-control, float64 observations in
    named blocks, [-1, 1] actions straight to the actuators, no termination. A subclass sets
    `domain`, the timing, `blocks` and the action space, and implements read, observe, reward
    and reset_state."""

    arrays = "any"
    observation_dtype = np.float64
    domain: str
    blocks: dict[str, int]  # dm_control's observation keys in order, with their flattened widths
    reset_unlimited_hinges = True  # dm_control's reset rule draws them in [-pi, pi] (not cheetah's)
    camera = {"distance": 3.0, "azimuth": 90.0, "elevation": -15.0, "lookat": (0.0, 0.0, 0.5)}

    time_limit: float  # dm_control's episode length, seconds
    Options = DMCOptions

    def __init__(self, **options):
        """episode_length_s: None for dm_control's time limit."""
        super().__init__(**options)
        episode_length_s = self.episode_length_s
        if episode_length_s is None:
            episode_length_s = self.default_episode_length_s()
        elif not (isinstance(episode_length_s, (int, float)) and 0 < episode_length_s < math.inf):
            raise ArgumentError(
                f"task.episode_length_s: expected a finite number > 0, got {episode_length_s!r}"
            )
        self.episode_length_s = float(episode_length_s)

    @classmethod
    def default_episode_length_s(cls) -> float:
        return cls.time_limit  # dm_control's

    @property
    def scene(self) -> str:
        return suite_xml(self.domain)

    def observation_blocks(self) -> dict[str, int]:
        return dict(self.blocks)

    def setup(self, backend):
        """Cache the model's constants, resolve the task's ids (`resolve`), then read once:
        a backend that cannot serve a quantity the task reads (a sensor type, a MuJoCo
        field) refuses it now, at construction, rather than at the first reset."""
        super().setup(backend)
        self.qpos0 = self.array(backend.info.qpos0)
        self.nq, self.nv = backend.nq, backend.nv
        self._joint_reset_rule(backend.info)
        self.resolve(backend)
        self.read(backend)

    def resolve(self, backend) -> None:
        """Resolve the task's body, site and joint ids (subclasses); nothing by default."""

    def terminated(self, s, memory):
        return self.xp.zeros(len(s["qpos"]), self.xp.bool)

    # ---- reads ---------------------------------------------------------------

    def read_state(self, backend) -> dict[str, Any]:
        """qpos, qvel and ctrl (what dm_control's `physics.control()` returns), as copies."""
        xp, views = self.xp, backend.get_state_views()
        return {k: xp.copy(xp.asarray(views[k])) for k in ("qpos", "qvel", "ctrl")}

    def xmat(self, backend, bodies) -> Any:
        """(N, B, 9) row-major orientation matrices of the bodies (ids), as MuJoCo's xmat."""
        quat = self.xp.asarray(backend.get_body_views(bodies).quat)
        n, b = quat.shape[:2]
        return rotation_matrix(self.xp, quat.reshape(n * b, 4)).reshape(n, b, 9)

    def sensor(self, backend, name: str) -> Any:
        """(N, dim) copy of the named sensor's output."""
        return self.xp.copy(self.xp.asarray(backend.get_sensor_view(name)))

    # ---- resets --------------------------------------------------------------

    def _joint_reset_rule(self, info) -> None:
        """dm_control's `randomize_limited_and_rotational_joints` as per-column bounds: a
        limited hinge or slide uniform in its range, an unlimited hinge uniform in [-pi, pi];
        free joints (their orientation) and ball joints are the subclass's to draw."""
        low, high = np.array(info.qpos0, dtype=np.float64), np.array(info.qpos0, dtype=np.float64)
        drawn = np.zeros(info.nq, dtype=bool)
        for j, kind in enumerate(info.joint_type):
            adr = int(info.joint_qpos_adr[j])
            if kind in (2, 3) and info.joint_limited[j]:  # mjJNT_SLIDE, mjJNT_HINGE
                low[adr], high[adr] = info.joint_range[j]
            elif kind == 3 and self.reset_unlimited_hinges:
                low[adr], high[adr] = -np.pi, np.pi
            else:
                continue
            drawn[adr] = True
        self.reset_low, self.reset_high = self.array(low), self.array(high)
        self.reset_drawn = self.xp.asarray(drawn)

    def reset_state(self, env_ids, rng):
        """dm_control's usual rule: joints drawn by `random_joints`, at rest (a task with
        another rule overrides it)."""
        return self.random_joints(rng), self.zero_qvel(rng)

    def random_joints(self, rng) -> Any:
        """(n, nq) qpos by dm_control's `randomize_limited_and_rotational_joints` (slides and
        hinges): qpos0 where a joint is not drawn."""
        u = rng.uniform((self.nq,), dtype=self.dtype)
        return self.xp.where(
            self.reset_drawn, self.reset_low + (self.reset_high - self.reset_low) * u, self.qpos0
        )

    def zero_qvel(self, rng) -> Any:
        return self.xp.zeros((rng.rows, self.nv), self.dtype)
