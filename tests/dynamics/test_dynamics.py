"""unienv.dynamics: MuJoCo and Pinocchio agree on every shipped robot model, in MuJoCo's
conventions (free joints included); the MuJoCo side works without Pinocchio."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import gymnasium
import mujoco
import numpy as np
import pytest

from unienv.dynamics import MujocoDynamics
from unienv.dynamics.check import agreement, format_table, random_state, relative_error
from unienv.errors import ArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GYM_ASSETS = os.path.join(os.path.dirname(gymnasium.__file__), "envs/mujoco/assets")
SCENES = sorted(glob.glob(os.path.join(ROOT, "tasks/assets/*.xml"))) + [
    os.path.join(ROOT, "tests/contract/scene.xml"),
    os.path.join(GYM_ASSETS, "ant.xml"),
    os.path.join(GYM_ASSETS, "humanoid.xml"),
]
ARM7 = os.path.join(ROOT, "tasks/assets/arm7.xml")
CONTRACT = os.path.join(ROOT, "tests/contract/scene.xml")


def scene_id(path: str) -> str:
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else "gymnasium/" + os.path.basename(path)


@pytest.fixture(scope="module")
def pinocchio():
    return pytest.importorskip("pinocchio")


def test_arm7_is_shipped_and_covered():
    assert ARM7 in SCENES
    m = mujoco.MjModel.from_xml_path(ARM7)
    assert (m.nq, m.nv, m.nu) == (7, 7, 7)
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, "ee") >= 0
    payload = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "payload")
    assert payload >= 0 and m.body_mass[payload] > 0
    assert m.jnt_limited.all()
    assert (m.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE).all()  # <position> servos
    assert (m.actuator_gainprm[:, 0] > 0).all() and (m.actuator_biasprm[:, 2] < 0).all()  # kp, kv
    assert 10 < m.body_mass.sum() < 40


@pytest.mark.parametrize("scene", SCENES, ids=scene_id)
def test_pinocchio_agrees_with_mujoco(scene, pinocchio):
    from unienv.dynamics import PinocchioDynamics

    rows = agreement(PinocchioDynamics(scene), MujocoDynamics(scene), samples=4, seed=1)
    assert all(r.ok for r in rows), format_table(scene, rows)


@pytest.mark.parametrize("scene", SCENES, ids=scene_id)
def test_mujoco_terms_are_consistent(scene):
    """Without Pinocchio: Y theta = RNEA = M a + c, ABA inverts RNEA, C v = c - g."""
    model = MujocoDynamics(scene)
    q, v, a = random_state(model, 3, seed=2)
    tau = model.inverse_dynamics(q, v, a)
    m = model.mass_matrix(q)
    assert relative_error(model.regressor(q, v, a) @ model.inertial_parameters(), tau) < 1e-10
    assert relative_error(np.einsum("bij,bj->bi", m, a) + model.bias(q, v), tau) < 1e-10
    assert relative_error(model.forward_dynamics(q, v, tau), a) < 1e-10
    c_v = np.einsum("bij,bj->bi", model.coriolis_matrix(q, v), v)
    assert relative_error(c_v, model.bias(q, v) - model.gravity(q)) < 1e-10
    assert np.allclose(m, np.swapaxes(m, -1, -2)) and (np.linalg.eigvalsh(m) > 0).all()
    assert relative_error(model.difference(q, model.integrate(q, 0.1 * v)), 0.1 * v) < 1e-10


def test_coriolis_is_christoffel_on_the_arm():
    """dM/dt - 2C is skew-symmetric (v = dq/dt on a chain of hinges)."""
    model = MujocoDynamics(ARM7)
    q, v, _ = random_state(model, 1, seed=3)
    h = 1e-6
    m_dot = (model.mass_matrix(q[0] + h * v[0]) - model.mass_matrix(q[0] - h * v[0])) / (2 * h)
    n = m_dot - 2 * model.coriolis_matrix(q[0], v[0])
    assert np.abs(n + n.T).max() < 1e-6 * np.abs(m_dot).max()


def test_free_joint_conventions(pinocchio):
    """A known rotation and a known spin: qpos [p, wxyz], qvel [v world, omega body], in both."""
    from unienv.dynamics import PinocchioDynamics

    for model in (MujocoDynamics(CONTRACT), PinocchioDynamics(CONTRACT)):
        box = model.frame_id("box")
        q = np.zeros(model.nq)
        q[:3] = [0.1, 0.2, 0.3]
        q[3:7] = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]  # 90 degrees about world x
        v = np.zeros(model.nv)
        v[:3] = [1.0, 0.0, 0.0]  # world frame
        v[3:6] = [0.0, 0.0, 2.0]  # body z, which is world -y after the rotation
        pose = model.frame_placements(q)[box]
        assert np.allclose(pose[:3, 3], [0.1, 0.2, 0.3])
        assert np.allclose(pose[:3, :3] @ [0, 0, 1], [0, -1, 0])
        assert np.allclose(model.frame_jacobian(q, "box") @ v, [1, 0, 0, 0, -2, 0])
        q1 = model.integrate(q, v * 0.5)
        assert np.allclose(q1[:3], [0.6, 0.2, 0.3])  # moved along world x
        assert np.allclose(model.difference(q, q1), v * 0.5)


def test_batches_and_errors():
    model = MujocoDynamics(CONTRACT)
    q, v, a = random_state(model, 6, seed=4)
    single = model.inverse_dynamics(q[0], v[0], a[0])
    batch = model.inverse_dynamics(q.reshape(2, 3, -1), v.reshape(2, 3, -1), a.reshape(2, 3, -1))
    assert single.shape == (model.nv,) and batch.shape == (2, 3, model.nv)
    assert np.array_equal(batch[0, 0], single)
    assert model.mass_matrix(q).shape == (6, model.nv, model.nv)
    assert model.frame_placements(q[0]).shape == (len(model.frame_names), 4, 4)
    assert model.frame_jacobian(q, "tip").shape == (6, 6, model.nv)
    assert model.regressor(q[0], v[0], a[0]).shape == (model.nv, 10 * len(model.body_names))
    torch = pytest.importorskip("torch")
    assert np.array_equal(model.gravity(torch.from_numpy(q)), model.gravity(q))
    with pytest.raises(ArgumentError, match=r"q: expected shape \(9,\)"):
        model.mass_matrix(np.zeros(8))
    with pytest.raises(ArgumentError, match="v: expected leading dimensions"):
        model.bias(q, v[:2])
    with pytest.raises(KeyError, match="did you mean 'tip'"):
        model.frame_jacobian(q, "tipp")


def test_importing_unienv_dynamics_does_not_import_pinocchio():
    code = "import sys, unienv.dynamics; sys.exit('pinocchio' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_check_cli_prints_the_table(pinocchio):
    out = subprocess.run(
        [sys.executable, "-m", "unienv.dynamics", "check", ARM7, "--samples", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "M(q)" in out.stdout and "jacobians" in out.stdout and "FAIL" not in out.stdout


SIMPLE_BODIES_WITH_ARMATURE = """
<mujoco>
  <worldbody>
    <body name="slider" pos="0 0 1">
      <joint name="slide" type="slide" axis="1 0 0" armature="0.3"/>
      <geom type="box" size=".1 .2 .1" mass="2"/>
    </body>
    <body name="ball" pos="1 0 1">
      <joint type="free" armature="0.05"/>
      <geom type="sphere" size=".1" mass="1.5"/>
    </body>
    <body name="arm" pos="0 1 1">
      <joint name="shoulder" type="hinge" axis="0 1 0" armature="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03" mass="0.4"/>
      <body name="forearm" pos="0.3 0 0">
        <joint name="elbow" type="hinge" axis="0 1 0" armature="0.1"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size=".03" mass="0.3"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_mass_matrix_has_no_armature_on_simple_bodies(tmp_path):
    """MuJoCo caches a simple body's armature in dof_M0; the rigid-body model drops it too:
    M equals raw MuJoCo's mj_fullM minus the armature, and RNEA and ABA agree with M."""
    scene = tmp_path / "simple_bodies.xml"
    scene.write_text(SIMPLE_BODIES_WITH_ARMATURE)
    raw = mujoco.MjModel.from_xml_path(str(scene))
    assert raw.body_simple[1:3].all()  # the slider and the ball are MuJoCo "simple" bodies
    dyn = MujocoDynamics(scene)
    qs, vs, accs = random_state(dyn, 4, seed=3)
    for q, v, a in zip(qs, vs, accs, strict=True):
        d = mujoco.MjData(raw)
        d.qpos[:] = q
        mujoco.mj_forward(raw, d)
        full = np.zeros((raw.nv, raw.nv))
        mujoco.mj_fullM(raw, d, full)
        M = dyn.mass_matrix(q)
        np.testing.assert_allclose(M, full - np.diag(raw.dof_armature), atol=1e-12)
        tau = dyn.inverse_dynamics(q, v, a)
        np.testing.assert_allclose(tau, M @ a + dyn.bias(q, v), atol=1e-10)
        np.testing.assert_allclose(dyn.forward_dynamics(q, v, tau), a, atol=1e-8)
