"""The parsed form of a DR term (`Term`, `Distribution`) and the readers of its fields.

Each kind of term (`unienv.dr.kinds`) reads its own fields with these readers,
so that one field means and checks the same in every kind that has it. A
reader takes `where` (the term's place in the config, e.g. "dr.mass") and the
term's spec (a dict of plain values), and raises ArgumentError naming
`where.<field>` and what was expected; a misspelled choice lists the valid ones.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

import torch

from unienv.errors import ArgumentError, unknown_name
from unienv.utils import limits
from unienv.utils.random import Sampler

DISTRIBUTIONS = ("uniform", "log_uniform", "gaussian")
OPERATIONS = ("abs", "scale", "add")
SCHEDULES = ("startup", "reset", "interval")
SAMPLED = ("param", "distribution", "range", "mean", "std", "clip", "ramp")
"""The fields of a term that draws from a distribution."""


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
    """One parsed DR term: its `kind` (a key of `unienv.dr.KINDS`) and the fields that kind
    reads; fields a kind does not use stay None."""

    name: str
    param: str
    kind: str
    distribution: Distribution | None = None
    operation: str | None = None
    schedule: str = "reset"
    interval: tuple[int, int] | None = None
    objects: tuple[str, ...] | None = None
    axes: tuple[int, ...] | None = None
    shared: bool = False
    indices: tuple[int, int] | None = None  # obs_noise
    blocks: tuple[str, ...] | None = None  # obs_noise
    bias: float = 0.0  # obs_noise
    delay: tuple[int, int] | None = None  # action_latency
    body: str | None = None  # push
    field: str | None = None  # init_state
    ramp: int | None = None  # env steps over which the draws widen from no change to their range


def operate(operation: str, base: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The value an operation makes from the default `base` and the draw `x`."""
    if operation == "abs":
        return x.expand(torch.broadcast_shapes(x.shape, base.shape))
    if operation == "scale":
        return base * x
    return base + x


# ---- field readers ------------------------------------------------------------------------------


def choice(where: str, spec: dict, key: str, valid: Sequence[str], default: str | None) -> str:
    value = spec.get(key, default)
    if value is None:
        raise ArgumentError(f"{where}.{key}: missing; expected one of {list(valid)}")
    if value not in valid:
        raise unknown_name(f"{where}.{key}", value, valid)
    return value


def number(where: str, key: str, x: Any, finite: bool = True) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ArgumentError(f"{where}.{key}: expected a number, got {x!r}")
    if math.isnan(x) or (finite and math.isinf(x)):
        raise ArgumentError(f"{where}.{key}: expected a finite number, got {x!r}")
    return float(x)


