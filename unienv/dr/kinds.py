"""The kinds of DR term, one class each, in one registry (`KINDS`).

A kind class owns everything about its terms: the config fields it accepts and
how they are read and checked (`parse`, cold, the config alone); how a term binds
to a backend and a task (`__init__`, cold, every check that needs them); what it
does when its schedule fires (`apply`) and at the other hooks (`reset`,
`reset_state`, `act`, `observe`, `fired`); its values per env (`value`, columns
named by `labels`) and the range of its draws (`low`, `high`).

The manager (`unienv.dr.DomainRandomization`) schedules and delegates: it calls
`apply(rows)` at startup, at each reset, or at each interval firing, as the term's
`schedule` says, and every hook at its time; it keeps what terms share (the
current value of each backend parameter written, the observation noise offset,
the ring of past actions). A hook takes `unienv.utils.rows.Rows`, so one hook serves
both execution models (host ids, device masks), with no host read on the second.

Adding a kind: one class here (its `name`, `params`, `fields`, `parse`, binding and
hooks) and one line in `KINDS`.

Invariants, per term: it draws only from its own per-env stream (`random`); a
value is made from the compiled default (or the task's reset state), never from
its last sample; its columns (`cols`, in what `owns` names) are its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from unienv.backends.base import DR_TERMS, SimBackend
from unienv.dr import spec as read
from unienv.dr.spec import OPERATIONS, SAMPLED, SCHEDULES, Term, operate
from unienv.errors import ArgumentError, CapabilityError, unknown_name
from unienv.utils import limits
from unienv.utils.random import EnvRandom
from unienv.utils.rows import Rows

F64 = torch.float64
Delayed = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class Kind:
    """One kind of DR term (the class) and one term of it bound to a backend (an instance).

    Attributes of a bound term: `term`, `random` (its per-env streams), `cols` (the
    flat entries it writes: parameter entries, observation or state columns), `labels`
    (a name per column), `value` ((num_envs, E) its current values, see
    `DomainRandomization.params`), `low`/`high` (its smallest and largest draw so far,
    0-d on the device), `countdown` ((num_envs,) env steps to its next firing, for
    schedule: interval) and `age` (0-d, env steps so far, for a term with a `ramp`).
    """

    name: ClassVar[str]
    """The registry key; `Term.kind` of this kind's terms."""
    params: ClassVar[tuple[str, ...]]
    """The values of a term's `param` field that make it this kind."""
    fields: ClassVar[tuple[str, ...]]
    """The fields a term of this kind accepts; any other is an error."""
    history: int = 0
    """How many steps of actions (this step's included) the term keeps in the manager's ring;
    one term of a config at most may keep any."""

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        """The term of `spec` (plain values, its fields already checked against `fields`)."""
        raise NotImplementedError

    @classmethod
    def backend_param(cls, term: Term) -> str | None:
        """The backend DR parameter the term writes (named in the backend's `randomize=`)."""
        return None

    def __init__(self, term: Term, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        """Bind term to backend and task (cold: every check); `current` is the manager's
        {param: (num_envs, *shape) float64} of the backend parameters' current values,
        filled at startup."""
        self.term = term
        self.num_envs, self.device = backend.num_envs, backend.device
        cols, labels, self.value = self.bind(backend, task, current)
        self.cols = torch.as_tensor(cols, dtype=torch.int64, device=self.device)
        self.labels = tuple(labels)
        self.random = EnvRandom(self.num_envs, self.device)
        self.low = torch.tensor(math.inf, dtype=F64, device=self.device)
        self.high = torch.tensor(-math.inf, dtype=F64, device=self.device)
        self.countdown: torch.Tensor | None = None
        # env steps taken so far, for a term with a ramp (the manager counts them)
        self.age = torch.zeros((), dtype=torch.int64, device=self.device) if term.ramp else None

    def bind(
        self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]
    ) -> tuple[Sequence[int], Sequence[str], torch.Tensor]:
        """Check the term against backend and task, keep what its hooks need; returns its
        columns, their labels and its initial values (num_envs, E)."""
        raise NotImplementedError

    @property
    def owns(self) -> str | None:
        """What `cols` index, for the check that every entry has one term (None: nothing
        another term could write)."""
        return None

    # ---- hooks (the manager calls each at its time; a kind overrides those it acts in) ---------

    def startup(self) -> None:
        """Cold, once the backend is built and the written parameters' values are read."""

    def apply(self, rows: Rows) -> None:
        """The draw the term's schedule fires (at startup, at reset, at an interval): for
        the envs of rows."""

    def reset(self, rows: Rows) -> None:
        """At the reset of the envs of rows, before their state is set, after `apply`."""

    def reset_state(self, rows: Rows, state: dict[str, torch.Tensor]) -> None:
        """Change the reset state {"qpos": (R, nq), "qvel": (R, nv)}, aligned with rows, by
        replacing its tensors (never writing into them)."""

    def act(self, actions: torch.Tensor, delayed: Delayed) -> torch.Tensor:
        """The actions to apply this step, from those the terms before it made; a term that
        keeps a `history` calls delayed(actions, d) once: it records actions as this step's and
        gives each env's of d[i] steps ago."""
        return actions

    def observe(self, rows: Rows, offset: torch.Tensor) -> None:
        """Write the term's columns of the observation offset (num_envs, obs_dim) anew for rows."""

    @classmethod
    def fired(cls, terms: list[tuple[Kind, torch.Tensor]]) -> None:
        """After a step's interval firings, before its physics: the terms of this kind that
        fired, each with its (num_envs,) mask of envs due, act together."""

    # ---- draws ----------------------------------------------------------------------------------

    @property
    def neutral(self) -> float:
        """The draw that changes nothing: 1 for operation scale, 0 for add (and a push)."""
        return 1.0 if self.term.operation == "scale" else 0.0

    def sample(self, rows: Rows, width: int) -> torch.Tensor:
        """(rows, width) draws of the term's distribution, noted in the range of draws; with a
        `ramp`, moved toward no change by the share of the ramp still to come."""
        x = self.term.distribution.sample(rows.sampler(self.random), (width,))
        if self.term.ramp:
            reach = (self.age.to(F64) / self.term.ramp).clamp(max=1.0)
            x = self.neutral + reach * (x - self.neutral)
        return self.seen(rows, x)

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
        """Env steps to the next firing, per row, uniform on the term's `interval`."""
        lo, hi = self.term.interval
        return rows.sampler(self.random).integers((), lo, hi + 1)


