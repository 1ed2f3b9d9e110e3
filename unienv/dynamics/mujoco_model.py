"""`MujocoDynamics`: the rigid-body terms from MuJoCo's own functions.

One MjModel (the rigid-body model of `load_rigid_body_mjmodel`: no armature, damping,
passive forces, actuators or constraints) and one MjData, reused for every sample. Each
method sets qpos/qvel/qacc and runs the MuJoCo stages it needs:

    mass_matrix        mj_fwdPosition, mj_fullM
    bias, gravity      mj_fwdPosition, mj_fwdVelocity -> qfrc_bias (gravity: v = 0)
    inverse_dynamics   mj_inverse -> qfrc_inverse  (= M a + c with nothing else enabled)
    forward_dynamics   qfrc_applied = tau, mj_forward -> qacc
    frame_placements   mj_kinematics -> xpos/xmat, site_xpos/site_xmat
    frame_jacobian     mj_kinematics, mj_comPos, mj_jacBody / mj_jacSite
    regressor          mj_objectVelocity / mj_objectAcceleration after mj_rnePostConstraint,
                       mj_jacBody; see `_regressor`
    integrate/difference  mj_integratePos / mj_differentiatePos

Not thread-safe: the MjData is shared by all calls on one instance.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np

from unienv.dynamics import spatial
from unienv.dynamics.model import DynamicsModel

_XBODY = mujoco.mjtObj.mjOBJ_XBODY


class MujocoDynamics(DynamicsModel):
    """Rigid-body dynamics computed by MuJoCo; see the module docstring."""

    def __init__(self, scene: str | os.PathLike):
        super().__init__(scene)
        self.mjdata = mujoco.MjData(self.mjmodel)

    def _set(self, q: np.ndarray, v: np.ndarray | None = None, a: np.ndarray | None = None) -> mujoco.MjData:
        d = self.mjdata
        d.qpos[:] = q
        d.qvel[:] = 0.0 if v is None else v
        d.qacc[:] = 0.0 if a is None else a
        d.qfrc_applied[:] = 0.0
        d.xfrc_applied[:] = 0.0
        return d

    def _mass_matrix(self, q: np.ndarray) -> np.ndarray:
        d = self._set(q)
        mujoco.mj_fwdPosition(self.mjmodel, d)
        out = np.zeros((self.nv, self.nv))
        mujoco.mj_fullM(self.mjmodel, d, out)
        return out

    def _bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        d = self._set(q, v)
        mujoco.mj_fwdPosition(self.mjmodel, d)
        mujoco.mj_fwdVelocity(self.mjmodel, d)
        return d.qfrc_bias.copy()

    def coriolis_matrix(self, q, v) -> np.ndarray:
        """C(q, v) (..., nv, nv), the Christoffel factorization: C = (1/2) d(C v)/dv.

        The velocity part k(v) = c(q, v) - c(q, 0) is a quadratic form in v, so its
        polarization is exact: column j of C is (k(v + s e_j) - k(v - s e_j)) / (4 s).
        Then C v = k(v); for a chain of hinges and slides (v = dq/dt) this C is the one built
        from the Christoffel symbols of M, and dM/dt - 2C is skew-symmetric.
        """
        return self._map(self._coriolis_matrix, q=(q, self.nq), v=(v, self.nv))

    def _coriolis_matrix(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        s = max(1.0, float(np.abs(v).max(initial=0.0)))
        g = self._bias(q, np.zeros(self.nv))
        out = np.empty((self.nv, self.nv))
        for j in range(self.nv):
            dv = np.zeros(self.nv)
            dv[j] = s
            out[:, j] = ((self._bias(q, v + dv) - g) - (self._bias(q, v - dv) - g)) / (4 * s)
        return out

    def _inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        d = self._set(q, v, a)
        mujoco.mj_inverse(self.mjmodel, d)
        return d.qfrc_inverse.copy()

    def _forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        d = self._set(q, v)
        d.qfrc_applied[:] = tau
        mujoco.mj_forward(self.mjmodel, d)
        return d.qacc.copy()

    def _frame_placements(self, q: np.ndarray) -> np.ndarray:
        m, d = self.mjmodel, self._set(q)
        mujoco.mj_kinematics(m, d)
        pos = np.concatenate([d.xpos, d.site_xpos])
        rot = np.concatenate([d.xmat, d.site_xmat]).reshape(-1, 3, 3)
        out = np.zeros((len(pos), 4, 4))
        out[:, :3, :3], out[:, :3, 3], out[:, 3, 3] = rot, pos, 1.0
        return out

    def _frame_jacobian(self, q: np.ndarray, frame: int) -> np.ndarray:
        m, d = self.mjmodel, self._set(q)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        jac = np.zeros((6, self.nv))
        if frame < m.nbody:
            mujoco.mj_jacBody(m, d, jac[:3], jac[3:], frame)
        else:
            mujoco.mj_jacSite(m, d, jac[:3], jac[3:], frame - m.nbody)
        return jac

    def _regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Y = sum_b J_b^T Y_b, per body b (body frame, at its origin):

        * [omega; vel] and [alpha; acc_classical] from mj_objectVelocity /
          mj_objectAcceleration (flg_local=1) after mj_rnePostConstraint computed cacc with
          qacc = a (cacc includes -gravity, so gravity is an upward base acceleration);
        * spatial acceleration acc = acc_classical - omega x vel;
        * Y_b the Newton-Euler body regressor (spatial.body_regressor);
        * J_b = [R^T jacp; R^T jacr] from mj_jacBody, the body-frame Jacobian of the origin.
        """
        m, d = self.mjmodel, self._set(q, v, a)
        mujoco.mj_fwdPosition(m, d)
        mujoco.mj_fwdVelocity(m, d)  # cvel, cdof_dot
        mujoco.mj_rnePostConstraint(m, d)  # cacc from qacc = a
        nb = m.nbody - 1
        vel, acc = np.zeros((nb, 6)), np.zeros((nb, 6))
        jac = np.zeros((nb, 6, self.nv))
        for b in range(1, m.nbody):
            mujoco.mj_objectVelocity(m, d, _XBODY, b, vel[b - 1], 1)
            mujoco.mj_objectAcceleration(m, d, _XBODY, b, acc[b - 1], 1)
            mujoco.mj_jacBody(m, d, jac[b - 1, :3], jac[b - 1, 3:], b)
        rot_t = d.xmat[1:].reshape(nb, 3, 3).transpose(0, 2, 1)
        jac = np.concatenate([rot_t @ jac[:, :3], rot_t @ jac[:, 3:]], axis=1)  # body frame
        omega, lin = vel[:, :3], vel[:, 3:]
        y_b = spatial.body_regressor(omega, lin, acc[:, :3], acc[:, 3:] - np.cross(omega, lin))
        return np.einsum("bkv,bkp->vbp", jac, y_b).reshape(self.nv, 10 * nb)

    def inertial_parameters(self) -> np.ndarray:
        """theta from MuJoCo's compiled body_mass, body_ipos, body_iquat and body_inertia."""
        m = self.mjmodel
        out = []
        for b in range(1, m.nbody):
            rot = spatial.quat_to_matrix(m.body_iquat[b])
            inertia_com = rot @ np.diag(m.body_inertia[b]) @ rot.T
            out.append(spatial.parameters(float(m.body_mass[b]), m.body_ipos[b], inertia_com))
        return np.concatenate(out) if out else np.zeros(0)

    def _integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        out = q.copy()
        mujoco.mj_integratePos(self.mjmodel, out, v, 1.0)
        return out

    def _difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        out = np.zeros(self.nv)
        mujoco.mj_differentiatePos(self.mjmodel, out, 1.0, q0, q1)
        return out
