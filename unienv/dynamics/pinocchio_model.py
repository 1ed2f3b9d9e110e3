"""`PinocchioDynamics`: the rigid-body terms from Pinocchio's algorithms (rnea, crba, aba,
computeCoriolisMatrix, computeJointTorqueRegressor), in MuJoCo's conventions.

Pinocchio is imported when a PinocchioDynamics is constructed, never by importing unienv.

Model. The MJCF is compiled by MuJoCo (which resolves defaults, frames and geom-derived
inertias), then a pinocchio.Model is built from the compiled tree, explicitly:

* one Pinocchio joint per MuJoCo joint, added in MJCF order, so joint k's q and v columns
  follow MuJoCo's; the index maps are built from both models and checked, not assumed;
* hinge -> JointModelRevoluteUnaligned(axis) placed at the anchor, rotated by -ref so that
  its angle is MuJoCo's qpos; slide -> JointModelPrismaticUnaligned(axis), shifted by -ref;
  ball -> JointModelSpherical at the anchor; free -> JointModelFreeFlyer;
* a body with several joints becomes a chain of them (MuJoCo applies them in order, each
  about its anchor in the body frame); its inertia is appended to the last one; a body with
  no joint is welded to its parent's joint (appendBodyToJoint);
* every body and site gets a Pinocchio frame, so frame_names index the same poses.

Several kinematic trees under the world (tests/contract/scene.xml) are supported;
Pinocchio's own MJCF parser keeps only the first, and computes inertias from geoms itself.

Free and ball joints (the boundary conversion):

    MuJoCo   free  q = [p, qw, qx, qy, qz]   v = [v_o world, omega body]
    Pinocchio      q = [p, qx, qy, qz, qw]   v = [R^T v_o (body), omega body]

so v_pin = T(q) v with T = diag(R^T, I) on each free joint (identity elsewhere); then
a_pin = T a + dT/dt v with (dT/dt v)_lin = -omega x (R^T v_o); tau = T^T tau_pin;
M = T^T M_pin T. Ball joints only reorder the quaternion. integrate/difference follow
MuJoCo's rule (position moved in the world frame), not Pinocchio's SE(3) exponential.
"""

from __future__ import annotations

import os

import numpy as np

from unienv.dynamics import spatial
from unienv.dynamics.model import BALL, FREE, HINGE, SLIDE, DynamicsModel
from unienv.errors import install_command


def _import_pinocchio():
    try:
        import pinocchio
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "PinocchioDynamics needs the 'pin' package, which is not installed; "
            f"install it with: {install_command('dynamics')}",
            name="pinocchio",
        ) from e
    return pinocchio


