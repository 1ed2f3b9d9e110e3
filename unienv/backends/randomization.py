"""Domain randomization in the SimBackend contract: per-env model parameters, written by the backend.

Every backend takes the terms' names, shapes, units, minimums and what follows a write (inertia
with mass, servo bias with kp and kd, derived constants after mass, COM or armature) from one
table, `unienv.backends.dr_rules`. `set_dr_param` writes rows by env ids; `set_dr_param_mask`
writes by a mask with static shapes, and reads nothing back on a backend whose capabilities say
`sync_free` (rows out of the term's domain are then left unwritten instead of raising: the
backend's input policy, `checks.DeviceInputs`). Both go through one hook, `_set_dr_mask`.

Invariants: `get_dr_default` is the compiled value, never a randomized one; a term the backend
cannot write raises CapabilityError when it is requested (at construction for `randomize=`);
a write that raises has written nothing.

`SimBackend` inherits this class; an engine implements the hooks at its bottom.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from unienv.backends import checks
from unienv.backends.dr_rules import DRTerm, problems


class Randomization(abc.ABC):
    """The DR methods of SimBackend; see the module docstring."""

    name: str
    num_envs: int
    device: torch.device
    _requested_dr: Sequence[str]
    _dr_compiled: dict[str, torch.Tensor]
    _dtype: torch.dtype
    _inputs: checks.HostInputs | checks.DeviceInputs
    # and SimBackend's methods: _ready, _check_open

    def get_dr_capabilities(self) -> dict[str, DRTerm]:
        """The DR terms this backend can write per env, by name."""
        return dict(self._dr_specs)

    def set_dr_param(self, term: str, env_ids: Any, values: torch.Tensor) -> None:
        """Write a DR term's values (len(env_ids), *term.shape) for those envs.

        Values outside the term's domain (non-finite, below its minimum, a mass
        that had some at 0) raise ArgumentError naming `values`; nothing is written.
        """
        self._ready()
        spec = self._checked_term(term)
        ids, order = checks.checked_ids(env_ids, self.num_envs)
        values = checks.checked_array(values, "values", (len(ids), *spec.shape), self.device)
        if order is not None:
            values = values[order]
        rows = ids.to(self.device)
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        mask[rows] = True
        full = torch.zeros(self.num_envs, *spec.shape, dtype=values.dtype, device=self.device)
        full[rows] = values
        checks.refuse_rows(self._dr_problems(term, full), mask)
        if len(ids):
            self._set_dr_mask(term, mask, full)

    def set_dr_param_mask(self, term: str, mask: Any, values: torch.Tensor) -> torch.Tensor:
        """Write a DR term's values (num_envs, *term.shape) for the envs where `mask`
        (num_envs,) is True; the other rows of `values` are ignored. Returns the
        (num_envs,) bool mask of the rows written.

        The static-shape form of set_dr_param, for the hot path: on a backend whose
        capabilities say `sync_free`, it never waits for the device. Arguments of
        the wrong type, shape or dtype raise, naming them, and change nothing. A
        masked row whose values leave the term's domain (see set_dr_param) is
        refused: where host reads are free (sync_free False) the call raises
        ArgumentError and writes nothing; a sync-free backend, which cannot raise
        on a device value without waiting for it, leaves that row unwritten and
        clears it in the returned mask.
        """
        self._ready()
        spec = self._checked_term(term)
        mask = checks.checked_dr_mask(mask, self.num_envs, self.device)
        values = checks.checked_array(values, "values", (self.num_envs, *spec.shape), self.device)
        problems = self._dr_problems(term, values)
        return self._inputs.write_masked(mask, problems, lambda rows: self._set_dr_mask(term, rows, values))

    def check_dr_param(self, term: str, values: torch.Tensor) -> None:
        """Raise ArgumentError naming `values` if a row of values (n, *term.shape) is one
        that set_dr_param refuses; writes nothing. Reads the device: for the cold path
        (DR checks its configured ranges with it before anything runs)."""
        self._check_open()
        spec = self._checked_term(term)
        n = len(values) if isinstance(values, torch.Tensor) and values.ndim else 1
        values = checks.checked_array(values, "values", (n, *spec.shape), self.device)
        checks.refuse_rows(
            self._dr_problems(term, values), torch.ones(n, dtype=torch.bool, device=self.device)
        )

    def get_dr_param(self, term: str, env_ids: Any = None) -> torch.Tensor:
        """Current values of a DR term, (len(env_ids), *term.shape), float64 on the CPU."""
        self._ready()
        self._checked_term(term)
        values = self._dr_values(term)
        if env_ids is not None:
            ids, order = checks.checked_ids(env_ids, self.num_envs)
            if order is not None:  # give rows back in the caller's order
                ids = ids[torch.argsort(order)]
            values = values[ids.to(values.device)]
        return values.to("cpu", torch.float64, copy=True)

    def get_dr_default(self, term: str) -> torch.Tensor:
        """The compiled value of a DR term, (*term.shape); never a randomized one."""
        self._check_open()
        self._checked_term(term)
        return self._dr_default(term)

    @functools.cached_property
    def _dr_specs(self) -> Mapping[str, DRTerm]:
        return dict(self._dr_terms())

    def _checked_term(self, term: str) -> DRTerm:
        return checks.checked_term(self.name, term, self._dr_specs, self._requested_dr)

    def _validate_randomize(self) -> None:
        """Check `randomize=` against the backend's terms (call from __init__)."""
        checks.checked_randomize(self.name, self._requested_dr, self._dr_specs)

    def _dr_problems(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """(rows, what is wrong) for each rule of the term (`dr_rules.problems`) and of the
        engine (`_dr_limits`) that values (n, *shape) break; on the device, no host read."""
        if term not in self._dr_compiled:
            self._dr_compiled[term] = self._dr_default(term).to(self.device)
        values = values.to(self._dtype)  # a value beyond the backend's range becomes inf: refused
        found = problems(term, values, self._dr_compiled[term]) + self._dr_limits(term, values)
        return [(rows, f"values: {message}") for rows, message in found]

    @abc.abstractmethod
    def _dr_terms(self) -> Mapping[str, DRTerm]: ...

    @abc.abstractmethod
    def _set_dr_mask(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """Write values (num_envs, *shape) where mask (rows checked valid), with what follows
        them (`dr_rules`); on a sync-free backend, without reading the device."""

    @abc.abstractmethod
    def _dr_values(self, term: str) -> torch.Tensor:
        """Every env's current values of a term, (num_envs, *shape), on the device."""

    @abc.abstractmethod
    def _dr_default(self, term: str) -> torch.Tensor: ...

    def _dr_limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """(rows, message) for values the engine cannot take beyond the table's rules."""
        return []
