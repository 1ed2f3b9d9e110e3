"""What the genesis backend refuses to simulate: MJCF features that Genesis would ignore or
simulate differently, each named in the error. Plain MuJoCo model checks, with no Genesis
import, so that `unienv list` can tell which tasks Genesis runs without starting it."""

from __future__ import annotations

import mujoco
import numpy as np

from unienv.backends.scene import SceneInfo
from unienv.errors import ArgumentError, CapabilityError


def check_scene(m: mujoco.MjModel, scene: str) -> None:
    """Raise ArgumentError or CapabilityError, naming the feature, where Genesis cannot run `scene`."""
    info = SceneInfo.from_mjmodel(m)
    check_actuators(m, info)
    check_features(m, info, scene)


def check_actuators(m: mujoco.MjModel, info: SceneInfo) -> None:
    """Genesis drives one joint per actuator with a fixed gain and an affine bias."""
    names = info.names["actuator"]
    joints = []
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) != mujoco.mjtTrn.mjTRN_JOINT.value:
            raise ArgumentError(f"scene: actuator {names[a]!r} has no joint transmission; genesis needs one")
        if int(m.actuator_dyntype[a]) != mujoco.mjtDyn.mjDYN_NONE.value:
            raise ArgumentError(f"scene: actuator {names[a]!r} has activation dynamics; genesis has none")
        if int(m.actuator_gaintype[a]) != mujoco.mjtGain.mjGAIN_FIXED.value or int(
            m.actuator_biastype[a]
        ) not in (
            mujoco.mjtBias.mjBIAS_NONE.value,
            mujoco.mjtBias.mjBIAS_AFFINE.value,
        ):
            raise ArgumentError(f"scene: actuator {names[a]!r} needs a fixed gain and a none/affine bias")
        joint = int(m.actuator_trnid[a, 0])
        if int(m.jnt_type[joint]) not in (
            mujoco.mjtJoint.mjJNT_HINGE.value,
            mujoco.mjtJoint.mjJNT_SLIDE.value,
        ):
            raise ArgumentError(f"scene: actuator {names[a]!r} drives a multi-dof joint; genesis needs 1 dof")
        if joint in joints:
            raise ArgumentError(f"scene: two actuators drive joint {info.names['joint'][joint]!r}")
        joints.append(joint)


def check_features(m: mujoco.MjModel, info: SceneInfo, scene: str) -> None:
    """Refuse MJCF features that Genesis would ignore or simulate differently, naming them."""
    names, where = info.names, f"scene {scene!r}"
    hfields = np.flatnonzero(m.geom_type == mujoco.mjtGeom.mjGEOM_HFIELD)
    if hfields.size:
        raise CapabilityError(
            f'{where}: heightfield geoms (MJCF <geom type="hfield">, e.g. terrain) '
            f"{[names['geom'][g] for g in hfields]}: the genesis backend does not parse them"
        )
    if m.npair:
        raise CapabilityError(
            f"{where}: explicit contact pairs (MJCF <contact><pair>, {m.npair} of them): the genesis "
            "backend does not simulate them (it collides by contype/conaffinity only)"
        )
    gravcomp = np.flatnonzero(m.body_gravcomp)
    if gravcomp.size:
        raise CapabilityError(
            f"{where}: body gravcomp (MJCF <body gravcomp>) on {[names['body'][b] for b in gravcomp]}: "
            "the genesis backend does not simulate it"
        )
    for j in range(m.njnt):
        one_qpos = (mujoco.mjtJoint.mjJNT_SLIDE.value, mujoco.mjtJoint.mjJNT_HINGE.value)
        if m.jnt_stiffness[j] > 0 and int(m.jnt_type[j]) in one_qpos:
            adr = int(m.jnt_qposadr[j])
            if m.qpos_spring[adr] != m.qpos0[adr]:
                raise CapabilityError(
                    f"{where}: joint {names['joint'][j]!r} has springref (MJCF <joint springref>) "
                    "away from its qpos0: the genesis backend does not simulate it"
                )
    for b in range(m.nbody):
        first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        for j in range(first + 1, first + count):
            if int(m.jnt_type[j]) == mujoco.mjtJoint.mjJNT_BALL.value:
                raise CapabilityError(
                    f"{where}: ball joint {names['joint'][j]!r} follows another joint in body "
                    f"{names['body'][b]!r}: the genesis backend integrates it wrongly; give it its own body"
                )
