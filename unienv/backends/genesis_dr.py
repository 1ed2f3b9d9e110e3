"""Domain randomization on Genesis: MuJoCo's model fields per env, handed to Genesis's setters.

Model: DR writes follow the rules of `dr_rules` on per-env float64 copies of the MuJoCo model
fields (mass with inertia, gainprm and biasprm for kp and kd), made from the compiled values
on first use; those copies are the values the backend reports. After a write, every env's
values of the changed fields go to Genesis's setters with the full env index, so a write reads
nothing back from the device (no host sync), whichever rows it changed.

Conversions at this boundary: Genesis scales a geom's compiled sliding friction by a per-env
ratio and keeps torsional and rolling friction global (`friction_problems` refuses a value
Genesis cannot hold); its actuators act in joint space with gain and bias per dof, so MuJoCo's
gear is folded in (`GenesisDR.push_actuators`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from unienv.backends.dr_rules import RULES, ModelDR


def friction_problems(
    values: torch.Tensor, compiled: torch.Tensor, rolling: torch.Tensor
) -> list[tuple[torch.Tensor, str]]:
    """(rows, message) for geom_friction values (n, ngeom, 3) Genesis cannot take: torsional or
    rolling friction away from the compiled value (`compiled`, (ngeom, 3)) where condim makes
    it matter (`rolling`, (ngeom, 2) bool), or sliding friction made non-zero from zero."""
    x = values.to(torch.float64)
    changed = ((x[..., 1:] != compiled[:, 1:]) & rolling).flatten(1).any(1)
    from_zero = ((compiled[:, 0] == 0) & (x[..., 0] != 0)).any(1)
    return [
        (
            changed | from_zero,
            "genesis randomizes sliding friction only: torsional/rolling friction must stay at the "
            "compiled values on geoms with condim >= 4/6, and a geom with zero friction must stay at zero",
        )
    ]


class GenesisDR:
    """The per-env field copies of one built Genesis scene and their pushes to its solver."""

    def __init__(
        self,
        model_dr: ModelDR,
        mj: Any,
        solver: Any,
        body_link: np.ndarray,
        geom_gs: np.ndarray,
        friction0: torch.Tensor,
        actuators: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        num_envs: int,
        dtype: torch.dtype,
        device: torch.device,
    ):
        """`actuators`: each actuator's dof, gear and whether it is a servo (affine bias)."""
        self._dr, self._solver, self._friction0 = model_dr, solver, friction0
        self._act_dofs, self._gear, self._servo = actuators
        self._n, self._dtype, self._device = num_envs, dtype, device
        self._fields: dict[str, torch.Tensor] = {}
        bodies = np.flatnonzero(body_link >= 0)
        self._bodies = torch.as_tensor(bodies, device=device)
        self._links = torch.as_tensor(body_link[bodies], device=device)
        geoms = np.flatnonzero(geom_gs >= 0)
        self._geoms = torch.as_tensor(geoms, device=device)
        self._geoms_gs = torch.as_tensor(geom_gs[geoms], device=device)
        self._bias0 = torch.as_tensor(mj.actuator_biasprm[:, :3], dtype=torch.float64, device=device)
        self._envs = torch.arange(num_envs, device=device)

    def field(self, name: str) -> torch.Tensor:
        """The per-env (num_envs, ...) float64 copy of a MuJoCo model field, compiled values first."""
        if name not in self._fields:
            compiled = torch.as_tensor(self._dr.field(name), dtype=torch.float64, device=self._device)
            self._fields[name] = compiled.expand(self._n, *compiled.shape).clone()
        return self._fields[name]

    def values(self, term: str) -> torch.Tensor:
        return self._dr.read(term, self.field(RULES[term].field))

    def write(self, term: str, mask: torch.Tensor, values: torch.Tensor) -> None:
        """The table's writes on the field copies, then every env's values of the changed
        fields handed to Genesis with the full env index (no per-row indexing, no host read)."""
        self._dr.write(term, mask, values, self.field)
        for field in dict.fromkeys(
            "actuator" if f.startswith("actuator_") else f for f in RULES[term].fields
        ):
            self._push(field)

    def _push(self, field: str) -> None:
        sol, envs, dtype = self._solver, self._envs, self._dtype
        if field == "actuator":
            self.push_actuators()
        elif field == "geom_friction":
            if len(self._geoms):  # Genesis's per-env friction ratio scales the compiled sliding friction
                compiled = self._friction0[self._geoms, 0]
                sliding = self.field(field)[:, self._geoms, 0]
                ratio = torch.where(compiled > 0, sliding / compiled.clamp_min(1e-300), 1.0)
                sol.set_geoms_friction_ratio(ratio.to(dtype), self._geoms_gs, envs)
        elif field == "opt.gravity":
            sol.set_gravity(self.field(field).to(dtype), envs)
        elif field.startswith("dof_"):
            getattr(sol, "set_" + field.replace("dof_", "dofs_"))(self.field(field).to(dtype), None, envs)
        else:  # body_mass, body_inertia (principal moments), body_ipos: per link
            # engine sync: Genesis's link setters read the link index on the host when it is a
            # CPU tensor (one read per call on the CPU device; none on CUDA outside its debug mode)
            value = self.field(field)[:, self._bodies].to(dtype)
            if field == "body_mass":
                sol.set_links_mass(value, self._links, envs)
            elif field == "body_inertia":
                sol.set_links_inertia(torch.diag_embed(value), self._links, envs)
            else:
                sol.set_links_COM(value, self._links, envs)

    def push_actuators(self) -> None:
        """MuJoCo's gains in Genesis's joint space: force = gear * (kp * ctrl + b1 * gear * q + b2 * gear * qdot).

        Only servos (affine bias) take the bias of the field copies: MuJoCo computes no bias for
        a motor, whose kd is kept but acts on nothing.
        """
        gear = self._gear.to(torch.float64)
        gain = gear * self.field("actuator_gainprm")[..., 0]
        bias = torch.where(self._servo[:, None], self.field("actuator_biasprm")[..., :3], self._bias0)
        bias = bias * torch.stack([gear, gear * gear, gear * gear], -1)
        self._solver.set_dofs_act_gain(gain.to(self._dtype), self._act_dofs, self._envs)
        self._solver.set_dofs_act_bias(*bias.to(self._dtype).unbind(-1), self._act_dofs, self._envs)
