"""The look unienv renders every scene in: a sky and a floor everywhere, and no change to physics."""

import mujoco
import numpy as np
import pytest

from unienv import render
from unienv.tasks import TASKS, task_class

PHYSICS = ("body_mass", "body_inertia", "body_ipos", "dof_damping", "dof_armature", "actuator_gainprm")


def colliding_geoms(model):
    """Body, type, size and friction of every geom that takes part in contacts."""
    mask = (model.geom_contype | model.geom_conaffinity) != 0
    return [model.geom_bodyid[mask], model.geom_type[mask], model.geom_size[mask], model.geom_friction[mask]]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_scene_gets_a_sky_and_a_floor_and_keeps_its_physics(task):
    scene = task_class(task)().scene
    plain, dressed = mujoco.MjModel.from_xml_path(scene), render.dressed_model(scene)
    sky = [t for t in range(dressed.ntex) if dressed.tex_type[t] == mujoco.mjtTexture.mjTEXTURE_SKYBOX]
    assert len(sky) == 1
    floors = dressed.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
    floor = mujoco.mj_name2id(dressed, mujoco.mjtObj.mjOBJ_MATERIAL, "unienv_floor")
    assert floors.any() and (dressed.geom_matid[floors] == floor).all()

    # the renderer reads qpos as the backends write it, and nothing that moves the robot changed
    assert (dressed.nq, dressed.nv, dressed.nu, dressed.nbody) == (plain.nq, plain.nv, plain.nu, plain.nbody)
    np.testing.assert_array_equal(dressed.qpos0, plain.qpos0)
    for field in PHYSICS:
        np.testing.assert_array_equal(getattr(dressed, field), getattr(plain, field), err_msg=field)
    for d, p in zip(colliding_geoms(dressed), colliding_geoms(plain), strict=True):
        np.testing.assert_array_equal(d, p)  # a floor the look adds collides with nothing
    assert dressed.opt.timestep == plain.opt.timestep and dressed.opt.integrator == plain.opt.integrator
