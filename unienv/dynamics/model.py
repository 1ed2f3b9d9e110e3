"""`DynamicsModel`: the rigid-body equation of motion of one robot model, engine-independent.

Model. A scene's MJCF is compiled by MuJoCo, which fixes the layout every implementation
uses: joints, dofs and bodies in MJCF order, MuJoCo's conventions for q and v (a free joint's
q is [p, quat wxyz] and its v is [linear velocity of the body origin in the world frame,
angular velocity in the body frame]; a ball joint's q is a wxyz quaternion and its v the body-
frame angular velocity). An engine that differs (Pinocchio) converts at its boundary.

Equation. For configuration q (nq), velocity v (nv), acceleration a = dv/dt (nv) and
generalized force tau (nv), both implementations compute the *rigid-body* terms of

    M(q) a + c(q, v) = tau,      c(q, v) = C(q, v) v + g(q)  (MuJoCo's qfrc_bias)

Everything that is not rigid-body dynamics is left out, on both sides, so that the two agree:
joint armature (rotor inertia), damping, springs, friction loss, gravity compensation, fluid
forces, actuators, contacts, joint limits and equality constraints. Those belong to the
simulator; a caller adds them (e.g. `tau = tau_actuator - armature * a - damping * v`).

Batching. Every method accepts one configuration (nq,) or a batch (..., nq) with any leading
dimensions, NumPy arrays or CPU torch tensors, and returns NumPy float64 arrays with the same
leading dimensions. A wrong shape raises ArgumentError naming the argument.

Inertial parameters. The regressor and `inertial_parameters()` use 10 parameters per body
(every MuJoCo body but the world, in MJCF order, `body_names`): see unienv.dynamics.spatial.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from unienv.backends.base import load_mjmodel
from unienv.errors import ArgumentError, unknown_name

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3  # mjtJoint values
_QPOS_WIDTH = {FREE: 7, BALL: 4, SLIDE: 1, HINGE: 1}
_DOF_WIDTH = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}


def load_rigid_body_mjmodel(scene: str | os.PathLike) -> Any:
    """Compile `scene` with MuJoCo and remove everything that is not rigid-body dynamics.

    Zeroed: dof_armature, dof_damping, dof_frictionloss, jnt_stiffness, body_gravcomp,
    tendon armature, fluid density and viscosity, and the constants derived from them
    recomputed (mj_setConst). Disabled: contacts, constraints (limits, equalities, friction
    loss), springs, dampers, actuation. Gravity is kept.
    """
    import mujoco

    m = load_mjmodel(scene)
    for field in ("dof_armature", "dof_damping", "dof_frictionloss", "jnt_stiffness", "body_gravcomp"):
        getattr(m, field)[:] = 0.0
    if hasattr(m, "tendon_armature"):
        m.tendon_armature[:] = 0.0
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    m.opt.wind[:] = 0.0
    bits = mujoco.mjtDisableBit
    for flag in (
        "CONTACT",
        "CONSTRAINT",
        "LIMIT",
        "EQUALITY",
        "FRICTIONLOSS",
        "SPRING",
        "DAMPER",
        "ACTUATION",
    ):
        m.opt.disableflags |= getattr(bits, f"mjDSBL_{flag}").value
    # constants derived from the zeroed fields: MuJoCo caches e.g. the armature of "simple"
    # bodies (a childless slider, a free body with its COM at its origin) in dof_M0
    mujoco.mj_setConst(m, mujoco.MjData(m))
    return m


class DynamicsModel(abc.ABC):
    """Rigid-body dynamics of one MJCF model; see the module docstring for conventions."""

    def __init__(self, scene: str | os.PathLike):
        import mujoco

        self.scene = os.fspath(scene)
        self.mjmodel = m = load_rigid_body_mjmodel(scene)

        def name(kind: Any, i: int, prefix: str) -> str:
            return mujoco.mj_id2name(m, kind, i) or f"{prefix}{i}"

        self.nq, self.nv = int(m.nq), int(m.nv)
        self.joint_names = tuple(name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint") for j in range(m.njnt))
        self.joint_type = m.jnt_type.astype(np.int64)
        self.joint_qpos_adr = m.jnt_qposadr.astype(np.int64)
        self.joint_dof_adr = m.jnt_dofadr.astype(np.int64)
        all_bodies = tuple(name(mujoco.mjtObj.mjOBJ_BODY, b, "body") for b in range(m.nbody))
        self.body_names = all_bodies[1:]
        site_names = [name(mujoco.mjtObj.mjOBJ_SITE, s, "site") for s in range(m.nsite)]
        taken = set(all_bodies)
        sites = tuple(n if n not in taken else f"site:{n}" for n in site_names)
        self.frame_names = all_bodies + sites
        """Frames: every body (world first) then every site; a site whose name is also a
        body's is called 'site:<name>'."""
        self.gravity_vector = m.opt.gravity.copy()

    # ---- layout -------------------------------------------------------------

    @property
    def num_parameters(self) -> int:
        """Inertial parameters of the regressor: 10 per body (m, m c, the inertia's 6)."""
        return 10 * len(self.body_names)

    def frame_id(self, frame: str | int) -> int:
        """Index of a frame in `frame_names` (an int is checked and returned)."""
        if isinstance(frame, (int, np.integer)):
            if not 0 <= frame < len(self.frame_names):
                raise ArgumentError(f"frame: expected an index in [0, {len(self.frame_names)}), got {frame}")
            return int(frame)
        if frame not in self.frame_names:
            raise unknown_name("frame", frame, self.frame_names)
        return self.frame_names.index(frame)

    def body_parameter_slice(self, body: str) -> slice:
        """The 10 columns of `body` in the regressor and in inertial_parameters()."""
        if body not in self.body_names:
            raise unknown_name("body", body, self.body_names)
        k = self.body_names.index(body)
        return slice(10 * k, 10 * k + 10)

    # ---- the interface --------------------------------------------------------

    def mass_matrix(self, q: Any) -> np.ndarray:
        """M(q) (..., nv, nv): the joint-space inertia matrix, symmetric positive definite,
        with kinetic energy v^T M v / 2 (v in MuJoCo's convention)."""
        return self._map(self._mass_matrix, q=(q, self.nq))

    def bias(self, q: Any, v: Any) -> np.ndarray:
        """c(q, v) = C(q, v) v + g(q) (..., nv): MuJoCo's qfrc_bias, so M a + c = tau."""
        return self._map(self._bias, q=(q, self.nq), v=(v, self.nv))

    def gravity(self, q: Any) -> np.ndarray:
        """g(q) = c(q, 0) (..., nv): the generalized force that holds the model still."""
        q = self._as_batch(q, "q", self.nq)
        return self.bias(q, np.zeros(q.shape[:-1] + (self.nv,)))

    @abc.abstractmethod
    def coriolis_matrix(self, q: Any, v: Any) -> np.ndarray:
        """C(q, v) (..., nv, nv) with C v = c(q, v) - g(q), the velocity part of the bias.

        C is not unique; each implementation documents its factorization."""

    def inverse_dynamics(self, q: Any, v: Any, a: Any) -> np.ndarray:
        """RNEA: tau = M(q) a + c(q, v) (..., nv)."""
        return self._map(self._inverse_dynamics, q=(q, self.nq), v=(v, self.nv), a=(a, self.nv))

    def forward_dynamics(self, q: Any, v: Any, tau: Any) -> np.ndarray:
        """ABA: a = M(q)^-1 (tau - c(q, v)) (..., nv)."""
        return self._map(self._forward_dynamics, q=(q, self.nq), v=(v, self.nv), tau=(tau, self.nv))

    def frame_placements(self, q: Any) -> np.ndarray:
        """World poses of every frame in `frame_names`, (..., nframes, 4, 4) homogeneous
        matrices [[R, p], [0, 1]] with R body-to-world and p the frame origin in the world."""
        return self._map(self._frame_placements, q=(q, self.nq))

    def frame_jacobian(self, q: Any, frame: str | int) -> np.ndarray:
        """J (..., 6, nv), world-aligned, [linear; angular]: [v_o; omega] = J v with v_o the
        velocity of the frame origin and omega the frame's angular velocity, both in world
        coordinates (Pinocchio's LOCAL_WORLD_ALIGNED), v in MuJoCo's convention."""
        fid = self.frame_id(frame)
        return self._map(lambda q: self._frame_jacobian(q, fid), q=(q, self.nq))

    def regressor(self, q: Any, v: Any, a: Any) -> np.ndarray:
        """Y(q, v, a) (..., nv, 10 * nbody) with inverse_dynamics(q, v, a) = Y theta, theta =
        inertial_parameters(): 10 columns per body in `body_names` order, each block
        [m, m cx, m cy, m cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz] in the body frame about its origin."""
        return self._map(self._regressor, q=(q, self.nq), v=(v, self.nv), a=(a, self.nv))

    @abc.abstractmethod
    def inertial_parameters(self) -> np.ndarray:
        """theta (10 * nbody,): the model's inertial parameters, in the regressor's order."""

    def integrate(self, q: Any, v: Any) -> np.ndarray:
        """q (+) v (..., nq): the configuration reached from q by moving at constant velocity v
        for unit time, MuJoCo's rule: a free joint's position moves by v_lin (world frame), its
        orientation by quat * exp(omega) (body frame); hinges and slides add."""
        return self._map(self._integrate, q=(q, self.nq), v=(v, self.nv))

    def difference(self, q0: Any, q1: Any) -> np.ndarray:
        """q1 (-) q0 (..., nv): the velocity v with integrate(q0, v) = q1."""
        return self._map(self._difference, q0=(q0, self.nq), q1=(q1, self.nq))

    def random_configuration(self, batch: int | None = None, rng: Any = None) -> np.ndarray:
        """A random configuration (nq,), or (batch, nq); `rng` is a seed or np.random.Generator.

        Limited hinges and slides are uniform in their range, unlimited hinges in [-pi, pi],
        unlimited slides and free-joint positions in [-1, 1] (m), and free- and ball-joint
        orientations uniform over SO(3)."""
        rng = np.random.default_rng(rng)
        n = 1 if batch is None else int(batch)
        m = self.mjmodel
        q = np.empty((n, self.nq))
        for j, kind in enumerate(self.joint_type):
            a = int(self.joint_qpos_adr[j])
            if kind in (FREE, BALL):
                if kind == FREE:
                    q[:, a : a + 3] = rng.uniform(-1.0, 1.0, (n, 3))
                    a += 3
                quat = rng.normal(size=(n, 4))
                q[:, a : a + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
            elif m.jnt_limited[j]:
                q[:, a] = rng.uniform(*m.jnt_range[j], n)
            else:
                bound = np.pi if kind == HINGE else 1.0
                q[:, a] = rng.uniform(-bound, bound, n)
        return q[0] if batch is None else q

    # ---- per-sample hooks (q, v, a are (nq,) / (nv,) float64) ---------------

    @abc.abstractmethod
    def _mass_matrix(self, q: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _frame_placements(self, q: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _frame_jacobian(self, q: np.ndarray, frame: int) -> np.ndarray: ...

    @abc.abstractmethod
    def _regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _difference(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray: ...

    # ---- batching (one place) ---------------------------------------------------

    @staticmethod
    def _as_batch(x: Any, name: str, width: int) -> np.ndarray:
        if hasattr(x, "detach"):  # a torch tensor
            x = x.detach().cpu().numpy()
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0 or x.shape[-1] != width:
            raise ArgumentError(f"{name}: expected shape ({width},) or (..., {width}), got {x.shape}")
        return x

    def _map(self, fn: Callable[..., np.ndarray], **args: tuple[Any, int]) -> np.ndarray:
        """Apply a per-sample hook over the common leading dimensions of its arguments."""
        arrays = [self._as_batch(x, name, width) for name, (x, width) in args.items()]
        lead = arrays[0].shape[:-1]
        for name, x in zip(args, arrays, strict=True):
            if x.shape[:-1] != lead:
                first = next(iter(args))
                raise ArgumentError(
                    f"{name}: expected leading dimensions {lead} like {first}, got shape {x.shape}"
                )
        flat = [x.reshape(-1, x.shape[-1]) for x in arrays]
        out = [fn(*row) for row in zip(*flat, strict=True)]
        if not out:
            raise ArgumentError(f"{next(iter(args))}: empty batch")
        return np.stack(out).reshape(lead + out[0].shape)


def check_names(names: Sequence[str], valid: Sequence[str], kind: str) -> list[int]:
    """Indices of `names` in `valid`, with a close-match hint for a misspelled one."""
    out = []
    for n in names:
        if n not in valid:
            raise unknown_name(kind, n, valid)
        out.append(list(valid).index(n))
    return out
