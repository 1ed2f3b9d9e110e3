"""Inertial-parameter identification by least squares on the joint-torque regressor.

Model. For samples (q_k, v_k, a_k, tau_k) of one robot, inverse dynamics is linear in the
inertial parameters theta (10 per body, see unienv.dynamics.spatial):

    tau_k = Y(q_k, v_k, a_k) theta  [+ armature * a_k]  [+ damping * v_k]

Stacking the samples gives W theta = b. Some bodies may be declared known (their columns move
to the right-hand side with their nominal values); optional per-dof armature and viscous-damping
columns can be estimated with the rest.

Base parameters. W is rank-deficient by structure (a body welded to the world does nothing;
a link's mass is seen only in combinations). On the column-normalized W, a QR decomposition
without pivoting keeps, in parameter order, each column whose component orthogonal to the
columns kept before it has norm above `rank_tol` (Gautier's numerical base-parameter method).
The kept columns W_B give the base parameters beta = theta_B + K theta_D (W_D = W_B K), the
combinations the data determine; a parameter is `identifiable` alone when it is a base column
that no dropped column folds into.

Conditioning check. The condition number of W_B, each column scaled by its size over random
states (so that a column the trajectory leaves near zero counts as unexcited), must be below
`max_condition` (default 1e4), or the trajectory does not excite the base parameters and
identify raises PoorExcitationError rather than return noise.

Full parameters. Least squares determines beta only; the full estimate is the theta nearest to
the prior (the model's own parameters) with K theta = beta. With `consistent=True` each
estimated body's parameters are further constrained to be physically consistent (pseudo-inertia
J = L L^T positive definite: m > 0, I positive definite, triangle inequalities) and fitted by
Levenberg-Marquardt on that factorization, with a small pull (`regularization`) towards the prior for
the directions the data do not see (Wensing, Kim and Slotine 2017; Rucker and Wensing 2022).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from unienv.dynamics import spatial
from unienv.dynamics.model import DynamicsModel, check_names
from unienv.errors import ArgumentError, unknown_name


class PoorExcitationError(ArgumentError):
    """The samples do not excite the base parameters (condition number too large)."""


@dataclasses.dataclass(frozen=True)
class IdentificationResult:
    """What `identify` found; `names` label `parameters`, `identifiable` and `prior`."""

    names: tuple[str, ...]  # "body.m", "body.mcx", ..., "armature[joint]", "damping[joint]"
    parameters: np.ndarray  # full estimate (consistent if asked), nearest the prior
    identifiable: np.ndarray  # bool: determined by the data alone
    prior: np.ndarray
    base_names: tuple[str, ...]  # the base columns, in order
    base_parameters: np.ndarray  # beta = K theta
    base_map: np.ndarray  # K (nbase, len(names))
    condition_number: float
    residual_rms: float  # rms of W theta - b at `parameters`, N*m or N
    consistent: bool

    def __getitem__(self, name: str) -> float:
        """One estimated parameter by name, e.g. result["payload.m"]."""
        if name not in self.names:
            raise unknown_name("parameter", name, self.names)
        return float(self.parameters[self.names.index(name)])


def identify(
    model: DynamicsModel,
    q: Any,
    v: Any,
    a: Any,
    tau: Any,
    *,
    bodies: Sequence[str] | None = None,
    known: Any = None,
    armature: bool = False,
    damping: bool = False,
    consistent: bool = False,
    rank_tol: float = 1e-6,
    max_condition: float = 1e4,
    regularization: float = 1e-6,
) -> IdentificationResult:
    """Estimate inertial parameters from samples q (N, nq), v, a, tau (N, nv).

    bodies: the bodies whose 10 parameters are estimated (default: all, `model.body_names`);
        the others are known and taken from `known` (10 * nbody,), default
        model.inertial_parameters().
    armature, damping: also estimate a per-dof rotor inertia (tau += armature * a) and viscous
        coefficient (tau += damping * v).
    consistent: return physically consistent body parameters (see the module docstring).
    rank_tol: a normalized column whose part independent of the previous ones is smaller is
        not a base column. max_condition: the conditioning check on the base regressor.
    """
    q = _samples(q, "q", model.nq)
    n = len(q)
    v, a, tau = (_samples(x, name, model.nv, n) for x, name in ((v, "v"), (a, "a"), (tau, "tau")))
    theta0 = model.inertial_parameters() if known is None else np.asarray(known, dtype=np.float64)
    if theta0.shape != (model.num_parameters,):
        raise ArgumentError(f"known: expected shape ({model.num_parameters},), got {theta0.shape}")
    chosen = model.body_names if bodies is None else tuple(bodies)
    chosen_ids = check_names(chosen, model.body_names, "body")
    cols = (
        np.concatenate([np.arange(10 * b, 10 * b + 10) for b in chosen_ids])
        if chosen_ids
        else np.zeros(0, int)
    )
    others = np.setdiff1d(np.arange(model.num_parameters), cols)

    dof_names = _dof_names(model)
    names = [f"{model.body_names[b]}.{p}" for b in chosen_ids for p in spatial.PARAMETER_NAMES]
    names += [
        f"{label}[{d}]"
        for label, flag in (("armature", armature), ("damping", damping))
        if flag
        for d in dof_names
    ]
    prior = np.concatenate([theta0[cols], np.zeros(len(names) - len(cols))])

    def columns(q: np.ndarray, v: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """W (selected and extra columns) and the known bodies' part of W theta."""
        y = model.regressor(q, v, a).reshape(len(q) * model.nv, -1)
        extra = [_diagonal_columns(x) for x, flag in ((a, armature), (v, damping)) if flag]
        return np.concatenate([y[:, cols], *extra], axis=1), y[:, others] @ theta0[others]

    w, known_part = columns(q, v, a)
    rhs = tau.reshape(-1) - known_part
    # the structural base columns, from random states (so poor excitation is not mistaken
    # for structure and goes to the conditioning check instead)
    rng = np.random.default_rng(0)
    count = max(20, 2 * len(names) // max(model.nv, 1))
    w_struct, _ = columns(
        model.random_configuration(count, rng),
        rng.normal(size=(count, model.nv)),
        rng.normal(size=(count, model.nv)),
    )
    base, k_map = _base_columns(w_struct, rank_tol)
    if not len(base):
        raise ArgumentError("bodies: none of the selected parameters has an effect on tau")
    # scale each base column by its rms over the random states (its physical size), so that a
    # column the data leave near zero shows up as a small singular value
    scale = np.linalg.norm(w_struct[:, base], axis=0) * np.sqrt(len(w) / len(w_struct))
    sv = np.linalg.svd(w[:, base] / scale, compute_uv=False)
    cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
    if cond > max_condition:
        raise PoorExcitationError(
            f"q, v, a: the base regressor's condition number is {cond:.3g} > max_condition="
            f"{max_condition:g}; excite the robot more (larger, faster, more varied motion)"
        )
    beta = np.linalg.lstsq(w[:, base] / scale, rhs, rcond=None)[0] / scale
    # theta nearest the prior with K theta = beta
    theta = prior + np.linalg.pinv(k_map) @ (beta - k_map @ prior)
    if consistent:
        nbody = len(chosen_ids)
        theta = _consistent_fit(w, rhs, theta, prior, nbody, regularization)
    folded = np.abs(k_map) > 1e-9
    identifiable = np.zeros(len(names), bool)
    for row, col in enumerate(base):
        identifiable[col] = folded[row].sum() == 1
    return IdentificationResult(
        names=tuple(names),
        parameters=theta,
        identifiable=identifiable,
        prior=prior,
        base_names=tuple(names[c] for c in base),
        base_parameters=beta,
        base_map=k_map,
        condition_number=cond,
        residual_rms=float(np.sqrt(np.mean((w @ theta - rhs) ** 2))),
        consistent=consistent,
    )


def _samples(x: Any, name: str, width: int, n: int | None = None) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != width or (n is not None and len(x) != n) or not len(x):
        expected = f"({'N' if n is None else n}, {width})"
        raise ArgumentError(f"{name}: expected shape {expected}, got {x.shape}")
    if not np.isfinite(x).all():
        raise ArgumentError(f"{name}: contains NaN or inf")
    return x


def _dof_names(model: DynamicsModel) -> list[str]:
    names = [""] * model.nv
    widths = {0: 6, 1: 3}
    for j, kind in enumerate(model.joint_type):
        start, width = int(model.joint_dof_adr[j]), widths.get(int(kind), 1)
        for i in range(width):
            names[start + i] = model.joint_names[j] + (f"/{i}" if width > 1 else "")
    return names


def _diagonal_columns(signal: np.ndarray) -> np.ndarray:
    """Rows (n, dof), columns per dof: x[n, i] on row (n, i), zero elsewhere."""
    n, nv = signal.shape
    out = np.zeros((n, nv, nv))
    out[:, np.arange(nv), np.arange(nv)] = signal
    return out.reshape(n * nv, nv)


def _base_columns(w: np.ndarray, rank_tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the base columns and K (nbase, ncols) with W = W_B K (K_B = identity)."""
    norms = np.linalg.norm(w, axis=0)
    live = np.flatnonzero(norms > 1e-10 * norms.max(initial=0.0))  # not round-off alone
    if not len(live):
        return live, np.zeros((0, w.shape[1]))
    norms = np.where(norms > 0, norms, 1.0)
    unit = w / norms
    r = np.linalg.qr(unit[:, live], mode="r")
    base = live[np.abs(np.diag(r)) > rank_tol]
    k_unit = np.linalg.lstsq(unit[:, base], unit, rcond=None)[0]  # on unit columns: O(1)
    k_unit[np.abs(k_unit) < 1e-9] = 0.0
    return base, k_unit * norms[None, :] / norms[base][:, None]


def _consistent_fit(
    w: np.ndarray, rhs: np.ndarray, theta: np.ndarray, prior: np.ndarray, nbody: int, reg: float
) -> np.ndarray:
    """Levenberg-Marquardt on phi (10 per body: the lower-triangular L of J = L L^T, log-diagonal),
    minimizing |W theta(phi) - b|^2 + reg |W|^2 |theta - prior|^2; the armature and damping
    entries stay linear. Starts from the prior where it is consistent, else from theta."""
    r_fac = np.linalg.qr(w, mode="r")  # |W x - b|^2 = |R x - d|^2 + const
    d = np.linalg.lstsq(r_fac.T, w.T @ rhs, rcond=None)[0]
    lam = np.sqrt(reg) * np.linalg.norm(r_fac, 2)
    a_mat = np.concatenate([r_fac, lam * np.eye(len(theta))])
    target = np.concatenate([d, lam * prior])
    split = 10 * nbody

    def unpack(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """theta(phi) and d theta / d phi."""
        th, jac = np.array(phi), np.eye(len(phi))
        tril = np.tril_indices(4)
        for b in range(nbody):
            low = np.zeros((4, 4))
            low[tril] = phi[10 * b : 10 * b + 10]
            low[np.diag_indices(4)] = np.exp(np.diag(low))
            th[10 * b : 10 * b + 10] = spatial.from_pseudo_inertia(low @ low.T)
            for k, (i, j) in enumerate(zip(*tril, strict=True)):
                e = np.zeros((4, 4))
                e[i, j] = low[i, j] if i == j else 1.0
                jac[10 * b : 10 * b + 10, 10 * b + k] = spatial.from_pseudo_inertia(e @ low.T + low @ e.T)
        return th, jac

    def start(b: int) -> np.ndarray:
        block = slice(10 * b, 10 * b + 10)
        consistent = np.linalg.eigvalsh(spatial.pseudo_inertia(prior[block])).min() > 0
        return _factor(prior[block] if consistent else theta[block])

    phi = np.concatenate([start(b) for b in range(nbody)] + [theta[split:]])
    th, jac = unpack(phi)
    cost = float(np.sum((a_mat @ th - target) ** 2))
    mu = 1e-3
    for _ in range(200):  # Levenberg-Marquardt
        g = a_mat @ jac
        hess, grad = g.T @ g, g.T @ (target - a_mat @ th)
        step = np.linalg.solve(hess + mu * np.diag(np.diag(hess) + 1e-12), grad)
        trial, trial_jac = unpack(phi + step)
        trial_cost = float(np.sum((a_mat @ trial - target) ** 2))
        if trial_cost < cost:
            phi, th, jac = phi + step, trial, trial_jac
            done = cost - trial_cost < 1e-10 * cost
            cost, mu = trial_cost, max(mu / 3, 1e-9)
            if done:
                break
        else:
            mu *= 4
            if mu > 1e8:
                break
    return th


def _factor(theta: np.ndarray) -> np.ndarray:
    """phi of the nearest pseudo-inertia with eigenvalues >= 1e-6 of its largest (a start)."""
    j = spatial.pseudo_inertia(theta)
    vals, vecs = np.linalg.eigh(j)
    vals = np.maximum(vals, 1e-6 * max(vals.max(), 1e-9))
    low = np.linalg.cholesky((vecs * vals) @ vecs.T)
    low[np.diag_indices(4)] = np.log(np.diag(low))
    return low[np.tril_indices(4)]
