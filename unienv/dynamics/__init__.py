"""unienv.dynamics: the rigid-body equation of motion of a robot model, from two engines.

    M(q) a + c(q, v) = tau,   c = C(q, v) v + g(q)   (c is MuJoCo's qfrc_bias)

`DynamicsModel` is the interface (mass matrix, Coriolis matrix, gravity, bias, RNEA, ABA,
frame placements and world-aligned Jacobians, the joint-torque regressor of 10 inertial
parameters per body, configuration integrate/difference). Two implementations load the same
MJCF and agree to round-off on every shipped robot (`python -m unienv.dynamics check <scene>`):

* `MujocoDynamics(scene)`: MuJoCo's own functions (mj_fullM, qfrc_bias, mj_inverse, ...);
* `PinocchioDynamics(scene)`: Pinocchio's algorithms (crba, rnea, aba, ...); needs the
  optional `pin` package (`pip install 'unienv[dynamics]'`), imported only when constructed.

Both use MuJoCo's conventions for q and v (a free joint's quaternion is wxyz, its linear
velocity is in the world frame) and model rigid bodies only: armature, damping, springs,
actuators, contacts and constraints are the simulator's, not part of these terms.

`identify(model, q, v, a, tau, ...)` estimates inertial parameters from trajectories by least
squares (base parameters, a conditioning check, optionally physically consistent values).
"""

from unienv.dynamics.identify import IdentificationResult, PoorExcitationError, identify
from unienv.dynamics.model import DynamicsModel
from unienv.dynamics.mujoco_model import MujocoDynamics
from unienv.dynamics.pinocchio_model import PinocchioDynamics

__all__ = [
    "DynamicsModel",
    "IdentificationResult",
    "MujocoDynamics",
    "PinocchioDynamics",
    "PoorExcitationError",
    "identify",
]
