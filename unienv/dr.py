"""Domain randomization: which parameters vary per env, how they are drawn, when.

A DR config (the `dr` group of cfg/, `cfg/dr/<name>.yaml`) maps a term name to
a term. Each term has a `param`, the thing it changes:

  * a backend DR parameter (`body_mass`, `body_com`, `geom_friction`,
    `dof_damping`, ... see `unienv.backends.DR_TERMS`) on the entries picked by
    `objects` (names or regexes over the backend's bodies, geoms, joints or
    actuators, by the parameter's index kind; default all, the world body
    never) and `axes` (components of a vector entry, e.g. [0] for sliding
    friction; default all);
  * `obs_noise`: noise added to observation columns `indices: [start, stop)`,
    drawn afresh for every observation, plus a per-episode bias uniform in
    [-bias, bias] per column;
  * `action_latency`: env i applies the action of d_i steps ago (zero actions
    before its first d_i), d_i uniform on the integers of `range: [lo, hi]`;
  * `push`: a velocity change dv (world frame, m/s) of `body` and its subtree,
    delivered as the force m*dv/T at the body's COM during one env step of T s;
  * `init_state`: a change to the task's reset state, `field: qpos | qvel`, on
    the columns of the joints in `objects` (a free joint's position only:
    quaternions are never perturbed).

A sample x is drawn per env, and per entry unless `shared: true`, from
`distribution`: `uniform` on `range: [lo, hi]`, `log_uniform` on [lo, hi]
(0 < lo), or `gaussian` with `mean`, `std`, clipped to `clip: [lo, hi]`; a
number as `range` is a fixed value. `operation` makes the value from the
compiled default d (for `init_state`, from the task's reset state): `abs` x,
`scale` d*x, `add` d+x. `schedule` says when: `startup` (once, when the env is
built, from make's seed), `reset` (each env at its own reset, before its state
is set; the default) or `interval` (before every `interval: k`-th env step, or
after a fresh draw from `interval: [lo, hi]` per env and firing; timers restart
at the env's reset, and until its first firing a term leaves the default).

Invariants:
  * everything is checked when the manager is built, before anything runs: an
    unknown parameter or field or a misspelled name lists the valid ones; a
    parameter the backend cannot write raises CapabilityError naming both; a
    range that can give a value the backend refuses (mass <= 0, friction < 0,
    negative damping or gain: the rules of `unienv.backends.dr_rules`, and the
    engine's own limits) is refused. Nothing is clamped except by a gaussian's
    stated `clip`.
  * a value is always made from the compiled default, never from the last
    sample, so nothing accumulates; every entry (and observation column) is
    written by one term only, so term order does not matter.
  * each term draws from its own per-env stream (`unienv.random`) keyed by the
    env seed and the term's name: what env i gets depends on the seed, the term
    and env i's own history, never on other envs or on the other terms.
  * a reset or an interval firing writes only the rows of the envs concerned.

Hot path: the env hands the manager (num_envs,) bool masks on the backend's
device. On a backend whose capabilities say `sync_free` (its state lives where a
host read would wait for it) every call works on all envs through the mask:
draws are made for every env but advance only the masked envs' streams
(`EnvRandom.for_mask`, so env i draws what it would alone), buffers change with
`torch.where`, parameters go to the backend with `set_dr_param_mask`, pushes
are a wrench that is zero where none is due; nothing is read back on the host.
On the CPU engine, where host reads are free, a call returns at once for an
empty mask and otherwise works on the masked envs' ids. The manager keeps the
current value of every parameter it writes in a device buffer (read from the
backend once, at startup), so no write reads the backend back, and the
extremes drawn so far as device tensors, read only by `ranges()`.

Reading: `env.dr_params()` (each term's current values per env, columns named
by `env.dr.labels()`), `env.dr.ranges()` (the extremes drawn so far, which a
sweep reports). A push's m is the subtree's current, randomized mass, from the
manager's own buffer.
"""

from __future__ import annotations

import dataclasses
import math
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np
import torch
import yaml
from omegaconf import OmegaConf

from unienv.backends.base import DR_TERMS, SimBackend
from unienv.errors import ArgumentError, CapabilityError, unknown_name
from unienv.random import EnvRandom, Sampler
from unienv.rows import Rows, host_rows

SPECIAL = ("obs_noise", "action_latency", "push", "init_state")
PARAMS = DR_TERMS + SPECIAL
DISTRIBUTIONS = ("uniform", "log_uniform", "gaussian")
OPERATIONS = ("abs", "scale", "add")
SCHEDULES = ("startup", "reset", "interval")

_SAMPLED = ("param", "distribution", "range", "mean", "std", "clip")
FIELDS = {
    "model": _SAMPLED + ("objects", "axes", "operation", "schedule", "interval", "shared"),
    "obs_noise": ("param", "distribution", "range", "std", "indices", "bias"),
    "action_latency": ("param", "range", "schedule"),
    "push": _SAMPLED + ("body", "axes", "interval"),
    "init_state": _SAMPLED + ("field", "objects", "operation", "shared"),
}
"""The fields each kind of term accepts; any other field is an error."""

