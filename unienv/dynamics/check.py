"""Agreement of two DynamicsModel implementations of one scene at random states.

`agreement(a, b, samples, seed)` evaluates both at the same random (q, v, a) and returns one
row per quantity with the relative error max|x_a - x_b| / max|x_b| (float64). The quantities:
M, c, g, C v (the velocity part of c), C (as a matrix), RNEA, ABA, frame placements, frame
Jacobians (all frames), and, for each model, the regressor identity Y theta = RNEA.

C is compared as a matrix only where both factorizations are defined the same way (the
models without free or ball joints, where v = dq/dt); elsewhere the row says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from unienv.dynamics.model import BALL, FREE, DynamicsModel

TOLERANCE = 1e-8


@dataclasses.dataclass(frozen=True)
class Row:
    quantity: str
    error: float | None  # None where not compared
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None or self.error < TOLERANCE


def relative_error(x: np.ndarray, reference: np.ndarray) -> float:
    """max|x - reference| / max|reference| (the absolute error if reference is all zeros)."""
    scale = float(np.abs(reference).max(initial=0.0))
    err = float(np.abs(np.asarray(x) - reference).max(initial=0.0))
    return err / scale if scale > 0 else err


def random_state(model: DynamicsModel, samples: int, seed: int) -> tuple[np.ndarray, ...]:
    """q from random_configuration, v and a standard normal, (samples, ...) each."""
    rng = np.random.default_rng(seed)
    q = model.random_configuration(samples, rng)
    return q, rng.normal(size=(samples, model.nv)), rng.normal(size=(samples, model.nv))


def agreement(a: DynamicsModel, b: DynamicsModel, samples: int = 8, seed: int = 0) -> list[Row]:
    """The rows of the agreement table of `a` against `b` (the reference)."""
    if (a.nq, a.nv, a.frame_names) != (b.nq, b.nv, b.frame_names):
        raise ValueError("a, b: the two models do not have the same layout (nq, nv, frames)")
    q, v, acc = random_state(b, samples, seed)
    tau = b.inverse_dynamics(q, v, acc)
    c_v = b.bias(q, v) - b.gravity(q)
    rows = [
        Row("M(q)", relative_error(a.mass_matrix(q), b.mass_matrix(q))),
        Row("c(q,v)", relative_error(a.bias(q, v), b.bias(q, v))),
        Row("g(q)", relative_error(a.gravity(q), b.gravity(q))),
        Row("C(q,v) v", relative_error(np.einsum("...ij,...j->...i", a.coriolis_matrix(q, v), v), c_v)),
    ]
    if any(t in (FREE, BALL) for t in b.joint_type):
        rows.append(Row("C(q,v)", None, "not unique with free/ball joints; C v compared"))
    else:
        rows.append(Row("C(q,v)", relative_error(a.coriolis_matrix(q, v), b.coriolis_matrix(q, v))))
    rows += [
        Row("RNEA", relative_error(a.inverse_dynamics(q, v, acc), tau)),
        Row("ABA", relative_error(a.forward_dynamics(q, v, tau), acc)),
        Row("frames", relative_error(a.frame_placements(q), b.frame_placements(q))),
        Row(
            "jacobians",
            max(
                relative_error(a.frame_jacobian(q, f), b.frame_jacobian(q, f))
                for f in range(len(b.frame_names))
            ),
        ),
        Row("regressor", relative_error(a.regressor(q, v, acc), b.regressor(q, v, acc))),
        Row("theta", relative_error(a.inertial_parameters(), b.inertial_parameters())),
    ]
    for name, model in ((type(a).__name__, a), (type(b).__name__, b)):
        y_theta = model.regressor(q, v, acc) @ model.inertial_parameters()
        rows.append(
            Row(f"Y theta = RNEA ({name})", relative_error(y_theta, model.inverse_dynamics(q, v, acc)))
        )
    return rows


def format_table(title: str, rows: list[Row]) -> str:
    lines = [title, f"{'quantity':<34} {'rel. error':>11}  status", "-" * 56]
    for r in rows:
        err = "-" if r.error is None else f"{r.error:.2e}"
        status = r.note if r.error is None else ("ok" if r.ok else f"FAIL (>= {TOLERANCE:g})")
        lines.append(f"{r.quantity:<34} {err:>11}  {status}")
    return "\n".join(lines)