class Model(Kind):
    """A backend DR parameter (`unienv.backends.DR_TERMS`: body_mass, geom_friction, ...) on
    the entries picked by `objects` and the components picked by `axes`; x drawn per env,
    and per entry unless `shared`; the value is `operation` applied to the compiled default."""

    name = "model"
    params = DR_TERMS
    fields = SAMPLED + ("objects", "axes", "operation", "schedule", "interval", "shared")

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        schedule = read.choice(where, spec, "schedule", SCHEDULES, "reset")
        operation = read.choice(where, spec, "operation", OPERATIONS, None)
        return Term(
            name,
            spec["param"],
            cls.name,
            distribution=read.distribution(where, spec),
            operation=operation,
            schedule=schedule,
            interval=read.interval(where, spec, schedule),
            objects=read.names(where, spec),
            axes=read.ints(where, spec, "axes"),
            shared=read.flag(where, spec, "shared"),
            ramp=read.ramp(where, spec, operation),
        )

    @classmethod
    def backend_param(cls, term: Term) -> str | None:
        return term.param

    def bind(self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        term, where = self.term, f"dr.{self.term.name}"
        caps = backend.get_dr_capabilities()
        if term.param not in caps:
            raise CapabilityError(
                f"{where}: the {backend.name} backend cannot randomize {term.param!r} "
                f"(it can: {', '.join(caps) or 'nothing'})"
            )
        spec = caps[term.param]
        default = backend.get_dr_default(term.param).to(backend.device, F64)
        indexed = spec.index != ""
        count = spec.shape[0] if indexed else 1
        width = int(np.prod(spec.shape[1:] if indexed else spec.shape))
        vector = len(spec.shape) == (2 if indexed else 1)
        if not indexed and term.objects is not None:
            raise ArgumentError(f"{where}.objects: {term.param} has no per-object entries; remove objects")
        if term.axes is not None and not vector:
            raise ArgumentError(f"{where}.axes: {term.param} entries are scalars; remove axes")
        axes = term.axes if term.axes is not None else tuple(range(width))
        if any(not 0 <= a < width for a in axes) or len(set(axes)) != len(axes):
            raise ArgumentError(
                f"{where}.axes: expected distinct components in [0, {width}), got {list(axes)}"
            )
        entries = _entries(backend, where, spec.index, term.objects, count) if indexed else [(0, term.param)]
        cols, labels = [], []
        for entry, label in entries:
            for a in axes:
                cols.append(entry * width + a)
                labels.append(f"{label}[{a}]" if vector else label)
        cols_t = torch.as_tensor(cols, dtype=torch.int64, device=backend.device)
        self.base = default.reshape(-1)[cols_t]  # the compiled default of the entries
        _check_physical(backend, where, term, default, cols_t)
        self.backend, self.current = backend, current
        written = self.base.expand(backend.num_envs, len(cols)).clone()
        return cols, labels, written  # value: the values written

    @property
    def owns(self) -> str | None:
        return self.term.param

    def apply(self, rows: Rows) -> None:
        t = self.term
        value = operate(t.operation, self.base, self.draw(rows))
        current = self.current[t.param]
        rows.put(current.view(self.num_envs, -1), value, self.cols)
        self.backend.set_dr_param_mask(t.param, rows.mask, current)
        rows.put(self.value, value)


class ObsNoise(Kind):
    """Noise added to observation columns, drawn afresh for every observation, plus a
    per-episode bias uniform in [-bias, bias] per column. The columns are the named blocks
    of `blocks` (`Task.observation_layout`, in observation order), or `indices: [start,
    stop)`, or every column."""

    name = "obs_noise"
    params = ("obs_noise",)
    fields = ("param", "distribution", "range", "std", "indices", "blocks", "bias")

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        dist = read.distribution(where, spec, kinds=("gaussian", "uniform"))
        indices = read.ints(where, spec, "indices")
        if indices is not None and (len(indices) != 2 or not 0 <= indices[0] < indices[1]):
            raise ArgumentError(
                f"{where}.indices: expected [start, stop) with 0 <= start < stop, got {indices}"
            )
        blocks = read.names(where, spec, "blocks", regex=False)
        if blocks is not None and indices is not None:
            raise ArgumentError(f"{where}: expected blocks or indices, not both")
        if blocks is not None and len(set(blocks)) != len(blocks):
            raise ArgumentError(f"{where}.blocks: expected distinct block names, got {list(blocks)}")
        bias = read.number(where, "bias", spec.get("bias", 0.0))
        if bias < 0:
            raise ArgumentError(f"{where}.bias: expected a half-width >= 0, got {bias}")
        return Term(
            name,
            "obs_noise",
            cls.name,
            distribution=dist,
            schedule="step",
            indices=indices,
            blocks=blocks,
            bias=bias,
        )

    def bind(self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        term, where = self.term, f"dr.{self.term.name}"
        obs_dim = int(np.prod(task.single_observation_space.shape))
        obs_dtype = task.single_observation_space.dtype
        if term.blocks is not None:
            cols, labels = _block_columns(where, task, term.blocks, obs_dim)
        else:
            start, stop = term.indices if term.indices is not None else (0, obs_dim)
            if stop > obs_dim:
                raise ArgumentError(
                    f"{where}.indices: the observation has {obs_dim} columns, got [{start}, {stop})"
                )
            cols, labels = range(start, stop), [f"obs[{i}]" for i in range(start, stop)]
        reach, limit = term.distribution.reach() + term.bias, float(np.finfo(obs_dtype).max) / 2
        if reach > limit:  # noise beyond it would make observations inf
            raise ArgumentError(
                f"{where}: noise up to {reach:.3g} does not fit the observation's "
                f"{np.dtype(obs_dtype).name} (expected at most {limit:.3g})"
            )
        bias = torch.zeros(backend.num_envs, len(cols), dtype=F64, device=backend.device)
        return cols, labels, bias  # value: the episode's bias

    @property
    def owns(self) -> str | None:
        return "observation"

    def reset(self, rows: Rows) -> None:
        if self.term.bias > 0:
            bias = rows.sampler(self.random).uniform((len(self.cols),), -self.term.bias, self.term.bias)
            rows.put(self.value, self.seen(rows, bias))

    def observe(self, rows: Rows, offset: torch.Tensor) -> None:
        fresh = self.term.distribution.sample(rows.sampler(self.random), (len(self.cols),))
        rows.put(offset, fresh + rows.take(self.value), self.cols)


class ActionLatency(Kind):
    """Env i applies the action of d_i steps ago (zero actions before its first d_i), d_i
    uniform on the integers of `range: [lo, hi]`, drawn at startup or at each reset."""

    name = "action_latency"
    params = ("action_latency",)
    fields = ("param", "range", "schedule")
    max_delay = 1 << 16
    """The longest delay, in env steps: the ring keeps hi + 1 actions per env (its memory is
    checked too, when the env's size is known); no robot's latency is longer."""

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        low, high = read.value_range(where, spec)
        if low != int(low) or high != int(high) or low < 0:
            raise ArgumentError(
                f"{where}.range: expected whole steps [lo, hi] with 0 <= lo, got {spec['range']}"
            )
        limits.check_size(f"{where}.range", high, cls.max_delay, low=0, unit="steps")
        schedule = read.choice(where, spec, "schedule", ("startup", "reset"), "reset")
        return Term(name, "action_latency", cls.name, schedule=schedule, delay=(int(low), int(high)))

    def bind(self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        self.history = self.term.delay[1] + 1
        return [0], ("steps",), torch.zeros(backend.num_envs, 1, dtype=torch.int64, device=backend.device)

    def apply(self, rows: Rows) -> None:
        lo, hi = self.term.delay
        rows.put(self.value, self.seen(rows, rows.sampler(self.random).integers((1,), lo, hi + 1)))

    def act(self, actions: torch.Tensor, delayed: Delayed) -> torch.Tensor:
        return delayed(actions, self.value[:, 0])


class Push(Kind):
    """A velocity change dv (world frame, m/s) of `body` and its subtree on the world axes
    `axes`, at intervals, delivered as the force m*dv/T at the body's COM during one env
    step of T s; m is the subtree's current (randomized) mass."""

    name = "push"
    params = ("push",)
    fields = SAMPLED + ("body", "axes", "interval")

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        if not isinstance(spec.get("body"), str):
            raise ArgumentError(
                f"{where}.body: expected the name of the body to push, got {spec.get('body')!r}"
            )
        axes = read.ints(where, spec, "axes") or (0, 1, 2)
        if not set(axes) <= {0, 1, 2} or len(set(axes)) != len(axes):
            raise ArgumentError(f"{where}.axes: expected distinct world axes among 0, 1, 2, got {list(axes)}")
        return Term(
            name,
            "push",
            cls.name,
            distribution=read.distribution(where, spec),
            schedule="interval",
            interval=read.interval(where, spec, "interval"),
            axes=axes,
            body=spec["body"],
            ramp=read.ramp(where, spec),
        )

    def bind(self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        term, where = self.term, f"dr.{self.term.name}"
        if not backend.get_capabilities().body_wrench:
            raise CapabilityError(
                f"{where}: the {backend.name} backend cannot apply body wrenches for a push"
            )
        self.body = int(_match(where, "body", (term.body,), backend.names("body"), {0})[0])
        parent = backend.info.body_parent
        subtree = [b for b in range(len(parent)) if _descends(b, self.body, parent)]
        self.subtree = torch.as_tensor(subtree, device=backend.device)  # it and its descendants
        self.backend, self.current, self.step_seconds = backend, current, float(task.dt)
        dv = torch.zeros(backend.num_envs, 3, dtype=F64, device=backend.device)
        return term.axes, "xyz", dv  # value: the last dv commanded

    def startup(self) -> None:
        if "body_mass" not in self.current:  # not randomized: the compiled masses
            masses = torch.as_tensor(self.backend.info.body_mass, dtype=F64, device=self.device)
            self.current["body_mass"] = masses.expand(self.num_envs, -1)

    def apply(self, rows: Rows) -> None:
        x = self.sample(rows, len(self.cols))
        dv = torch.zeros(len(x), 3, dtype=F64, device=self.device)
        dv[:, self.cols] = x
        rows.put(self.value, dv)

    @classmethod
    def fired(cls, terms: list[tuple[Kind, torch.Tensor]]) -> None:
        """One wrench for this step: force m*dv/T on each pushed body where due, zero elsewhere."""
        first = terms[0][0]
        bodies = sorted({b.body for b, _ in terms})
        force = torch.zeros(first.num_envs, len(bodies), 3, dtype=F64, device=first.device)
        masses = first.current["body_mass"]
        for b, due in terms:
            mass = masses[:, b.subtree].sum(1, keepdim=True)
            force[:, bodies.index(b.body)] += torch.where(due[:, None], mass * b.value / b.step_seconds, 0.0)
        first.backend.apply_body_wrench(np.asarray(bodies), force, torch.zeros_like(force))


class InitState(Kind):
    """A change to the task's reset state, `field: qpos | qvel`, on the columns of the joints
    in `objects` (a free joint's position only: quaternions are never perturbed); the value
    is `operation` applied to the task's reset state."""

    name = "init_state"
    params = ("init_state",)
    fields = SAMPLED + ("field", "objects", "operation", "shared")

    @classmethod
    def parse(cls, name: str, where: str, spec: dict) -> Term:
        operation = read.choice(where, spec, "operation", OPERATIONS, "add")
        return Term(
            name,
            "init_state",
            cls.name,
            distribution=read.distribution(where, spec),
            operation=operation,
            objects=read.names(where, spec),
            shared=read.flag(where, spec, "shared"),
            field=read.choice(where, spec, "field", ("qpos", "qvel"), None),
            ramp=read.ramp(where, spec, operation),
        )

    def bind(self, backend: SimBackend, task: Any, current: dict[str, torch.Tensor]):
        term, where, info, joints = self.term, f"dr.{self.term.name}", backend.info, backend.names("joint")
        cols, labels = [], []
        for j in _match(where, "joint", term.objects, joints):
            joint_type = int(info.joint_type[j])  # 0 free, 1 ball, 2 slide, 3 hinge
            if term.field == "qpos":
                if joint_type == 1:
                    raise ArgumentError(
                        f"{where}.objects: {joints[j]!r} is a ball joint; its qpos is a quaternion"
                    )
                start, width = int(info.joint_qpos_adr[j]), 3 if joint_type == 0 else 1
            else:
                start, width = int(info.joint_dof_adr[j]), {0: 6, 1: 3}.get(joint_type, 1)
            cols += range(start, start + width)
            labels += [joints[j] if width == 1 else f"{joints[j]}:{k}" for k in range(width)]
        _check_representable(backend, task, where, term, cols)
        sample = torch.zeros(backend.num_envs, len(cols), dtype=F64, device=backend.device)
        return cols, labels, sample  # value: the last sample

    @property
    def owns(self) -> str | None:
        return self.term.field

    def reset_state(self, rows: Rows, state: dict[str, torch.Tensor]) -> None:
        x = self.draw(rows)
        target = state[self.term.field].clone()
        base = target[:, self.cols].to(F64)
        target[:, self.cols] = rows.where(
            operate(self.term.operation, base, x).to(target.dtype), target[:, self.cols]
        )
        state[self.term.field] = target
        rows.put(self.value, x)


KINDS: dict[str, type[Kind]] = {kind.name: kind for kind in (Model, ObsNoise, ActionLatency, Push, InitState)}
"""Every kind of DR term, by `Term.kind`."""


# ---- binding helpers --------------------------------------------------------------------------


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


def _entries(backend: SimBackend, where: str, index: str, patterns, count: int) -> list[tuple[int, str]]:
    """(entry id, name) along a parameter's index axis, picked by names or regexes."""
    if index == "dof":
        joints, info = backend.names("joint"), backend.info
        width = {0: 6, 1: 3}
        out = []
        for j in _match(where, "joint", patterns, joints):
            start = int(info.joint_dof_adr[j])
            n = width.get(int(info.joint_type[j]), 1)
            out += [(start + k, joints[j] if n == 1 else f"{joints[j]}:{k}") for k in range(n)]
        return out
    if index not in ("body", "geom", "actuator"):
        raise ArgumentError(f"{where}: parameter index kind {index!r} is not one DR knows")
    names = backend.names(index)
    skip = {0} if index == "body" else set()  # the world body is never randomized
    ids = _match(where, index, patterns, names, skip)
    if max(ids, default=-1) >= count:
        raise ArgumentError(f"{where}: {index} ids exceed the parameter's {count} entries")
    return [(i, names[i]) for i in ids]


def _check_physical(
    backend: SimBackend, where: str, t: Term, default: torch.Tensor, cols: torch.Tensor
) -> None:
    """Refuse a range whose extreme values the backend would refuse (the DR table's
    domain, e.g. mass > 0, and the engine's own limits): nothing is clamped later."""
    d = t.distribution
    ends = torch.stack(
        [operate(t.operation, default.reshape(-1)[cols], torch.tensor(x, dtype=F64)) for x in (d.low, d.high)]
    )
    # 0 * inf: a zero default scaled stays zero; an infinite end (an unclipped gaussian) is only far
    ends = torch.nan_to_num(ends, nan=0.0, posinf=1e300, neginf=-1e300)
    rows = default.expand(2, *default.shape).clone()
    rows.reshape(2, -1)[:, cols] = ends
    try:
        backend.check_dr_param(t.param, rows)
    except ArgumentError as e:
        what = f"{d.kind} on [{d.low}, {d.high}] with operation {t.operation!r}"
        reason = str(e).removeprefix("values: ")
        raise ArgumentError(
            f"{where}: {what} can give values the {backend.name} backend refuses: {reason}"
        ) from None


def _check_representable(backend: SimBackend, task: Any, where: str, t: Term, cols: list[int]) -> None:
    """Refuse a reset-state range whose extreme values (from the compiled default qpos, or zero
    velocities) the backend's or the observation's float dtype cannot hold, squared (the
    engine's first step squares them): every reset would give inf observations."""
    d = t.distribution
    reach = d.reach()
    low, high = max(d.low, -reach), min(d.high, reach)  # a gaussian's furthest draws
    if t.field == "qpos":
        base = torch.as_tensor(backend.info.qpos0, dtype=F64)[cols]
    else:
        base = torch.zeros(len(cols), dtype=F64)
    ends = torch.stack([operate(t.operation, base, torch.tensor(x, dtype=F64)) for x in (low, high)])
    obs_dtype = np.dtype(task.single_observation_space.dtype)
    for dtype in (backend.get_capabilities().dtype, obs_dtype if obs_dtype.kind == "f" else None):
        if dtype is not None:
            limits.check_fits(f"{where}.range ({t.operation} on {t.field})", ends, dtype, squared=True)


def _block_columns(where: str, task: Any, blocks: Sequence[str], obs_dim: int) -> tuple[list[int], list[str]]:
    """The observation columns of the named blocks, in observation order, with their labels."""
    layout = getattr(task, "observation_layout", None)
    if layout is None:
        raise ArgumentError(
            f"{where}.blocks: task {task.name!r} names no observation blocks (Task.observation_layout); "
            "expected indices: [start, stop)"
        )
    for block in blocks:
        if block not in layout:
            raise ArgumentError(str(unknown_name(f"observation block in {where}.blocks", block, layout)))
    cols, labels = [], []
    for block, span in layout.items():
        if block not in blocks:
            continue
        if not 0 <= span.start < span.stop <= obs_dim:
            raise ArgumentError(
                f"{where}.blocks: block {block!r} spans [{span.start}, {span.stop}) of an observation of "
                f"{obs_dim} columns"
            )
        width = span.stop - span.start
        cols += range(span.start, span.stop)
        labels += [block if width == 1 else f"{block}[{k}]" for k in range(width)]
    return cols, labels