ROLES = {"<root>": "root_body"}
"""Body names a config may use for a body each task declares (the Task attribute), so that one
config fits every task: "<root>" is the task's root body (a legged robot's torso, a cart, an
arm's first link). The presets push it and shift its COM."""


# ---- config ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Distribution:
    """Samples on [low, high]: uniform, log-uniform, or a gaussian clipped to it."""

    kind: str
    low: float
    high: float
    mean: float = 0.0
    std: float = 0.0

    def reach(self) -> float:
        """The largest |sample| there can be: a gaussian's is at most 8.6 std from its mean
        (Box-Muller on 53-bit uniforms), within its clip."""
        if self.kind != "gaussian":
            return max(abs(self.low), abs(self.high))
        return min(max(abs(self.low), abs(self.high)), abs(self.mean) + 8.6 * self.std)

    def sample(self, rng: Sampler, shape: tuple[int, ...]) -> torch.Tensor:
        if self.kind == "uniform":
            return rng.uniform(shape, self.low, self.high)
        if self.kind == "log_uniform":
            return torch.exp(rng.uniform(shape, math.log(self.low), math.log(self.high)))
        return rng.normal(shape, self.mean, self.std).clamp(self.low, self.high)


@dataclasses.dataclass(frozen=True)
class Term:
    """One parsed DR term; fields a term's kind does not use stay None."""

    name: str
    param: str
    distribution: Distribution | None = None
    operation: str | None = None
    schedule: str = "reset"
    interval: tuple[int, int] | None = None
    objects: tuple[str, ...] | None = None
    axes: tuple[int, ...] | None = None
    shared: bool = False
    indices: tuple[int, int] | None = None  # obs_noise
    bias: float = 0.0  # obs_noise
    delay: tuple[int, int] | None = None  # action_latency
    body: str | None = None  # push
    field: str | None = None  # init_state

    @property
    def kind(self) -> str:
        return self.param if self.param in SPECIAL else "model"


