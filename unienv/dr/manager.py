"""`DomainRandomization`: the DR terms of one env, bound to its backend, scheduled.

The manager binds each term to its kind's class (`unienv.dr.KINDS`; every check
happens there, before anything runs), then only schedules and delegates: it
fires each term's `apply` when the term's schedule says (startup, each reset,
each interval firing, by per-env timers), and calls each hook at its time. It
keeps what terms share: the current value of every backend parameter written
(read from the backend once, at startup, so no write reads it back), the
observation noise offset, and the ring of past actions that latency reads.

Rows: the manager works on `unienv.utils.rows.Rows`, made by the selector it is given
(`host_rows` where host reads are free, `device_rows` where they are not; the
env chooses once, from the backend's capabilities). The env makes the rows of a
reset once and hands the same object to `reset`, `reset_state` and
`observation`, so the env and its DR always touch the same envs; the manager
makes the rows of its own interval firings with the same selector.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from unienv.backends.base import SimBackend
from unienv.dr.config import backend_params, is_terms, parse, with_roles
from unienv.dr.kinds import KINDS, Kind
from unienv.dr.spec import Term
from unienv.errors import ArgumentError
from unienv.utils import limits
from unienv.utils.rows import Rows, RowSelector, host_rows


class DomainRandomization:
    """The DR terms of one env, bound to its backend; see `unienv.dr`.

    The env calls `startup()` once after the backend is built, `reset(rows)` and
    `reset_state(rows, qpos, qvel)` in each reset, `actions(...)` before each
    physics step and `observation(...)` on each observation. `rows` selects envs
    as `unienv.utils.rows` says: by id where host reads are free, by mask (static
    shapes, no host read) elsewhere, as the selector given at construction makes
    them.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | Sequence[Term],
        backend: SimBackend,
        task: Any,
        seed=None,
        *,
        rows: RowSelector = host_rows,
    ):
        terms = tuple(config) if is_terms(config) else parse(config)
        terms = tuple(with_roles(t, task) for t in terms)
        self.backend = backend
        self.num_envs = n = backend.num_envs
        self.device = dev = backend.device
        self.terms = terms
        self._select = rows
        self._all = rows(torch.ones(n, dtype=torch.bool, device=dev))
        # current values of every backend parameter the terms write (and body_mass for pushes),
        # (N, *shape) float64, read from the backend at startup: no write reads it back
        self._current: dict[str, torch.Tensor] = {}
        self._bound: list[Kind] = [KINDS[t.kind](t, backend, task, self._current) for t in terms]
        _check_disjoint(self._bound)
        keeping = [b.term.name for b in self._bound if b.history]
        if len(keeping) > 1:
            raise ArgumentError(f"dr: one term at most may keep past actions, got {keeping}")
        self._interval = [b for b in self._bound if b.term.schedule == "interval"]
        self._ramped = [b for b in self._bound if b.term.ramp]
        self._observers = _implementing(self._bound, "observe")
        self._actors = _implementing(self._bound, "act")
        self._state_terms = _implementing(self._bound, "reset_state")
        obs_dim = int(np.prod(task.single_observation_space.shape))
        self._obs_offset = torch.zeros(n, obs_dim, dtype=torch.float64, device=dev)
        act_dim = int(np.prod(task.single_action_space.shape))
        slots = max((b.history for b in self._bound), default=0)
        # the last `slots` actions, newest at _head (on the device: a captured step advances it)
        if slots:  # the ring's size comes from a config: bound its memory before allocating it
            keeper = next(b for b in self._bound if b.history)
            limits.check_memory(
                f"dr.{keeper.term.name}.range",
                slots * n * act_dim * torch.float64.itemsize,
                dev,
                f"a ring of the last {slots} actions x {n} envs x {act_dim} float64",
            )
        self._history = torch.zeros(slots, n, act_dim, dtype=torch.float64, device=dev) if slots else None
        self._head = torch.zeros((), dtype=torch.int64, device=dev)
        self._env_index = torch.arange(n, device=dev)
        self.seed(0 if seed is None else seed)

    # ---- seeding and schedules ----------------------------------------------------

    def seed(self, seed: int) -> None:
        """Restart every term's per-env streams from the env seed."""
        for b in self._bound:
            b.random.seed(int(seed) + (zlib.crc32(b.term.name.encode()) << 30))

    def startup(self) -> None:
        """Read the current values of the parameters written, apply the startup terms to
        every env and start the interval timers (cold: after the backend is built)."""
        for param in backend_params(self.terms):
            self._current[param] = self.backend.get_dr_param(param).to(self.device, torch.float64)
        for b in self._bound:
            b.startup()
        for b in self._bound:
            if b.term.schedule == "startup":
                b.apply(self._all)
            if b.term.schedule == "interval":
                b.countdown = b.draw_interval(self._all)

    def reset(self, rows: Rows) -> None:
        """Before the envs of rows have their state set: reset-time draws, timers, the
        terms' per-episode work, and their past actions cleared."""
        for b in self._bound:
            if b.term.schedule == "reset":
                b.apply(rows)
            elif b.term.schedule == "interval":
                rows.put(b.countdown, b.draw_interval(rows))
            b.reset(rows)
        if self._history is not None:
            self._history.masked_fill_(rows.mask[None, :, None], 0.0)

    def reset_state(self, rows: Rows, qpos: torch.Tensor, qvel: torch.Tensor):
        """The task's reset state, qpos (R, nq) and qvel (R, nv) aligned with rows (a row
        per id for host rows, per env for device rows), with the init_state terms applied
        to the envs of rows; other rows come back unchanged, and so do the inputs."""
        if not self._state_terms:
            return qpos, qvel
        state = {"qpos": qpos, "qvel": qvel}
        for b in self._state_terms:
            b.reset_state(rows, state)
        return state["qpos"], state["qvel"]

    def actions(self, actions: torch.Tensor) -> torch.Tensor:
        """Before a physics step: count the step for the ramped terms, fire the interval terms
        where due (pushes among them) and return the actions to apply, delayed per env if there
        is a latency term."""
        for b in self._ramped:
            b.age.add_(1)
        fired: dict[type[Kind], list[tuple[Kind, torch.Tensor]]] = {}
        for b in self._interval:
            b.countdown -= 1
            due = b.countdown <= 0
            rows = self._select(due)
            if rows is None:
                continue
            rows.put(b.countdown, b.draw_interval(rows))
            b.apply(rows)
            fired.setdefault(type(b), []).append((b, due))
        for kind, terms in fired.items():
            kind.fired(terms)
        applied = actions
        for b in self._actors:  # in term order, each on the actions the one before made
            applied = b.act(applied, self._delayed)
        return applied.to(actions.dtype)

    def _delayed(self, actions: torch.Tensor, delay: torch.Tensor) -> torch.Tensor:
        """Record actions as this step's in the ring; each env's actions of delay[i] steps
        ago (zero before its first). Called once a step, by the one term that reads the ring."""
        h, head = self._history, self._head
        head.add_(1).remainder_(len(h))
        h.index_copy_(0, head.view(1), actions[None].to(h.dtype))
        return h[(head - delay) % len(h), self._env_index]

    def observation(self, obs: torch.Tensor, rows: Rows | None = None) -> torch.Tensor:
        """obs plus noise: fresh noise for the envs of rows (None: all), the same as last
        time for the others."""
        if not self._observers:
            return obs
        rows = self._all if rows is None else rows
        for b in self._observers:
            b.observe(rows, self._obs_offset)
        return obs + self._obs_offset.reshape(obs.shape).to(obs.dtype)

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
            out[b.term.name] = (low, high) if low <= high else (float("nan"), float("nan"))
        return out

    def labels(self) -> dict[str, tuple[str, ...]]:
        """The name of each column of `params()`, per term."""
        return {b.term.name: b.labels for b in self._bound}


def _implementing(bound: Sequence[Kind], hook: str) -> list[Kind]:
    """The terms whose kind acts in `hook` (overrides the base class's no-op)."""
    return [b for b in bound if getattr(type(b), hook) is not getattr(Kind, hook)]


def _check_disjoint(bound: Sequence[Kind]) -> None:
    """Every parameter entry, observation column or state column is one term's."""
    owner: dict[tuple[str, int], str] = {}
    for b in bound:
        key = b.owns
        if key is None:
            continue
        for c, label in zip(b.cols.tolist(), b.labels, strict=True):
            if (key, c) in owner:
                raise ArgumentError(
                    f"dr.{b.term.name}: {key} entry {label!r} is already written by dr.{owner[(key, c)]}; "
                    "each entry may have one term"
                )
            owner[(key, c)] = b.term.name