def pair(where: str, key: str, x: Any, finite: bool = True) -> tuple[float, float]:
    """[lo, hi] with lo <= hi; a single number v means [v, v]."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        v = number(where, key, x)
        return v, v
    if not isinstance(x, list) or len(x) != 2:
        raise ArgumentError(f"{where}.{key}: expected [lo, hi] or a number, got {x!r}")
    lo, hi = (number(where, key, v, finite) for v in x)
    if lo > hi:
        raise ArgumentError(f"{where}.{key}: expected lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def value_range(where: str, spec: dict) -> tuple[float, float]:
    """The `range` field: [lo, hi], or a number for a fixed value."""
    if "range" not in spec:
        raise ArgumentError(f"{where}.range: missing; expected [lo, hi] or a number")
    return pair(where, "range", spec["range"])


def distribution(where: str, spec: dict, kinds: Sequence[str] = DISTRIBUTIONS) -> Distribution:
    """The `distribution` field and the fields it takes (range; or mean, std, clip)."""
    kind = choice(where, spec, "distribution", kinds, "uniform")
    unused = ("range",) if kind == "gaussian" else ("mean", "std", "clip")
    for key in unused:
        if key in spec:
            raise ArgumentError(
                f"{where}.{key}: not used by a {kind} distribution "
                "(uniform and log_uniform take range; gaussian takes mean, std and clip)"
            )
    if kind != "gaussian":
        low, high = value_range(where, spec)
        if kind == "log_uniform" and low <= 0:
            raise ArgumentError(f"{where}.range: log_uniform needs 0 < lo, got [{low}, {high}]")
        return Distribution(kind, low, high)
    if "std" not in spec:
        raise ArgumentError(f"{where}.std: missing; a gaussian needs std >= 0")
    mean = number(where, "mean", spec.get("mean", 0.0))
    std = number(where, "std", spec["std"])
    if std < 0:
        raise ArgumentError(f"{where}.std: expected >= 0, got {std}")
    low, high = pair(where, "clip", spec.get("clip", [-math.inf, math.inf]), finite=False)
    if not low <= mean <= high:
        raise ArgumentError(f"{where}.clip: expected [lo, hi] around the mean {mean}, got [{low}, {high}]")
    return Distribution(kind, low, high, mean, std)


def interval(where: str, spec: dict, schedule: str) -> tuple[int, int] | None:
    """The `interval` field: env steps between firings, for schedule: interval only."""
    if schedule != "interval":
        if "interval" in spec:
            raise ArgumentError(f"{where}.interval: only used with schedule: interval, not {schedule!r}")
        return None
    if "interval" not in spec:
        raise ArgumentError(f"{where}.interval: missing; expected env steps k or [lo, hi]")
    lo, hi = pair(where, "interval", spec["interval"])
    if lo != int(lo) or hi != int(hi) or lo < 1:
        raise ArgumentError(f"{where}.interval: expected whole env steps >= 1, got {spec['interval']}")
    limits.check_size(f"{where}.interval", hi, limits.MAX_COUNT, unit="env steps")  # int64 timers
    return int(lo), int(hi)


def ramp(where: str, spec: dict, operation: str | None = None) -> int | None:
    """The `ramp` field: env steps (each env's, as `interval` counts them) over which the draws
    widen linearly from no change to the term's whole distribution; None if absent."""
    if "ramp" not in spec:
        return None
    steps = spec["ramp"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ArgumentError(f"{where}.ramp: expected whole env steps >= 1, got {steps!r}")
    limits.check_size(f"{where}.ramp", steps, limits.MAX_COUNT, unit="env steps")
    if operation == "abs":
        raise ArgumentError(
            f"{where}.ramp: a ramp widens draws from no change, which operation 'abs' does not have; "
            "expected operation 'scale' or 'add'"
        )
    return steps


def names(where: str, spec: dict, key: str = "objects", regex: bool = True) -> tuple[str, ...] | None:
    """A name, or a list of them (regexes if `regex`), e.g. `objects`; None if absent."""
    objects = spec.get(key)
    if objects is None:
        return None
    objects = [objects] if isinstance(objects, str) else objects
    if not isinstance(objects, list) or not objects or not all(isinstance(o, str) for o in objects):
        what = "a name or regex, or a list of them" if regex else "a name, or a list of names"
        raise ArgumentError(f"{where}.{key}: expected {what}, got {objects!r}")
    for pattern in objects if regex else ():
        try:
            re.compile(pattern)
        except re.error as e:
            raise ArgumentError(f"{where}.{key}: {pattern!r} is not a valid regex ({e})") from None
    return tuple(objects)


def ints(where: str, spec: dict, key: str) -> tuple[int, ...] | None:
    x = spec.get(key)
    if x is None:
        return None
    if not isinstance(x, list) or not x or not all(isinstance(i, int) and not isinstance(i, bool) for i in x):
        raise ArgumentError(f"{where}.{key}: expected a list of ints, got {x!r}")
    return tuple(x)


def flag(where: str, spec: dict, key: str) -> bool:
    x = spec.get(key, False)
    if not isinstance(x, bool):
        raise ArgumentError(f"{where}.{key}: expected true or false, got {x!r}")
    return x