def preset(name: str) -> dict[str, Any]:
    """The DR config of a preset ("none", "default", "strong", ...): cfg/dr/<name>.yaml, the file
    Hydra's `dr=<name>` loads, shipped in the package as unienv.cfg (found wherever it is installed).
    A preset's `defaults` list names the presets it extends, as Hydra composes them (quadruped.yaml)."""
    folder = resources.files("unienv.cfg") / "dr"
    names = sorted(f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml"))
    if name not in names:
        raise unknown_name("dr preset", name, names)
    config = yaml.safe_load((folder / f"{name}.yaml").read_text()) or {}  # none.yaml holds no term
    bases = [preset(base) for base in config.pop("defaults", []) if base != "_self_"]
    return OmegaConf.to_container(OmegaConf.merge({}, *bases, config))


def parse(config: str | Mapping[str, Any] | None) -> tuple[Term, ...]:
    """Terms of a DR config (a preset's name, a mapping or an OmegaConf DictConfig), checked alone.

    What needs the backend (names, capabilities, defaults) is checked by
    `DomainRandomization`.
    """
    if config is None:
        return ()
    if isinstance(config, str):
        config = preset(config)
    if not isinstance(config, Mapping):
        raise ArgumentError(f"dr: expected a mapping of term name -> term, got {type(config).__name__}")
    terms = tuple(_term(str(name), _plain(spec)) for name, spec in config.items())
    latency = [t.name for t in terms if t.param == "action_latency"]
    if len(latency) > 1:
        raise ArgumentError(f"dr: one action_latency term at most, got {latency}")
    return terms


def backend_params(terms: Sequence[Term]) -> tuple[str, ...]:
    """The backend DR parameters the terms write (the backend's `randomize=`)."""
    return tuple(dict.fromkeys(t.param for t in terms if t.kind == "model"))


def _plain(x: Any) -> Any:
    """Mappings and sequences (OmegaConf's included) as dicts and lists."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, Sequence) and not isinstance(x, str):
        return [_plain(v) for v in x]
    return x


def _term(name: str, spec: Any) -> Term:
    where = f"dr.{name}"
    if not isinstance(spec, dict):
        raise ArgumentError(f"{where}: expected a mapping with a 'param' field, got {spec!r}")
    if "param" not in spec:
        raise ArgumentError(f"{where}.param: missing; expected one of {list(PARAMS)}")
    param = spec["param"]
    if param not in PARAMS:
        raise unknown_name(f"parameter in {where}.param", param, PARAMS)
    kind = param if param in SPECIAL else "model"
    for key in spec:
        if key not in FIELDS[kind]:
            raise unknown_name(f"field of {where} (a {kind} term)", key, FIELDS[kind])
    parse_kind = {
        "model": _model_term,
        "obs_noise": _noise_term,
        "action_latency": _latency_term,
        "push": _push_term,
        "init_state": _init_term,
    }[kind]
    return parse_kind(name, where, spec)


def _model_term(name: str, where: str, spec: dict) -> Term:
    schedule = _choice(where, spec, "schedule", SCHEDULES, "reset")
    return Term(
        name,
        spec["param"],
        distribution=_distribution(where, spec),
        operation=_choice(where, spec, "operation", OPERATIONS, None),
        schedule=schedule,
        interval=_interval(where, spec, schedule),
        objects=_names(where, spec),
        axes=_ints(where, spec, "axes"),
        shared=_flag(where, spec, "shared"),
    )


def _noise_term(name: str, where: str, spec: dict) -> Term:
    dist = _distribution(where, spec, kinds=("gaussian", "uniform"))
    indices = _ints(where, spec, "indices")
    if indices is not None and (len(indices) != 2 or not 0 <= indices[0] < indices[1]):
        raise ArgumentError(f"{where}.indices: expected [start, stop) with 0 <= start < stop, got {indices}")
    bias = _number(where, "bias", spec.get("bias", 0.0))
    if bias < 0:
        raise ArgumentError(f"{where}.bias: expected a half-width >= 0, got {bias}")
    return Term(name, "obs_noise", distribution=dist, schedule="step", indices=indices, bias=bias)


def _latency_term(name: str, where: str, spec: dict) -> Term:
    low, high = _range(where, spec)
    if low != int(low) or high != int(high) or low < 0:
        raise ArgumentError(f"{where}.range: expected whole steps [lo, hi] with 0 <= lo, got {spec['range']}")
    schedule = _choice(where, spec, "schedule", ("startup", "reset"), "reset")
    return Term(name, "action_latency", schedule=schedule, delay=(int(low), int(high)))


def _push_term(name: str, where: str, spec: dict) -> Term:
    if not isinstance(spec.get("body"), str):
        raise ArgumentError(f"{where}.body: expected the name of the body to push, got {spec.get('body')!r}")
    axes = _ints(where, spec, "axes") or (0, 1, 2)
    if not set(axes) <= {0, 1, 2} or len(set(axes)) != len(axes):
        raise ArgumentError(f"{where}.axes: expected distinct world axes among 0, 1, 2, got {list(axes)}")
    return Term(
        name,
        "push",
        distribution=_distribution(where, spec),
        schedule="interval",
        interval=_interval(where, spec, "interval"),
        axes=axes,
        body=spec["body"],
    )


def _init_term(name: str, where: str, spec: dict) -> Term:
    return Term(
        name,
        "init_state",
        distribution=_distribution(where, spec),
        operation=_choice(where, spec, "operation", OPERATIONS, "add"),
        objects=_names(where, spec),
        shared=_flag(where, spec, "shared"),
        field=_choice(where, spec, "field", ("qpos", "qvel"), None),
    )


def _choice(where: str, spec: dict, key: str, valid: Sequence[str], default: str | None) -> str:
    value = spec.get(key, default)
    if value is None:
        raise ArgumentError(f"{where}.{key}: missing; expected one of {list(valid)}")
    if value not in valid:
        raise unknown_name(f"{where}.{key}", value, valid)
    return value


def _number(where: str, key: str, x: Any, finite: bool = True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ArgumentError(f"{where}.{key}: expected a number, got {x!r}")
    if math.isnan(x) or (finite and math.isinf(x)):
        raise ArgumentError(f"{where}.{key}: expected a finite number, got {x!r}")
    return float(x)


def _pair(where: str, key: str, x: Any, finite: bool = True) -> tuple[float, float]:
    """[lo, hi] with lo <= hi; a single number v means [v, v]."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        v = _number(where, key, x)
        return v, v
    if not isinstance(x, list) or len(x) != 2:
        raise ArgumentError(f"{where}.{key}: expected [lo, hi] or a number, got {x!r}")
    lo, hi = (_number(where, key, v, finite) for v in x)
    if lo > hi:
        raise ArgumentError(f"{where}.{key}: expected lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def _range(where: str, spec: dict) -> tuple[float, float]:
    if "range" not in spec:
        raise ArgumentError(f"{where}.range: missing; expected [lo, hi] or a number")
    return _pair(where, "range", spec["range"])


def _distribution(where: str, spec: dict, kinds: Sequence[str] = DISTRIBUTIONS) -> Distribution:
    kind = _choice(where, spec, "distribution", kinds, "uniform")
    unused = ("range",) if kind == "gaussian" else ("mean", "std", "clip")
    for key in unused:
        if key in spec:
            raise ArgumentError(
                f"{where}.{key}: not used by a {kind} distribution "
                "(uniform and log_uniform take range; gaussian takes mean, std and clip)"
            )
    if kind != "gaussian":
        low, high = _range(where, spec)
        if kind == "log_uniform" and low <= 0:
            raise ArgumentError(f"{where}.range: log_uniform needs 0 < lo, got [{low}, {high}]")
        return Distribution(kind, low, high)
    if "std" not in spec:
        raise ArgumentError(f"{where}.std: missing; a gaussian needs std >= 0")
    mean = _number(where, "mean", spec.get("mean", 0.0))
    std = _number(where, "std", spec["std"])
    if std < 0:
        raise ArgumentError(f"{where}.std: expected >= 0, got {std}")
    low, high = _pair(where, "clip", spec.get("clip", [-math.inf, math.inf]), finite=False)
    if not low <= mean <= high:
        raise ArgumentError(f"{where}.clip: expected [lo, hi] around the mean {mean}, got [{low}, {high}]")
    return Distribution(kind, low, high, mean, std)


def _interval(where: str, spec: dict, schedule: str) -> tuple[int, int] | None:
    if schedule != "interval":
        if "interval" in spec:
            raise ArgumentError(f"{where}.interval: only used with schedule: interval, not {schedule!r}")
        return None
    if "interval" not in spec:
        raise ArgumentError(f"{where}.interval: missing; expected env steps k or [lo, hi]")
    lo, hi = _pair(where, "interval", spec["interval"])
    if lo != int(lo) or hi != int(hi) or lo < 1:
        raise ArgumentError(f"{where}.interval: expected whole env steps >= 1, got {spec['interval']}")
    return int(lo), int(hi)


def _names(where: str, spec: dict) -> tuple[str, ...] | None:
    objects = spec.get("objects")
    if objects is None:
        return None
    objects = [objects] if isinstance(objects, str) else objects
    if not isinstance(objects, list) or not objects or not all(isinstance(o, str) for o in objects):
        raise ArgumentError(f"{where}.objects: expected a name or regex, or a list of them, got {objects!r}")
    for pattern in objects:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ArgumentError(f"{where}.objects: {pattern!r} is not a valid regex ({e})") from None
    return tuple(objects)


def _ints(where: str, spec: dict, key: str) -> tuple[int, ...] | None:
    x = spec.get(key)
    if x is None:
        return None
    if not isinstance(x, list) or not x or not all(isinstance(i, int) and not isinstance(i, bool) for i in x):
        raise ArgumentError(f"{where}.{key}: expected a list of ints, got {x!r}")
    return tuple(x)


def _flag(where: str, spec: dict, key: str) -> bool:
    x = spec.get(key, False)
    if not isinstance(x, bool):
        raise ArgumentError(f"{where}.{key}: expected true or false, got {x!r}")
    return x


# ---- the manager ----------------------------------------------------------------


def _operate(operation: str, base: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    if operation == "abs":
        return x.expand(torch.broadcast_shapes(x.shape, base.shape))
    if operation == "scale":
        return base * x
    return base + x


@dataclasses.dataclass
class _Bound:
    """A term resolved against one backend, with its per-env stream and last draws."""

    term: Term
    random: EnvRandom
    cols: torch.Tensor  # flat entries of the parameter (or obs / qpos / qvel columns)
    labels: tuple[str, ...]  # a name per entry
    base: torch.Tensor | None = None  # compiled default of the entries (model terms)
    value: torch.Tensor | None = None  # (N, E) last values, per env
    countdown: torch.Tensor | None = None  # (N,) env steps to the next firing (interval)
    low: torch.Tensor | None = None  # smallest draw so far (0-d, on the device; +inf before any)
    high: torch.Tensor | None = None  # largest draw so far
    body: int = -1  # push: the pushed body
    subtree: torch.Tensor | None = None  # push: it and its descendants, whose mass moves

    def sample(self, rows: Rows, width: int) -> torch.Tensor:
        """(rows, width) draws of the term's distribution, noted in the range of draws."""
        return self.seen(rows, self.term.distribution.sample(rows.sampler(self.random), (width,)))

    def draw(self, rows: Rows) -> torch.Tensor:
        """(rows, E) samples, shared across entries if asked."""
        return self.sample(rows, 1 if self.term.shared else len(self.cols)).expand(-1, len(self.cols))

    def seen(self, rows: Rows, x: torch.Tensor) -> torch.Tensor:
        """Widen the range of draws by the rows of x that are drawn; returns x."""
        if x.numel():
            lo, hi = rows.extremes(x.to(self.low.dtype))
            torch.minimum(self.low, lo, out=self.low)
            torch.maximum(self.high, hi, out=self.high)
        return x

    def draw_interval(self, rows: Rows) -> torch.Tensor:
        lo, hi = self.term.interval
        return rows.sampler(self.random).integers((), lo, hi + 1)


class DomainRandomization:
    """The DR terms of one env, bound to its backend; see the module docstring.

    UniEnv calls `startup()` once after the backend is built, `reset(mask)` and
    `reset_state(mask, ...)` in each reset, `actions(...)` before each physics
    step and `observation(...)` on each observation. Masks are (num_envs,) bool
    on the backend's device. On a backend whose capabilities say `sync_free`,
    every call works on all envs through the mask, with static shapes and no host
    read; elsewhere (the CPU engine, where host reads are free) a call returns at
    once when its mask is empty and then works on the masked envs' ids only.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | Sequence[Term],
        backend: SimBackend,
        task: Any,
        seed=None,
        *,
        rows: Callable[[torch.Tensor], Rows | None] = host_rows,
    ):
        terms = tuple(config) if _is_terms(config) else parse(config)
        terms = tuple(_with_roles(t, task) for t in terms)
        self.backend = backend
        self.num_envs = n = backend.num_envs
        self.device = dev = backend.device
        self.terms = terms
        self._select = rows  # the env's row selector: host ids or device masks
        self._obs_dim = int(np.prod(task.single_observation_space.shape))
        self._obs_dtype = task.single_observation_space.dtype
        self._act_dim = int(np.prod(task.single_action_space.shape))
        self._step_seconds = float(task.dt)
        bind = {
            "model": self._bind_model,
            "obs_noise": self._bind_noise,
            "action_latency": self._bind_latency,
            "push": self._bind_push,
            "init_state": self._bind_init,
        }
        self._bound = [bind[t.kind](t) for t in terms]
        _check_disjoint(self._bound)
        self._by_kind = {k: [b for b in self._bound if b.term.kind == k] for k in FIELDS}
        self._interval = [b for b in self._bound if b.term.schedule == "interval"]
        self._obs_offset = torch.zeros(n, self._obs_dim, dtype=torch.float64, device=dev)
        self._env_index = torch.arange(n, device=dev)
        self._all = rows(torch.ones(n, dtype=torch.bool, device=dev))
        self._head = torch.zeros((), dtype=torch.int64, device=dev)  # the latency ring's newest slot
        # current values of every backend parameter the terms write (and body_mass for pushes),
        # (N, *shape) float64, read from the backend once at startup: no write reads it back
        self._current: dict[str, torch.Tensor] = {}
        self.seed(0 if seed is None else seed)

    # ---- binding (cold path, all checks) ----------------------------------------

    def _stream(self) -> EnvRandom:
        return EnvRandom(self.num_envs, self.device)

    def _bound_term(self, t: Term, cols: torch.Tensor, labels: tuple[str, ...], **fields) -> _Bound:
        extreme = {"dtype": torch.float64, "device": self.device}
        return _Bound(
            t,
            self._stream(),
            cols,
            labels,
            low=torch.tensor(math.inf, **extreme),
            high=torch.tensor(-math.inf, **extreme),
            **fields,
        )

    def _bind_model(self, t: Term) -> _Bound:
        backend, where = self.backend, f"dr.{t.name}"
        caps = backend.get_dr_capabilities()
        if t.param not in caps:
            raise CapabilityError(
                f"{where}: the {backend.name} backend cannot randomize {t.param!r} "
                f"(it can: {', '.join(caps) or 'nothing'})"
            )
        spec = caps[t.param]
        default = backend.get_dr_default(t.param).to(self.device, torch.float64)
        indexed = spec.index != ""
        count = spec.shape[0] if indexed else 1
        width = int(np.prod(spec.shape[1:] if indexed else spec.shape))
        vector = len(spec.shape) == (2 if indexed else 1)
        if not indexed and t.objects is not None:
            raise ArgumentError(f"{where}.objects: {t.param} has no per-object entries; remove objects")
        if t.axes is not None and not vector:
            raise ArgumentError(f"{where}.axes: {t.param} entries are scalars; remove axes")
        axes = t.axes if t.axes is not None else tuple(range(width))
        if any(not 0 <= a < width for a in axes) or len(set(axes)) != len(axes):
            raise ArgumentError(
                f"{where}.axes: expected distinct components in [0, {width}), got {list(axes)}"
            )
        entries = self._entries(where, spec.index, t.objects, count) if indexed else [(0, t.param)]
        cols, names = [], []
        for entry, label in entries:
            for a in axes:
                cols.append(entry * width + a)
                names.append(f"{label}[{a}]" if vector else label)
        cols = torch.as_tensor(cols, dtype=torch.int64, device=self.device)
        base = default.reshape(-1)[cols]
        self._check_physical(where, t, default, cols)
        value = base.expand(self.num_envs, len(cols)).clone()
        return self._bound_term(t, cols, tuple(names), base=base, value=value)

    def _check_physical(self, where: str, t: Term, default: torch.Tensor, cols: torch.Tensor) -> None:
        """Refuse a range whose extreme values the backend would refuse (the DR table's
        domain, e.g. mass > 0, and the engine's own limits): nothing is clamped later."""
        d = t.distribution
        ends = torch.stack(
            [
                _operate(t.operation, default.reshape(-1)[cols], torch.tensor(x, dtype=torch.float64))
                for x in (d.low, d.high)
            ]
        )
        # 0 * inf: a zero default scaled stays zero; an infinite end (an unclipped gaussian) is only far
        ends = torch.nan_to_num(ends, nan=0.0, posinf=1e300, neginf=-1e300)
        rows = default.expand(2, *default.shape).clone()
        rows.reshape(2, -1)[:, cols] = ends
        try:
            self.backend.check_dr_param(t.param, rows)
        except ArgumentError as e:
            what = f"{d.kind} on [{d.low}, {d.high}] with operation {t.operation!r}"
            reason = str(e).removeprefix("values: ")
            raise ArgumentError(
                f"{where}: {what} can give values the {self.backend.name} backend refuses: {reason}"
            ) from None

    def _entries(self, where: str, index: str, patterns, count: int) -> list[tuple[int, str]]:
        """(entry id, name) along a parameter's index axis, picked by names or regexes."""
        if index == "dof":
            joints = self.backend.names("joint")
            info = self.backend.info
            width = {0: 6, 1: 3}
            out = []
            for j in _match(where, "joint", patterns, joints):
                start = int(info.joint_dof_adr[j])
                n = width.get(int(info.joint_type[j]), 1)
                out += [(start + k, joints[j] if n == 1 else f"{joints[j]}:{k}") for k in range(n)]
            return out
        if index not in ("body", "geom", "actuator"):
            raise ArgumentError(f"{where}: parameter index kind {index!r} is not one DR knows")
        names = self.backend.names(index)
        skip = {0} if index == "body" else set()  # the world body is never randomized
        ids = _match(where, index, patterns, names, skip)
        if max(ids, default=-1) >= count:
            raise ArgumentError(f"{where}: {index} ids exceed the parameter's {count} entries")
        return [(i, names[i]) for i in ids]

    def _bind_noise(self, t: Term) -> _Bound:
        start, stop = t.indices if t.indices is not None else (0, self._obs_dim)
        if stop > self._obs_dim:
            raise ArgumentError(
                f"dr.{t.name}.indices: the observation has {self._obs_dim} columns, got [{start}, {stop})"
            )
        reach, limit = t.distribution.reach() + t.bias, float(np.finfo(self._obs_dtype).max) / 2
        if reach > limit:  # noise beyond it would make observations inf
            raise ArgumentError(
                f"dr.{t.name}: noise up to {reach:.3g} does not fit the observation's "
                f"{np.dtype(self._obs_dtype).name} (expected at most {limit:.3g})"
            )
        cols = torch.arange(start, stop, device=self.device)
        value = torch.zeros(self.num_envs, stop - start, dtype=torch.float64, device=self.device)
        labels = tuple(f"obs[{i}]" for i in range(start, stop))
        return self._bound_term(t, cols, labels, value=value)  # value: the per-episode bias

    def _bind_latency(self, t: Term) -> _Bound:
        value = torch.zeros(self.num_envs, 1, dtype=torch.int64, device=self.device)
        cols = torch.zeros(1, dtype=torch.int64, device=self.device)
        slots = t.delay[1] + 1
        self._history = torch.zeros(
            slots, self.num_envs, self._act_dim, dtype=torch.float64, device=self.device
        )
        return self._bound_term(t, cols, ("steps",), value=value)  # value: each env's delay in steps

    def _bind_push(self, t: Term) -> _Bound:
        backend, where = self.backend, f"dr.{t.name}"
        if not backend.get_capabilities().body_wrench:
            raise CapabilityError(
                f"{where}: the {backend.name} backend cannot apply body wrenches for a push"
            )
        body = int(_match(where, "body", (t.body,), backend.names("body"), {0})[0])
        parent = backend.info.body_parent
        subtree = [b for b in range(len(parent)) if _descends(b, body, parent)]
        cols = torch.as_tensor(t.axes, dtype=torch.int64, device=self.device)
        value = torch.zeros(self.num_envs, 3, dtype=torch.float64, device=self.device)
        return self._bound_term(
            t,
            cols,
            tuple("xyz"),
            body=body,
            subtree=torch.as_tensor(subtree, device=self.device),
            value=value,
        )  # value: the last commanded dv

    def _bind_init(self, t: Term) -> _Bound:
        backend, where, info = self.backend, f"dr.{t.name}", self.backend.info
        joints = backend.names("joint")
        cols, labels = [], []
        for j in _match(where, "joint", t.objects, joints):
            kind = int(info.joint_type[j])
            if t.field == "qpos":
                if kind == 1:
                    raise ArgumentError(
                        f"{where}.objects: {joints[j]!r} is a ball joint; its qpos is a quaternion"
                    )
                span = range(
                    int(info.joint_qpos_adr[j]), int(info.joint_qpos_adr[j]) + (3 if kind == 0 else 1)
                )
            else:
                span = range(
                    int(info.joint_dof_adr[j]), int(info.joint_dof_adr[j]) + {0: 6, 1: 3}.get(kind, 1)
                )
            cols += list(span)
            labels += [joints[j] if len(span) == 1 else f"{joints[j]}:{k}" for k in range(len(span))]
        value = torch.zeros(self.num_envs, len(cols), dtype=torch.float64, device=self.device)
        cols = torch.as_tensor(cols, dtype=torch.int64, device=self.device)
        return self._bound_term(t, cols, tuple(labels), value=value)  # value: the last sample

    # ---- seeding and schedules ----------------------------------------------------

    def seed(self, seed: int) -> None:
        """Restart every term's per-env streams from the env seed."""
        for b in self._bound:
            b.random.seed(int(seed) + (zlib.crc32(b.term.name.encode()) << 30))

    def startup(self) -> None:
        """Read the current values of the parameters written, apply the startup terms to
        every env and start the interval timers (cold: after the backend is built)."""
        params = set(backend_params(self.terms))
        if self._by_kind["push"] and "body_mass" not in params:
            masses = torch.as_tensor(self.backend.info.body_mass, dtype=torch.float64, device=self.device)
            self._current["body_mass"] = masses.expand(self.num_envs, -1)
        for param in params:
            self._current[param] = self.backend.get_dr_param(param).to(self.device, torch.float64)
        for b in self._bound:
            if b.term.schedule == "startup":
                self._apply(b, self._all)
            if b.term.schedule == "interval":
                b.countdown = b.draw_interval(self._all)

    def reset(self, rows: Rows) -> None:
        """Before the rows' state is set: reset-time terms, timers, bias, latency."""
        for b in self._bound:
            t = b.term
            if t.schedule == "reset":
                self._apply(b, rows)
            elif t.schedule == "interval":
                rows.put(b.countdown, b.draw_interval(rows))
            if t.kind == "obs_noise" and t.bias > 0:
                bias = rows.sampler(b.random).uniform((len(b.cols),), -t.bias, t.bias)
                rows.put(b.value, b.seen(rows, bias))
        if self._by_kind["action_latency"]:
            self._history.masked_fill_(rows.mask[None, :, None], 0.0)

    def reset_state(self, rows: Rows, qpos: torch.Tensor, qvel: torch.Tensor):
        """The task's reset state with the init_state terms applied: qpos and qvel hold a row
        per sampled row of `rows` (per id, or per env by mask, where rows outside it come back
        unchanged)."""
        if not self._by_kind["init_state"]:
            return qpos, qvel
        state = {"qpos": qpos.clone(), "qvel": qvel.clone()}
        for b in self._by_kind["init_state"]:
            x = b.draw(rows)
            target = state[b.term.field]
            new = _operate(b.term.operation, target[:, b.cols].to(torch.float64), x).to(target.dtype)
            target[:, b.cols] = (
                new if rows.ids is not None else torch.where(rows.mask[:, None], new, target[:, b.cols])
            )
            rows.put(b.value, x)
        return state["qpos"], state["qvel"]

    def actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Before a physics step: fire the interval terms where due (pushes among them) and
        return the actions to apply, delayed per env if there is a latency term."""
        pushes = []
        for b in self._interval:
            b.countdown -= 1
            due = b.countdown <= 0
            rows = self._select(due)
            if rows is None:
                continue
            rows.put(b.countdown, b.draw_interval(rows))
            self._apply(b, rows)
            if b.term.kind == "push":
                pushes.append((b, due))
        if pushes:
            self._push(pushes)
        if self._by_kind["action_latency"]:
            h, head = self._history, self._head  # head on the device: a captured step advances it
            head.add_(1).remainder_(len(h))
            h.index_copy_(0, head.view(1), actions[None].to(h.dtype))
            delay = self._by_kind["action_latency"][0].value[:, 0]
            return h[(head - delay) % len(h), self._env_index].to(actions.dtype)
        return actions

    def observation(self, obs: torch.Tensor, rows: Rows | None = None) -> torch.Tensor:
        """obs plus noise: fresh noise for the rows (None: all), the same as last time for
        the others."""
        noise = self._by_kind["obs_noise"]
        if not noise:
            return obs
        rows = self._all if rows is None else rows
        if rows is not None:
            for b in noise:
                fresh = b.term.distribution.sample(rows.sampler(b.random), (len(b.cols),))
                rows.put(self._obs_offset, fresh + rows.take(b.value), b.cols)
        return obs + self._obs_offset.reshape(obs.shape).to(obs.dtype)

    # ---- writing --------------------------------------------------------------

    def _apply(self, b: _Bound, rows: Rows) -> None:
        t = b.term
        if t.kind == "model":
            value = _operate(t.operation, b.base, b.draw(rows))
            current = self._current[t.param]
            rows.put(current.view(self.num_envs, -1), value, b.cols)
            self.backend.set_dr_param_mask(t.param, rows.mask, current)
            rows.put(b.value, value)
        elif t.kind == "action_latency":
            lo, hi = t.delay
            rows.put(b.value, b.seen(rows, rows.sampler(b.random).integers((1,), lo, hi + 1)))
        elif t.kind == "push":
            x = b.sample(rows, len(b.cols))
            dv = torch.zeros(len(x), 3, dtype=torch.float64, device=self.device)
            dv[:, b.cols] = x
            rows.put(b.value, dv)

    def _push(self, pushes: list[tuple[_Bound, torch.Tensor]]) -> None:
        """One wrench for this step: force m*dv/T on each pushed body where due, zero elsewhere;
        m is the subtree's current (randomized) mass."""
        bodies = sorted({b.body for b, _ in pushes})
        force = torch.zeros(self.num_envs, len(bodies), 3, dtype=torch.float64, device=self.device)
        masses = self._current["body_mass"]
        for b, due in pushes:
            mass = masses[:, b.subtree].sum(1, keepdim=True)
            force[:, bodies.index(b.body)] += torch.where(
                due[:, None], mass * b.value / self._step_seconds, 0.0
            )
        self.backend.apply_body_wrench(np.asarray(bodies), force, torch.zeros_like(force))

    # ---- what users read ---------------------------------------------------------

    def params(self) -> dict[str, torch.Tensor]:
        """Each term's current per-env values, (num_envs, E), columns as in `labels()`.

        Model terms: the values written (kg, m, ...); obs_noise: the episode's
        bias; action_latency: the delay in steps; push: the last dv commanded;
        init_state: the last sample.
        """
        return {b.term.name: b.value.clone() for b in self._bound}

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Per term, the smallest and largest draw x so far (over envs, entries and
        time; the factor of a scale, the offset of an add; for obs_noise, the bias;
        for action_latency, the delay). (nan, nan) for a term that has not drawn.
        Kept on the device; read here (a host read: call it off the hot path)."""
        out = {}
        for b in self._bound:
            low, high = float(b.low), float(b.high)
            out[b.term.name] = (low, high) if low <= high else (math.nan, math.nan)
        return out

    def labels(self) -> dict[str, tuple[str, ...]]:
        """The name of each column of `params()`, per term."""
        return {b.term.name: b.labels for b in self._bound}


# ---- helpers ----------------------------------------------------------------------


def _is_terms(config: Any) -> bool:
    return isinstance(config, (tuple, list)) and all(isinstance(t, Term) for t in config)


def _with_roles(t: Term, task: Any) -> Term:
    """t with each role in its body names (ROLES, e.g. "<root>") replaced by the task's body."""

    def named(name: str) -> str:
        if name not in ROLES:
            return name
        body = getattr(task, ROLES[name], None)
        if body is None:
            raise ArgumentError(
                f"dr.{t.name}: {name} names the task's {ROLES[name]}, which task {task.name!r} does not declare"
            )
        return body

    return dataclasses.replace(
        t,
        body=None if t.body is None else named(t.body),
        objects=None if t.objects is None else tuple(named(o) for o in t.objects),
    )


def _match(where: str, kind: str, patterns, names: Sequence[str], skip=frozenset()) -> list[int]:
    """Ids of the names matched by any pattern (exact name or full regex match), in id order."""
    candidates = [i for i in range(len(names)) if i not in skip]
    if patterns is None:
        return candidates
    picked = set()
    for p in patterns:
        hits = [i for i in candidates if names[i] == p or re.fullmatch(p, names[i])]
        if not hits:
            raise unknown_name(f"{kind} in {where}.objects", p, [names[i] for i in candidates])
        picked.update(hits)
    return sorted(picked)


def _descends(b: int, root: int, parent: np.ndarray) -> bool:
    while b != root and b != 0:
        b = int(parent[b])
    return b == root


def _check_physical(where: str, t: Term, spec, base: torch.Tensor, labels: Sequence[str]) -> None:
    """Refuse a range whose extreme values leave the parameter's physical domain."""
    d = t.distribution
    ends = torch.stack(
        [_operate(t.operation, base, torch.tensor(x, dtype=torch.float64)) for x in (d.low, d.high)]
    )
    ends = torch.nan_to_num(ends, nan=0.0)  # 0 * inf: a zero default scaled stays zero
    lowest, at = ends.min(0).values.min(0)
    label = labels[int(at)]
    what = f"{d.kind} on [{d.low}, {d.high}] with operation {t.operation!r}"
    if spec.minimum is not None and not bool(lowest >= spec.minimum):
        raise ArgumentError(
            f"{where}: {what} can give {t.param} = {float(lowest):g} for {label!r}; "
            f"{t.param} must be >= {spec.minimum} ({spec.unit})"
        )
    if t.param == "body_mass":
        positive = base > 0
        if bool(positive.any()) and not bool((ends.min(0).values[positive] > 0).all()):
            raise ArgumentError(f"{where}: {what} can give a body_mass <= 0; masses must stay > 0 (kg)")


def _check_disjoint(bound: Sequence[_Bound]) -> None:
    """Every parameter entry, observation column or state column is one term's."""
    owner: dict[tuple[str, int], str] = {}
    for b in bound:
        t = b.term
        key = {"obs_noise": "observation", "init_state": t.field}.get(t.kind, t.param)
        if t.kind in ("action_latency", "push"):
            continue
        for c, label in zip(b.cols.tolist(), b.labels, strict=True):
            if (key, c) in owner:
                raise ArgumentError(
                    f"dr.{t.name}: {key} entry {label!r} is already written by dr.{owner[(key, c)]}; "
                    "each entry may have one term"
                )
            owner[(key, c)] = t.name