class PinocchioDynamics(DynamicsModel):
    """Rigid-body dynamics computed by Pinocchio; see the module docstring."""

    def __init__(self, scene: str | os.PathLike):
        super().__init__(scene)
        self._pin = _import_pinocchio()
        self.pinmodel, self._pin_joint, self._body_attach, self._frame_ids = self._build()
        self.pindata = self.pinmodel.createData()
        self._map_layout()
        # theta_joints = A theta_bodies: each body's parameters moved into its joint's frame
        njoint = self.pinmodel.njoints - 1
        self._joint_from_body = np.zeros((10 * njoint, self.num_parameters))
        for k, (joint, placement) in enumerate(self._body_attach):
            if joint == 0:  # welded to the world: no effect on tau, zero columns
                continue
            a = spatial.transform_matrix(placement.rotation, placement.translation)
            self._joint_from_body[10 * (joint - 1) : 10 * joint, 10 * k : 10 * k + 10] += a

    # ---- model construction -----------------------------------------------

    def _build(self):
        pin, m = self._pin, self.mjmodel
        model = pin.Model()
        model.name = "unienv"
        model.gravity = pin.Motion(np.asarray(m.opt.gravity, dtype=np.float64), np.zeros(3))
        identity = pin.SE3.Identity()

        def se3(quat, pos):
            return pin.SE3(spatial.quat_to_matrix(quat), np.asarray(pos, dtype=np.float64))

        def rot(axis, angle):
            return pin.SE3(pin.AngleAxis(angle, axis).matrix(), np.zeros(3))

        def shift(p):
            return pin.SE3(np.eye(3), np.asarray(p, dtype=np.float64))

        pin_joint = []  # per MuJoCo joint: its Pinocchio joint id
        attach = [(0, identity)]  # per body: (Pinocchio joint, body frame in that joint's frame)
        for b in range(1, m.nbody):
            joint, placement = attach[int(m.body_parentid[b])]
            placement = placement * se3(m.body_quat[b], m.body_pos[b])  # the body's rest frame
            for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
                kind, name = int(m.jnt_type[j]), self.joint_names[j]
                axis = np.asarray(m.jnt_axis[j], dtype=np.float64)
                anchor = m.jnt_pos[j]
                ref = float(m.qpos0[m.jnt_qposadr[j]]) if kind in (HINGE, SLIDE) else 0.0
                if kind == FREE:
                    if joint != 0:
                        raise ValueError(f"scene: free joint {name!r} is not in a top-level body")
                    jm, where, placement = pin.JointModelFreeFlyer(), identity, identity
                elif kind == BALL:
                    jm, where, placement = (
                        pin.JointModelSpherical(),
                        placement * shift(anchor),
                        shift(-anchor),
                    )
                elif kind == HINGE:
                    jm = pin.JointModelRevoluteUnaligned(axis)
                    where, placement = placement * shift(anchor) * rot(axis, -ref), shift(-anchor)
                else:
                    jm = pin.JointModelPrismaticUnaligned(axis)
                    where, placement = placement * shift(-ref * axis), identity
                joint = model.addJoint(joint, jm, where, name)
                pin_joint.append(joint)
            attach.append((joint, placement))
            inertia_rot = spatial.quat_to_matrix(m.body_iquat[b])
            inertia = pin.Inertia(
                float(m.body_mass[b]),
                np.asarray(m.body_ipos[b], dtype=np.float64),
                inertia_rot @ np.diag(m.body_inertia[b]) @ inertia_rot.T,
            )
            model.appendBodyToJoint(joint, inertia, placement)
        frame_ids = [model.addFrame(pin.Frame("world", 0, identity, pin.FrameType.BODY), False)]
        for b in range(1, m.nbody):
            joint, placement = attach[b]
            frame = pin.Frame(self.frame_names[b], joint, placement, pin.FrameType.BODY)
            frame_ids.append(model.addFrame(frame, False))
        for s in range(m.nsite):
            joint, placement = attach[int(m.site_bodyid[s])]
            placement = placement * se3(m.site_quat[s], m.site_pos[s])
            frame = pin.Frame(self.frame_names[m.nbody + s], joint, placement, pin.FrameType.OP_FRAME)
            frame_ids.append(model.addFrame(frame, False))
        return model, pin_joint, attach[1:], np.asarray(frame_ids)

    def _map_layout(self) -> None:
        """Index maps between MuJoCo's q/v and Pinocchio's, built from both models."""
        model = self.pinmodel
        if (model.nq, model.nv) != (self.nq, self.nv):
            raise RuntimeError(
                f"Pinocchio model has nq, nv = {model.nq}, {model.nv}; MuJoCo {self.nq}, {self.nv}"
            )
        self._q_to_pin = np.arange(self.nq)  # q_pin = q[self._q_to_pin]
        self._free_joints = []  # (MuJoCo qpos address, dof address) of each free joint
        self._quats = []  # Pinocchio q columns of each free- or ball-joint quaternion
        for j, kind in enumerate(self.joint_type):
            pj = self._pin_joint[j]
            qa, da = int(self.joint_qpos_adr[j]), int(self.joint_dof_adr[j])
            pq, pv = model.joints[pj].idx_q, model.joints[pj].idx_v
            if kind == FREE:
                cols = [qa, qa + 1, qa + 2, qa + 4, qa + 5, qa + 6, qa + 3]  # wxyz -> xyzw
            elif kind == BALL:
                cols = [qa + 1, qa + 2, qa + 3, qa]
            else:
                cols = [qa]
            self._q_to_pin[pq : pq + len(cols)] = cols
            if kind in (FREE, BALL):
                self._quats.append(np.arange(pq + len(cols) - 4, pq + len(cols)))
            if pv != da:
                raise RuntimeError(f"joint {self.joint_names[j]!r}: Pinocchio v column {pv}, MuJoCo {da}")
            if kind == FREE:
                self._free_joints.append((qa, da))
        self._q_from_pin = np.argsort(self._q_to_pin)
        if sorted(self._q_to_pin.tolist()) != list(range(self.nq)):
            raise RuntimeError("the q maps between MuJoCo and Pinocchio are not a permutation")

    # ---- the MuJoCo <-> Pinocchio boundary ------------------------------------

    def _convert(self, q: np.ndarray, v: np.ndarray | None = None):
        """q_pin, T (nv, nv) and w = dT/dt v, for MuJoCo q and v (see the module docstring)."""
        q_pin = q[self._q_to_pin].copy()
        for k in self._quats:  # Pinocchio assumes unit quaternions; MuJoCo normalizes
            q_pin[k] /= np.linalg.norm(q_pin[k])
        t = np.eye(self.nv)
        w = np.zeros(self.nv)
        for qa, da in self._free_joints:
            r = spatial.quat_to_matrix(q[qa + 3 : qa + 7])
            t[da : da + 3, da : da + 3] = r.T
            if v is not None:
                w[da : da + 3] = -np.cross(v[da + 3 : da + 6], r.T @ v[da : da + 3])
        return q_pin, t, w

    # ---- algorithms ---------------------------------------------------------

    def _mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """crba; Pinocchio fills the upper triangle only."""
        q_pin, t, _ = self._convert(q)
        m_pin = np.triu(self._pin.crba(self.pinmodel, self.pindata, q_pin))
        m_pin = m_pin + np.triu(m_pin, 1).T
        return t.T @ m_pin @ t

    def _bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self._inverse_dynamics(q, v, np.zeros(self.nv))

    def _inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """rnea with v_pin = T v, a_pin = T a + w; tau = T^T tau_pin."""
        q_pin, t, w = self._convert(q, v)
        return t.T @ self._pin.rnea(self.pinmodel, self.pindata, q_pin, t @ v, t @ a + w)

    def _forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """aba with tau_pin = T^-T tau = T tau (T is orthogonal); a = T^T (a_pin - w)."""
        q_pin, t, w = self._convert(q, v)
        a_pin = self._pin.aba(self.pinmodel, self.pindata, q_pin, t @ v, t @ tau)
        return t.T @ (a_pin - w)

    def coriolis_matrix(self, q, v) -> np.ndarray:
        """C(q, v) (..., nv, nv) = T^T (C_pin T + M_pin N), with C_pin from
        computeCoriolisMatrix (dM_pin/dt - 2 C_pin skew-symmetric) and N v = dT/dt v
        (on a free joint's linear rows, N = -S(omega) R^T on its linear columns).
        C v = c(q, v) - g(q). For models without free joints T = I and C = C_pin."""
        return self._map(self._coriolis_matrix, q=(q, self.nq), v=(v, self.nv))

    def _coriolis_matrix(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        pin = self._pin
        q_pin, t, _ = self._convert(q, v)
        c_pin = pin.computeCoriolisMatrix(self.pinmodel, self.pindata, q_pin, t @ v).copy()
        out = c_pin @ t
        if self._free_joints:
            m_pin = np.triu(pin.crba(self.pinmodel, self.pindata, q_pin))
            m_pin = m_pin + np.triu(m_pin, 1).T
            n = np.zeros((self.nv, self.nv))
            for qa, da in self._free_joints:
                r = spatial.quat_to_matrix(q[qa + 3 : qa + 7])
                n[da : da + 3, da : da + 3] = -spatial.skew(v[da + 3 : da + 6]) @ r.T
            out = out + m_pin @ n
        return t.T @ out

    def _frame_placements(self, q: np.ndarray) -> np.ndarray:
        pin, data = self._pin, self.pindata
        q_pin, _, _ = self._convert(q)
        pin.framesForwardKinematics(self.pinmodel, data, q_pin)
        return np.stack([data.oMf[int(f)].homogeneous for f in self._frame_ids])

    def _frame_jacobian(self, q: np.ndarray, frame: int) -> np.ndarray:
        """computeFrameJacobian(LOCAL_WORLD_ALIGNED) (w.r.t. v_pin), times T."""
        pin = self._pin
        q_pin, t, _ = self._convert(q)
        jac = pin.computeFrameJacobian(
            self.pinmodel, self.pindata, q_pin, int(self._frame_ids[frame]), pin.LOCAL_WORLD_ALIGNED
        )
        return jac @ t

    def _regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """T^T Y_pin(q, T v, T a + w) A: Pinocchio's per-joint regressor (parameters in each
        joint frame), mapped to per-body parameters by A (spatial.transform_matrix of each
        body's placement in its joint frame)."""
        q_pin, t, w = self._convert(q, v)
        y = self._pin.computeJointTorqueRegressor(self.pinmodel, self.pindata, q_pin, t @ v, t @ a + w)
        return t.T @ y @ self._joint_from_body

    def inertial_parameters(self) -> np.ndarray:
        """theta of each body in its own frame, from the pinocchio.Inertia it was built with
        (Inertia.toDynamicParameters of the MuJoCo body's mass, COM and inertia)."""
        pin, m = self._pin, self.mjmodel
        out = []
        for b in range(1, m.nbody):
            r = spatial.quat_to_matrix(m.body_iquat[b])
            inertia = pin.Inertia(
                float(m.body_mass[b]), m.body_ipos[b].astype(np.float64), r @ np.diag(m.body_inertia[b]) @ r.T
            )
            out.append(inertia.toDynamicParameters())
        return np.concatenate(out) if out else np.zeros(0)

    def joint_inertial_parameters(self) -> np.ndarray:
        """Pinocchio's own per-joint parameters (model.inertias, joints 1..), as a check of
        the body-to-joint map: equal to A @ inertial_parameters()."""
        return np.concatenate(
            [self.pinmodel.inertias[j].toDynamicParameters() for j in range(1, self.pinmodel.njoints)]
        )

    def _integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """pinocchio.integrate, then each free joint's position moved by v_lin (world)."""
        q_pin, _, _ = self._convert(q)
        out = self._pin.integrate(self.pinmodel, q_pin, v)[self._q_from_pin]
        for qa, da in self._free_joints:
            out[qa : qa + 3] = q[qa : qa + 3] + v[da : da + 3]
        return out

    def _difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """pinocchio.difference, with each free joint's linear part p1 - p0 (world)."""
        p0, _, _ = self._convert(q0)
        p1, _, _ = self._convert(q1)
        out = self._pin.difference(self.pinmodel, p0, p1)
        for qa, da in self._free_joints:
            out[da : da + 3] = q1[qa : qa + 3] - q0[qa : qa + 3]
        return out
