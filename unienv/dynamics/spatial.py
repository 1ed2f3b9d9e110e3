"""Small rigid-body helpers in NumPy, float64: quaternions, inertial parameters, body regressors.

Conventions used throughout unienv.dynamics:

* quaternions are scalar-first (w, x, y, z) and rotate body to world, as in MuJoCo;
* a spatial vector is written [linear; angular] at a stated point and in a stated frame;
* the 10 inertial parameters of a body are, in this order and in the body frame,

      theta = [m, m*cx, m*cy, m*cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]

  with c the centre of mass and I the rotational inertia about the body-frame *origin*
  (not the COM). This is Pinocchio's `Inertia.toDynamicParameters()` order. Every map here is
  linear in theta, so it is also defined for vectors that are not physical (m <= 0), which is
  what a regressor needs.
"""

from __future__ import annotations

import numpy as np

PARAMETER_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


def skew(x: np.ndarray) -> np.ndarray:
    """The matrix S(x) with S(x) y = x cross y, for x (..., 3)."""
    x = np.asarray(x, dtype=np.float64)
    s = np.zeros(x.shape[:-1] + (3, 3))
    s[..., 0, 1], s[..., 0, 2] = -x[..., 2], x[..., 1]
    s[..., 1, 0], s[..., 1, 2] = x[..., 2], -x[..., 0]
    s[..., 2, 0], s[..., 2, 1] = -x[..., 1], x[..., 0]
    return s


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of unit quaternions (..., 4) in (w, x, y, z) order."""
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    r = np.empty(q.shape[:-1] + (3, 3))
    r[..., 0, 0] = 1 - 2 * (y * y + z * z)
    r[..., 0, 1] = 2 * (x * y - w * z)
    r[..., 0, 2] = 2 * (x * z + w * y)
    r[..., 1, 0] = 2 * (x * y + w * z)
    r[..., 1, 1] = 1 - 2 * (x * x + z * z)
    r[..., 1, 2] = 2 * (y * z - w * x)
    r[..., 2, 0] = 2 * (x * z - w * y)
    r[..., 2, 1] = 2 * (y * z + w * x)
    r[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return r


def inertia_matrix(theta: np.ndarray) -> np.ndarray:
    """The symmetric 3x3 inertia about the origin from theta[..., 4:10]."""
    t = np.asarray(theta, dtype=np.float64)
    ixx, ixy, iyy, ixz, iyz, izz = (t[..., k] for k in range(4, 10))
    return np.stack(
        [
            np.stack([ixx, ixy, ixz], -1),
            np.stack([ixy, iyy, iyz], -1),
            np.stack([ixz, iyz, izz], -1),
        ],
        -2,
    )


def parameters(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """theta (10,) of a body of `mass` with centre of mass `com` (3,) and inertia `inertia_com`
    (3, 3) about the COM, all in the body frame (parallel-axis theorem to the origin)."""
    c = np.asarray(com, dtype=np.float64)
    i_o = np.asarray(inertia_com, dtype=np.float64) + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.array([mass, *(mass * c), i_o[0, 0], i_o[0, 1], i_o[1, 1], i_o[0, 2], i_o[1, 2], i_o[2, 2]])


def _pack(m: np.ndarray, h: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    i = inertia
    return np.concatenate(
        [
            m[..., None],
            h,
            np.stack(
                [i[..., 0, 0], i[..., 0, 1], i[..., 1, 1], i[..., 0, 2], i[..., 1, 2], i[..., 2, 2]], -1
            ),
        ],
        -1,
    )


def transform_matrix(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """The 10x10 matrix A with theta_P = A theta_B, for a body frame B placed in a frame P
    (origin of B at `translation` in P, axes of B given by `rotation` in P).

    m' = m;  h' = R h + m p;  I'_P = R I_O R^T - m S(p)^2 - S(p) S(R h) - S(R h) S(p).
    """
    r, p = np.asarray(rotation, dtype=np.float64), np.asarray(translation, dtype=np.float64)
    basis = np.eye(10)
    m, h, i_o = basis[:, 0], basis[:, 1:4], inertia_matrix(basis)
    rh = h @ r.T
    sp, srh = skew(p), skew(rh)
    i_p = r @ i_o @ r.T - m[:, None, None] * (sp @ sp) - sp @ srh - srh @ sp
    return _pack(m, rh + m[:, None] * p, i_p).T


def body_regressor(omega: np.ndarray, vel: np.ndarray, alpha: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """The (..., 6, 10) matrix Y with [f; n] = Y theta: the net wrench on a body, in its own
    frame at its origin (force f, moment n), for a body-frame spatial velocity (vel, omega)
    and spatial acceleration (acc, alpha), all (..., 3).

    Newton-Euler with h = m c and L = I_O omega + h x vel, p = m vel + omega x h:
      f = m acc + alpha x h + omega x p
      n = I_O alpha + h x acc + omega x L + vel x p
    Gravity enters as an upward acceleration of the base (acc includes -g).
    """
    w, v, dw, dv = (np.asarray(x, dtype=np.float64)[..., None, :] for x in (omega, vel, alpha, acc))
    basis = np.eye(10)
    m, h, i_o = basis[:, 0, None], basis[:, 1:4], inertia_matrix(basis)
    p = m * v + np.cross(w, h)
    ang_mom = np.einsum("kij,...kj->...ki", i_o, np.broadcast_to(w, w.shape[:-2] + (10, 3))) + np.cross(h, v)
    f = m * dv + np.cross(dw, h) + np.cross(w, p)
    i_dw = np.einsum("kij,...kj->...ki", i_o, np.broadcast_to(dw, dw.shape[:-2] + (10, 3)))
    n = i_dw + np.cross(h, dv) + np.cross(w, ang_mom) + np.cross(v, p)
    return np.swapaxes(np.concatenate([f, n], -1), -1, -2)


def pseudo_inertia(theta: np.ndarray) -> np.ndarray:
    """The 4x4 pseudo-inertia J = [[tr(I)/2 1 - I, h], [h^T, m]] of theta (10,).

    theta is physically consistent (a non-negative mass density can realize it) iff J is
    positive semidefinite; J positive definite implies m > 0 and I positive definite
    (Wensing, Kim and Slotine 2017).
    """
    i_o = inertia_matrix(theta)
    j = np.zeros((4, 4))
    j[:3, :3] = 0.5 * np.trace(i_o) * np.eye(3) - i_o
    j[:3, 3] = j[3, :3] = theta[1:4]
    j[3, 3] = theta[0]
    return j


def from_pseudo_inertia(j: np.ndarray) -> np.ndarray:
    """theta (10,) from a pseudo-inertia J (4, 4); the inverse of `pseudo_inertia`."""
    sigma = j[:3, :3]
    i_o = np.trace(sigma) * np.eye(3) - sigma
    return _pack(np.asarray(j[3, 3]), j[:3, 3], i_o)
