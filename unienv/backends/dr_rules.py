"""Domain-randomization rules: one table for every backend.

Each DR term of the contract is one MuJoCo model field (or one column of it),
per env, and a write may have to carry other fields along:

  term              index     field                  follows a write
  body_mass         body      body_mass              body_inertia scaled by mass / compiled mass
                                                     (bodies with a compiled mass); constants
  body_com          body      body_ipos              constants
  geom_friction     geom      geom_friction
  geom_size         geom      geom_size              geom_rbound and geom_aabb (the broadphase's
                                                     bounds), of primitive geoms only
  geom_solref       geom      geom_solref            (contact stiffness and damping: timeconst, dampratio)
  geom_solimp       geom      geom_solimp            (contact impedance: dmin, dmax, width, mid, power)
  dof_damping       dof       dof_damping
  dof_armature      dof       dof_armature           constants
  dof_frictionloss  dof       dof_frictionloss
  actuator_kp       actuator  actuator_gainprm[0]    biasprm[1] = -kp on affine-bias actuators (servos)
  actuator_kd       actuator  -actuator_biasprm[2]
  gravity                     opt.gravity

"constants" are the quantities MuJoCo derives from the model (mj_setConst:
subtree masses, inverse weights, actuator_acc0), which must be recomputed.

`ModelDR` binds the table to one compiled MuJoCo model, on one torch device and
dtype: the terms' shapes and compiled values, and `write`, which puts a term's
values into the model fields for the envs of a mask, follow-ups included, with
torch operations only (no value is read back on the host). mujoco and mjwarp
apply it to their per-env model fields; genesis to per-env copies of the
fields, which it then hands to Genesis's own setters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch


@dataclasses.dataclass(frozen=True)
class DRTerm:
    """A domain-randomization term a backend can write per environment.

    `index` names what the first axis of `shape` runs over ("body", "geom",
    "dof", "actuator", or "" for a term with no per-object axis). Terms with
    `declare=True` must be named in the constructor's `randomize=`.
    """

    name: str
    index: str
    shape: tuple[int, ...]
    unit: str
    declare: bool = False
    minimum: float | None = None  # smallest physical value, e.g. 0 for a mass


@dataclasses.dataclass(frozen=True)
class Rule:
    """How one DR term maps onto a MuJoCo model (see the module docstring's table)."""

    name: str
    index: str
    unit: str
    field: str  # the MuJoCo model field written; "opt.<name>" for an MjOption field
    column: int | None = None  # the column of the field's last axis that holds the term
    sign: float = 1.0  # field = sign * value
    minimum: float | None = None
    positive: bool = False  # entries whose compiled value is > 0 must stay > 0
    scales: str | None = None  # a field scaled per entry by value / compiled value
    servo_bias: int | None = None  # actuator_biasprm column set to -value on affine-bias actuators
    set_const: bool = False  # MuJoCo's derived constants must be recomputed after a write
    bounds: bool = False  # a geom size: its bounding sphere and box (geom_rbound, geom_aabb) follow

    @property
    def fields(self) -> tuple[str, ...]:
        """Every model field a write changes."""
        return (
            (self.field,)
            + ((self.scales,) if self.scales else ())
            + (("actuator_biasprm",) if self.servo_bias is not None else ())
            + (("geom_rbound", "geom_aabb") if self.bounds else ())
        )


RULES = {
    rule.name: rule
    for rule in (
        Rule(
            "body_mass", "body", "kg", "body_mass", minimum=0.0, positive=True, scales="body_inertia",
            set_const=True,
        ),
        Rule("body_com", "body", "m, body frame", "body_ipos", set_const=True),
        Rule("geom_friction", "geom", "sliding, torsional, rolling", "geom_friction", minimum=0.0),
        Rule("geom_size", "geom", "m (MJCF size: half sizes, radius, half length)", "geom_size", minimum=0.0,
             positive=True, bounds=True),
        # MuJoCo mixes two geoms' values by solmix; a negative solref is its direct form
        # (-stiffness, -damping), and a timeconst under 2 substeps is raised to it by MuJoCo
        Rule("geom_solref", "geom", "s and 1 (timeconst, dampratio), or -N/m, -N*s/m", "geom_solref"),
        Rule("geom_solimp", "geom", "1, 1, m, 1, 1 (dmin, dmax, width, midpoint, power)", "geom_solimp", minimum=0.0),
        Rule("dof_damping", "dof", "N*s/m or N*m*s/rad", "dof_damping", minimum=0.0),
        Rule("dof_armature", "dof", "kg or kg*m^2", "dof_armature", minimum=0.0, set_const=True),
        Rule("dof_frictionloss", "dof", "N or N*m", "dof_frictionloss", minimum=0.0),
        Rule(
            "actuator_kp", "actuator", "actuator gain (N/m, N*m/rad)", "actuator_gainprm", column=0,
            minimum=0.0, servo_bias=1,
        ),
        Rule(
            "actuator_kd", "actuator", "velocity feedback gain", "actuator_biasprm", column=2, sign=-1.0,
            minimum=0.0,
        ),
        Rule("gravity", "", "m/s^2", "opt.gravity"),
    )
}  # fmt: skip
"""Every DR term's rule, by name, in documentation order."""

DR_TERMS = tuple(RULES)
"""Every domain-randomization term of the contract, in documentation order."""


def problems(term: str, values: torch.Tensor, compiled: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """(rows (n,) bool, what is wrong) for each rule that values (n, *shape) can break,
    computed on their device without reading anything back; `compiled` (*shape) is
    the term's compiled value."""
    rule = RULES[term]
    flat = values.reshape(len(values), -1)
    out = [(~torch.isfinite(flat).all(1), "contains NaN or inf")]
    # every engine multiplies parameters (masses by inertias and accelerations, gains by states):
    # beyond the square root of the dtype's largest value, a product overflows in the first step
    bound = math.sqrt(torch.finfo(flat.dtype).max)
    out.append(
        (
            (flat.abs() > bound).any(1),
            f"{term} beyond {bound:.3g}, the square root of {str(flat.dtype).removeprefix('torch.')}'s "
            "largest value (the engine's products of it would overflow)",
        )
    )
    if rule.minimum is not None:
        out.append(((flat < rule.minimum).any(1), f"{term} must be >= {rule.minimum} ({rule.unit})"))
    if rule.positive:
        had = compiled.reshape(-1).to(flat.device) > 0
        out.append(
            (
                ((flat <= 0) & had).any(1),
                f"{term} <= 0 where its compiled value is > 0; it must stay > 0 ({rule.unit})",
            )
        )
    return out


class ModelDR:
    """The rules bound to one compiled MuJoCo model, computing in `dtype` on `device`."""

    def __init__(self, model: Any, device: torch.device, dtype: torch.dtype):
        import mujoco

        self.model, self.device, self.dtype = model, torch.device(device), dtype
        self._servo = torch.as_tensor(
            model.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE.value, device=self.device
        )
        self._compiled: dict[str, torch.Tensor] = {}
        self._geom_type = torch.as_tensor(model.geom_type, device=self.device)
        kinds = [mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_SPHERE, mujoco.mjtGeom.mjGEOM_CAPSULE]
        kinds += [mujoco.mjtGeom.mjGEOM_CYLINDER, mujoco.mjtGeom.mjGEOM_ELLIPSOID]
        self._box, self._sphere, self._capsule, self._cylinder, self._ellipsoid = (int(k) for k in kinds)
        primitive = np.isin(model.geom_type, [int(k) for k in kinds])
        self._primitive = torch.as_tensor(primitive, device=self.device)
        self._fixed = np.flatnonzero(~primitive)  # geoms whose size is not their shape
        self._fixed_names = [model.geom(int(i)).name or f"geom {i}" for i in self._fixed]

    def limits(self, term: str, values: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
        """(rows, what is wrong) for values (n, *shape) this model cannot take beyond the
        table's checks: a geom_size write changes primitive geoms only (a mesh's, a plane's or
        a height field's size is not its shape). On the values' device, no host read."""
        if term != "geom_size" or not len(self._fixed):
            return []
        fixed = torch.as_tensor(self._fixed, device=values.device)
        compiled = self._compiled_field("geom_size")[fixed].to(values.device, values.dtype)
        changed = (values[:, fixed] != compiled).any(-1).any(-1)
        names = self._fixed_names[:5] + ["..."] * (len(self._fixed_names) > 5)
        return [(changed, "geom_size changes only box, sphere, capsule, cylinder and ellipsoid geoms; "
                 f"it must keep the compiled size of {', '.join(names)}")]  # fmt: skip

    def field(self, name: str) -> np.ndarray:
        """A compiled model field ("opt.<name>" for an option)."""
        if name.startswith("opt."):
            return np.asarray(getattr(self.model.opt, name[4:]))
        return np.asarray(getattr(self.model, name))

    def shape(self, term: str) -> tuple[int, ...]:
        rule = RULES[term]
        shape = self.field(rule.field).shape
        return shape[:-1] if rule.column is not None else shape

    def terms(self, declare: Iterable[str] = ()) -> dict[str, DRTerm]:
        """Every term as a DRTerm; those in `declare` must be named in randomize=."""
        declare = set(declare)
        return {
            name: DRTerm(name, r.index, self.shape(name), r.unit, name in declare, r.minimum)
            for name, r in RULES.items()
        }

    def default(self, term: str) -> np.ndarray:
        """The term's compiled value, float64 (*shape)."""
        return np.array(self.read(term, self.field(RULES[term].field)), dtype=np.float64)

    @staticmethod
    def read(term: str, field):
        """The term's values out of its model field (a tensor or array, any leading dims)."""
        rule = RULES[term]
        values = field if rule.column is None else field[..., rule.column]
        return values if rule.sign == 1.0 else rule.sign * values

    def write(
        self,
        term: str,
        mask: torch.Tensor,
        values: torch.Tensor,
        field: Callable[[str], torch.Tensor],
    ) -> None:
        """Write values (num_envs, *shape) of a term, and what follows them, into the model
        fields for the rows where mask (num_envs,); `field(name)` is the live
        (num_envs, ...) tensor of a field. Other rows keep their values bit for bit."""
        for name, column, value in self._writes(term, values.to(self.device, self.dtype)):
            target = field(name)
            if column is not None:
                target = target[..., column]
            keep = mask.reshape(-1, *(1,) * (target.ndim - 1))
            value = value.reshape(target.shape) if value.numel() == target.numel() else value  # mjwarp's aabb
            target.copy_(torch.where(keep, value.to(target.dtype), target))

    def _writes(self, term: str, x: torch.Tensor) -> list[tuple[str, int | None, torch.Tensor]]:
        """(field, column or None, value (num_envs, ...)) for every field a write of x changes."""
        rule = RULES[term]
        out = [(rule.field, rule.column, rule.sign * x)]
        if rule.scales is not None:  # e.g. inertia with mass; entries with no compiled value keep theirs
            compiled = self._compiled_field(rule.field)
            ratio = torch.where(compiled > 0, x / compiled.clamp_min(1e-30), torch.ones_like(x))
            scaled = self._compiled_field(rule.scales)
            out.append((rule.scales, None, scaled * ratio.reshape(*ratio.shape, *(1,) * (scaled.ndim - 1))))
        if rule.servo_bias is not None:  # a servo's position feedback is -kp
            bias = self._compiled_field("actuator_biasprm")[:, rule.servo_bias]
            out.append(("actuator_biasprm", rule.servo_bias, torch.where(self._servo, -x, bias)))
        if rule.bounds:
            out += self._bounds(x)
        return out

    def _bounds(self, size: torch.Tensor) -> list[tuple[str, None, torch.Tensor]]:
        """geom_rbound (n, ngeom) and geom_aabb (n, ngeom, 6: centre, half extents) of geom sizes
        (n, ngeom, 3), as MuJoCo's compiler derives them for each primitive; others keep theirs."""
        t, r, h = self._geom_type, size[..., 0], size[..., 1]
        rbound = torch.where(t == self._box, torch.linalg.vector_norm(size, dim=-1), size.amax(-1))
        rbound = torch.where(t == self._sphere, r, rbound)
        rbound = torch.where(t == self._capsule, r + h, rbound)
        rbound = torch.where(t == self._cylinder, torch.sqrt(r * r + h * h), rbound)
        round_ = torch.stack((r, r, torch.where(t == self._capsule, r + h, h)), -1)
        half = torch.where(((t == self._capsule) | (t == self._cylinder))[:, None], round_, size)
        half = torch.where((t == self._sphere)[:, None], r[..., None].expand_as(size), half)
        keep = self._primitive
        aabb = self._compiled_field("geom_aabb")
        rbound = torch.where(keep, rbound, self._compiled_field("geom_rbound"))
        aabb = torch.where(keep[:, None], torch.cat((torch.zeros_like(half), half), -1), aabb)
        return [("geom_rbound", None, rbound), ("geom_aabb", None, aabb)]

    def _compiled_field(self, name: str) -> torch.Tensor:
        if name not in self._compiled:
            self._compiled[name] = torch.as_tensor(self.field(name), dtype=self.dtype, device=self.device)
        return self._compiled[name]
