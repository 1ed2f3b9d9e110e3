"""Conformance suite of the SimBackend contract (shared/DESIGN.md), for every backend.

Each test checks one promised behaviour with an assertion that fails if the
behaviour breaks. The scene (scene.xml) holds a free box above the floor and a
cart-pole with a position servo (cart_servo) and a motor (pole_motor).

Device-correct: inputs and expected values are built on `b.device` in the
backend's dtype (`on`, `full`), and results are compared there or on the CPU,
so a CUDA run (conftest: UNIENV_TEST_DEVICE) tests the backend, not the test.
"""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from unienv.backends import DR_TERMS, create
from unienv.backends.base import MJ_FIELDS
from unienv.errors import ArgumentError, BackendClosedError, CapabilityError, UnknownNameError

from .conftest import AVAILABLE, DEVICE, GENESIS_PRECISION, SIM_DT, create_backend


def on(b, data, dtype=None):
    """`data` as a tensor on the backend's device, in its float dtype unless told."""
    return torch.as_tensor(data, dtype=dtype or b.get_capabilities().dtype, device=b.device)


def full(b, shape, value):
    return torch.full(shape, value, dtype=b.get_capabilities().dtype, device=b.device)


def zeros_ctrl(b, value=0.0):
    return full(b, (b.num_envs, b.nu), value)


def snapshot(b):
    return b.get_physics_state().clone()


def initial_state(b, n=None):
    """qpos/qvel rows for n envs: the box 1 m up, the pole tilted a little."""
    n = b.num_envs if n is None else n
    dtype = b.get_capabilities().dtype
    qpos = torch.as_tensor(b.info.qpos0, dtype=dtype, device=b.device).repeat(n, 1)
    qpos[:, 2] = 1.0
    qpos[:, b.joint_qpos_slice("hinge")] = 0.3
    qvel = torch.zeros(n, b.nv, dtype=dtype, device=b.device)
    return qpos, qvel


def run(b, steps, ctrl=None):
    """Trajectory of (qpos, qvel) rows over `steps` single physics steps."""
    ctrl = zeros_ctrl(b) if ctrl is None else ctrl
    out = []
    for _ in range(steps):
        b.step_tensor(ctrl)
        s = b.get_state_views()
        out.append(torch.cat([s["qpos"], s["qvel"]], 1).clone())
    return torch.stack(out, 1)


# ---- construction and lifecycle -------------------------------------------------


def test_construction_refuses_bad_arguments(backend_name):
    with pytest.raises(ArgumentError, match="num_envs"):
        create_backend(backend_name, 0)
    with pytest.raises(ArgumentError, match="sim_dt"):
        create_backend(backend_name, 2, sim_dt=-0.01)
    with pytest.raises(ArgumentError, match="scene"):
        create_backend(backend_name, 2, scene="no/such/scene.xml")
    with pytest.raises(TypeError, match="not_an_option"):
        create_backend(backend_name, 2, not_an_option=1)
    with pytest.raises(UnknownNameError, match="body_mass"):
        create_backend(backend_name, 2, randomize=["body_mas"])


def test_unknown_backend_names_close_matches():
    with pytest.raises(UnknownNameError, match="'mujoco'"):
        create("mujocoo", "scene.xml", 2, SIM_DT)


def test_lifecycle(make_backend):
    b = make_backend()
    b.materialize()
    views = b.get_state_views()
    b.materialize()  # idempotent: the same live state
    assert b.get_state_views()["qpos"].data_ptr() == views["qpos"].data_ptr()
    b.close()
    b.close()  # idempotent
    assert b.closed
    for call in (
        lambda: b.step_tensor(torch.zeros(4, 2, device=b.device)),
        b.get_state_views,
        b.get_physics_state,
        b.materialize,
        lambda: b.get_dr_param("body_mass"),
    ):
        with pytest.raises(BackendClosedError):
            call()


def test_context_manager_closes(backend_name):
    with create_backend(backend_name, 2) as b:
        b.step_tensor(zeros_ctrl(b))
    assert b.closed
    with pytest.raises(BackendClosedError):
        b.step_tensor(zeros_ctrl(b))


def test_first_state_access_materializes(make_backend):
    b = make_backend()
    assert b.get_state_views()["qpos"].shape == (4, b.nq)


# ---- shapes and dtypes ------------------------------------------------------------


def test_hot_path_shapes_and_dtypes(make_backend):
    b = make_backend(num_envs=3)
    caps = b.get_capabilities()
    n, dtype = 3, caps.dtype
    b.step_tensor(zeros_ctrl(b), nsteps=2)
    s = b.get_state_views()
    expected = {"time": (n,), "qpos": (n, b.nq), "qvel": (n, b.nv), "ctrl": (n, b.nu)}
    assert {k: tuple(v.shape) for k, v in s.items()} == expected
    assert all(v.dtype == dtype and v.device == b.device for v in s.values())
    assert torch.allclose(s["time"], full(b, (n,), 2 * SIM_DT))
    bodies = b.find("body", ["box", "pole"])
    views = b.get_body_views(bodies)
    assert [tuple(v.shape) for v in views] == [(n, 2, 3), (n, 2, 4), (n, 2, 3), (n, 2, 3)]
    assert torch.allclose(views.quat.norm(dim=-1), full(b, (n, 2), 1.0))
    if caps.contact_forces:
        assert tuple(b.get_contact_forces(bodies).shape) == (n, 2, 3)
    if caps.sensors:
        assert tuple(b.get_sensor_view("tip_pos").shape) == (n, 3)
        assert tuple(b.get_sensor_view("hinge_angle").shape) == (n, 1)
    if caps.site_jacobian:
        jacp, jacr = b.get_site_jacobian(int(b.find("site", "tip")[0]))
        assert tuple(jacp.shape) == tuple(jacr.shape) == (n, 3, b.nv)
    state = b.get_physics_state()
    assert tuple(state.shape) == (n, b.physics_state_size)
    assert torch.equal(state[:, 1 : 1 + b.nq].cpu(), s["qpos"].cpu().to(state.dtype))


def test_every_view_and_field_has_the_backend_dtype_and_device(make_backend):
    """One dtype, one device: state views, body views, sensors, contact forces, site Jacobians
    and MuJoCo fields (each where declared) are in Capabilities.dtype on backend.device."""
    b = make_backend(num_envs=2)
    caps = b.get_capabilities()
    b.step_tensor(zeros_ctrl(b, 0.1))
    got = {f"state {k}": v for k, v in b.get_state_views().items()}
    bodies = np.arange(len(b.names("body")))
    got.update({f"body {k}": v for k, v in b.get_body_views(bodies)._asdict().items()})
    if caps.sensors:
        got.update({f"sensor {name}": b.get_sensor_view(name) for name in b.names("sensor")})
    if caps.contact_forces:
        got["contact forces"] = b.get_contact_forces(bodies)
    if caps.site_jacobian:
        for site in range(len(b.names("site"))):
            got[f"jacp {site}"], got[f"jacr {site}"] = b.get_site_jacobian(site)
    if caps.mj_fields:
        got.update({f"mj_field {name}": b.get_mj_field(name) for name in MJ_FIELDS})
    wrong = {
        k: (v.dtype, str(v.device)) for k, v in got.items() if (v.dtype, v.device) != (caps.dtype, b.device)
    }
    assert not wrong, f"expected {caps.dtype} on {b.device}, got {wrong}"


@pytest.mark.skipif(
    "genesis" not in AVAILABLE or GENESIS_PRECISION is not None or torch.device(DEVICE).type == "cuda",
    reason="Genesis already runs float32 here, or is not installed",
)
def test_genesis_float32_on_the_cpu_has_one_dtype():
    """Genesis takes one precision per process, and this process runs it in float64 on the CPU:
    the test above again, with precision="32", in a subprocess."""
    test = f"{__file__}::test_every_view_and_field_has_the_backend_dtype_and_device"
    env = {**os.environ, "UNIENV_TEST_DEVICE": "cpu", "UNIENV_TEST_GENESIS_PRECISION": "32"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test, "-k", "genesis"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


def test_metadata(make_backend):
    b = make_backend()
    assert (b.nq, b.nv, b.nu) == (9, 8, 2)
    assert b.names("body") == ("world", "box", "cart", "pole")
    assert b.names("actuator") == ("cart_servo", "pole_motor")
    assert b.joint_qpos_slice("box_free") == slice(0, 7)
    assert b.joint_qvel_slice("hinge") == slice(7, 8)
    assert b.info.actuator_joint.tolist() == [b.find("joint", "slider")[0], b.find("joint", "hinge")[0]]
    np.testing.assert_allclose(b.info.ctrl_range, [[-2, 2], [-5, 5]])
    np.testing.assert_allclose(b.info.gravity, [0, 0, -9.81])


def test_misspelled_names_list_close_matches(make_backend):
    b = make_backend()
    with pytest.raises(UnknownNameError, match="'box'"):
        b.find("body", "bxo")
    with pytest.raises(UnknownNameError, match="'tip_pos'"):
        b.get_sensor_view("tip_pso")
    with pytest.raises(UnknownNameError, match="'body_mass'"):
        b.get_dr_param("body_mas")
    with pytest.raises(UnknownNameError, match="'joint'"):
        b.names("joints")


# ---- step_tensor ------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda b: full(b, (b.num_envs, b.nu + 1), 0.0), "shape"),
        (lambda b: full(b, (b.num_envs + 1, b.nu), 0.0), "shape"),
        (lambda b: torch.zeros(b.num_envs, b.nu, dtype=torch.int64, device=b.device), "float"),
        (lambda b: np.zeros((b.num_envs, b.nu)), "torch.Tensor"),
        (lambda b: torch.cat([full(b, (b.num_envs, 1), math.nan), zeros_ctrl(b)[:, 1:]], 1), "NaN"),
        (lambda b: torch.cat([zeros_ctrl(b)[:, :1], full(b, (b.num_envs, 1), math.inf)], 1), "NaN or inf"),
    ],
)
def test_step_refuses_bad_ctrl_and_changes_nothing(make_backend, bad, match):
    b = make_backend()
    if b.get_capabilities().sync_free and match.startswith("NaN"):
        pytest.skip(
            "sync_free backends check ctrl values on the device: test_nonfinite_ctrl_is_flagged_and_never_reaches_the_physics"
        )
    b.step_tensor(zeros_ctrl(b, 0.5), 3)
    before = snapshot(b)
    ctrl_before = b.get_state_views()["ctrl"].clone()
    with pytest.raises(ArgumentError, match=match):
        b.step_tensor(bad(b))
    assert torch.equal(snapshot(b), before)
    assert torch.equal(b.get_state_views()["ctrl"], ctrl_before)


def test_nonfinite_ctrl_is_flagged_and_never_reaches_the_physics(make_backend):
    """A sync_free backend reads no value on the host: a row with NaN or inf ctrl is held at
    zero ctrl for that step and flagged by pop_diverged; the other rows step as usual."""
    b = make_backend()
    if not b.get_capabilities().sync_free:
        pytest.skip("host-checked backends refuse it: test_step_refuses_bad_ctrl_and_changes_nothing")
    twin = make_backend()
    ctrl = zeros_ctrl(b, 0.5)
    for sim in (b, twin):
        sim.step_tensor(ctrl, 2)
        sim.pop_diverged()
    bad = ctrl.clone()
    bad[1, 0], bad[3, -1] = math.nan, -math.inf
    b.step_tensor(bad, 3)
    held = ctrl.clone()
    held[[1, 3]] = 0.0
    twin.step_tensor(held, 3)
    assert torch.equal(snapshot(b), snapshot(twin))  # the bad rows ran with zero ctrl, nothing else changed
    assert b.pop_diverged().tolist() == [False, True, False, True]
    assert not b.pop_diverged().any()  # flagged once


def test_step_refuses_bad_nsteps(make_backend):
    b = make_backend()
    before = snapshot(b)
    for nsteps in (0, -1, 1.5):
        with pytest.raises(ArgumentError, match="nsteps"):
            b.step_tensor(zeros_ctrl(b), nsteps)
    assert torch.equal(snapshot(b), before)


def test_step_holds_ctrl_for_nsteps(make_backend):
    b = make_backend()
    ctrl = zeros_ctrl(b)
    ctrl[:, 0] = on(b, [0.0, 0.5, 1.0, -1.0])
    b.step_tensor(ctrl, nsteps=20)
    s = b.get_state_views()
    assert torch.equal(s["ctrl"], ctrl)
    assert torch.allclose(s["time"], torch.full_like(s["time"], 20 * SIM_DT))
    cart = s["qpos"][:, b.joint_qpos_slice("slider")].flatten()
    assert cart[1] > 0 and cart[2] > cart[1] and cart[3] < 0  # the servo pulls toward its target


# ---- set_state_tensor ----------------------------------------------------------------


def test_set_state_touches_only_selected_rows_and_refreshes_derived(make_backend):
    b = make_backend()
    b.step_tensor(zeros_ctrl(b, 0.3), 5)
    before = snapshot(b)
    qpos, qvel = initial_state(b, 2)
    qpos[:, 0] = on(b, [0.25, -0.5])
    b.set_state_tensor(torch.tensor([3, 1]), qpos, qvel)  # any order: rows follow ids
    after = snapshot(b)
    assert torch.equal(after[[0, 2]], before[[0, 2]])
    s = b.get_state_views()
    assert torch.equal(s["qpos"][[3, 1]], qpos)
    assert float(s["time"][1]) == 0.0
    box = b.get_body_views(b.find("body", "box"))
    assert torch.allclose(box.pos[[3, 1], 0], qpos[:, :3])  # derived, without a step
    if b.get_capabilities().sensors:
        tip = b.get_sensor_view("tip_pos")[[3, 1]]
        expected_x = 0.6 * math.sin(0.3)  # cart at 0, pole tilted 0.3 rad about +y
        assert torch.allclose(tip[:, 0], full(b, (2,), expected_x), atol=1e-5)


@pytest.mark.parametrize("by", ["ids", "mask"])
def test_a_reset_leaves_the_other_envs_later_steps_alone(make_backend, by):
    """Resetting some envs (even to their own state) changes nothing in the others' later steps:
    they stay bit-identical to a twin that was not reset, step after step, through contacts."""
    reset, twin = make_backend(), make_backend()
    ctrl = zeros_ctrl(reset, 0.3)
    for b in (reset, twin):
        b.set_state_tensor(torch.arange(4), *initial_state(b))
        b.step_tensor(ctrl, 30)  # the box lands, the cart moves
    views = reset.get_state_views()
    if by == "ids":
        reset.set_state_tensor(torch.tensor([1]), views["qpos"][[1]].clone(), views["qvel"][[1]].clone())
    else:
        mask = torch.tensor([False, False, True, False], device=reset.device)
        reset.set_state_tensor_mask(mask, views["qpos"].clone(), views["qvel"].clone())
    others = [0, 3]
    for _ in range(5):
        for b in (reset, twin):
            b.step_tensor(ctrl, 2)
        assert torch.equal(snapshot(reset)[others], snapshot(twin)[others])


def test_set_state_mask(make_backend):
    b = make_backend()
    b.step_tensor(zeros_ctrl(b, 0.3), 5)
    before = snapshot(b)
    mask = torch.tensor([False, True, False, True], device=b.device)
    qpos, qvel = initial_state(b, 4)  # a row per env (static shapes); unmasked rows are ignored
    qpos[~mask] += 0.5
    b.set_state_tensor_mask(mask, qpos, qvel)
    after = snapshot(b)
    assert torch.equal(after[~mask.cpu()], before[~mask.cpu()])
    assert torch.equal(b.get_state_views()["qpos"][mask], qpos[mask])
    for bad_mask in (torch.tensor([1, 0, 1, 0], device=b.device), mask[:3], mask.tolist()):
        with pytest.raises(ArgumentError, match="mask"):
            b.set_state_tensor_mask(bad_mask, qpos, qvel)
    with pytest.raises(ArgumentError, match="qpos"):
        b.set_state_tensor_mask(mask, qpos[mask], qvel[mask])  # one row per selected env is refused
    assert torch.equal(snapshot(b), after)


@pytest.mark.parametrize(
    "ids, match",
    [
        ([1, 1], "unique"),
        ([0, 4], r"\[0, 4\)"),
        ([-1, 0], r"\[0, 4\)"),
        ([[0, 1]], "1-D"),
        ([0.0, 1.0], "integer"),
    ],
)
def test_set_state_refuses_bad_ids(make_backend, ids, match):
    b = make_backend()
    before = snapshot(b)
    qpos, qvel = initial_state(b, 2)
    with pytest.raises(ArgumentError, match=match):
        b.set_state_tensor(torch.tensor(ids), qpos, qvel)
    assert torch.equal(snapshot(b), before)


def test_set_state_refuses_bad_rows(make_backend):
    b = make_backend()
    before = snapshot(b)
    qpos, qvel = initial_state(b, 2)
    ids = torch.tensor([0, 1])
    with pytest.raises(ArgumentError, match="qpos"):
        b.set_state_tensor(ids, qpos[:, :-1], qvel)
    with pytest.raises(ArgumentError, match="qvel"):
        b.set_state_tensor(ids, qpos, qvel[:1])
    qpos[1, 0] = math.nan
    with pytest.raises(ArgumentError, match="NaN"):
        b.set_state_tensor(ids, qpos, qvel)
    assert torch.equal(snapshot(b), before)


# ---- conventions ---------------------------------------------------------------------


def test_free_joint_convention(make_backend):
    """qpos [p, wxyz body->world]; qvel [v world, w body]; body views in the world frame."""
    b = make_backend(num_envs=1)
    qpos, qvel = initial_state(b, 1)
    c, s = math.cos(math.pi / 4), math.sin(math.pi / 4)
    qpos[0, 3:7] = on(b, [c, 0.0, 0.0, s])  # 90 degrees about world z
    qvel[0, 0:3] = on(b, [0.3, 0.0, 0.0])  # world-frame linear velocity
    qvel[0, 3:6] = on(b, [1.0, 0.0, 0.0])  # spin about the box's own x axis
    b.set_state_tensor(torch.tensor([0]), qpos, qvel)
    box = b.get_body_views(b.find("body", "box"))
    assert torch.allclose(box.quat[0, 0], on(b, [c, 0.0, 0.0, s]), atol=1e-6)
    # the box's x axis points along world y after the rotation
    assert torch.allclose(box.ang_vel[0, 0], on(b, [0.0, 1.0, 0.0]), atol=1e-6)
    assert torch.allclose(box.lin_vel[0, 0], on(b, [0.3, 0.0, 0.0]), atol=1e-6)
    b.step_tensor(zeros_ctrl(b))  # free flight: the quaternion turns about world y
    q = b.get_state_views()["qpos"][0, 3:7]
    angle = SIM_DT * 1.0
    # q = [cos(a/2), 0, sin(a/2), 0] (x) q0, a turn by `angle` about world y
    h = angle / 2
    expected = on(b, [c * math.cos(h), s * math.sin(h), c * math.sin(h), s * math.cos(h)])
    assert torch.allclose(q, expected, atol=1e-4)


# ---- snapshots and determinism ------------------------------------------------------------


def test_snapshot_round_trip_reproduces_trajectory(make_backend):
    b = make_backend()
    qpos, qvel = initial_state(b)
    b.set_state_tensor(torch.arange(4), qpos, qvel)
    ctrl = zeros_ctrl(b, 0.7)
    run(b, 150, ctrl)  # the box lands: contacts and warm starts in play
    saved = snapshot(b)
    first = run(b, 50, ctrl)
    b.set_physics_state(saved)
    assert torch.equal(snapshot(b), saved)
    second = run(b, 50, ctrl)
    if b.get_capabilities().deterministic:
        assert torch.equal(first, second)
    else:
        assert torch.allclose(first, second, atol=1e-5)


def test_set_physics_state_rows_and_portable_width(make_backend):
    b = make_backend()
    run(b, 10, zeros_ctrl(b, 0.2))
    saved = snapshot(b)
    run(b, 10)
    before = snapshot(b)
    b.set_physics_state(saved[[2], : 1 + b.nq + b.nv], env_ids=torch.tensor([2]))
    after = snapshot(b)
    assert torch.equal(after[[0, 1, 3]], before[[0, 1, 3]])
    assert torch.equal(after[2, : 1 + b.nq + b.nv], saved[2, : 1 + b.nq + b.nv])
    with pytest.raises(ArgumentError, match="state"):
        b.set_physics_state(saved[:, :5])
    assert torch.equal(snapshot(b), after)


def test_two_backends_with_same_inputs_step_identically(make_backend):
    a, b = make_backend(), make_backend()
    for x in (a, b):
        qpos, qvel = initial_state(x)
        x.set_state_tensor(torch.arange(4), qpos, qvel)
    ta, tb = run(a, 100, zeros_ctrl(a, -0.4)), run(b, 100, zeros_ctrl(b, -0.4))
    if a.get_capabilities().deterministic:
        assert torch.equal(ta, tb)
    else:
        assert torch.allclose(ta, tb, atol=1e-6)


# ---- forces, wrenches, Jacobians ------------------------------------------------------------


def test_contact_force_supports_resting_box(make_backend):
    b = make_backend()
    if not b.get_capabilities().contact_forces:
        pytest.skip(f"{b.name} declares contact_forces=False")
    run(b, 300)  # the box falls 0.2 m and settles
    box = b.find("body", "box")
    force = b.get_contact_forces(box)[:, 0]
    weight = 1.0 * 9.81
    assert torch.allclose(force[:, 2], full(b, (4,), weight), rtol=0.02)
    assert force[:, :2].abs().max() < 0.05 * weight
    pole = b.get_contact_forces(b.find("body", "pole"))  # collisions disabled: no contact
    assert pole.abs().max() < 1e-9


def test_body_wrench_acts_for_one_step(make_backend):
    b = make_backend()
    qpos, qvel = initial_state(b)
    b.set_state_tensor(torch.arange(4), qpos, qvel)
    box = b.find("body", "box")
    force = full(b, (4, 1, 3), 0.0)
    force[:2, 0, 2] = 9.81  # envs 0, 1: hold the 1 kg box against gravity
    b.apply_body_wrench(box, force, torch.zeros_like(force))
    b.step_tensor(zeros_ctrl(b), nsteps=4)
    vz = b.get_state_views()["qvel"][:, 2].clone()
    assert torch.allclose(vz[:2], full(b, (2,), 0.0), atol=1e-9)
    assert torch.allclose(vz[2:], full(b, (2,), -9.81 * 4 * SIM_DT), rtol=1e-6)
    b.step_tensor(zeros_ctrl(b), nsteps=4)  # gone after that call
    dv = b.get_state_views()["qvel"][:, 2] - vz
    assert torch.allclose(dv, full(b, (4,), -9.81 * 4 * SIM_DT), rtol=1e-6)
    with pytest.raises(ArgumentError, match="force"):
        b.apply_body_wrench(box, force[:, :, :2], torch.zeros_like(force))


def test_site_jacobian_maps_qvel_to_site_velocity(make_backend):
    b = make_backend(num_envs=2)
    if not b.get_capabilities().site_jacobian:
        pytest.skip(f"{b.name} declares site_jacobian=False")
    qpos, qvel = initial_state(b, 2)
    qvel[:, b.joint_qvel_slice("slider")] = 0.4
    qvel[:, b.joint_qvel_slice("hinge")] = on(b, [[1.0], [-2.0]])
    b.set_state_tensor(torch.arange(2), qpos, qvel)
    jacp, _ = b.get_site_jacobian(int(b.find("site", "tip")[0]))
    tip = b.get_sensor_view("tip_pos").clone()
    # the cart-pole's qpos and qvel line up: q + eps*v moves along v; float32 needs a larger eps
    eps, atol = (1e-6, 1e-4) if qvel.dtype == torch.float64 else (1e-3, 1e-2)
    b.set_state_tensor(torch.arange(2), qpos + eps * torch.cat([full(b, (2, 7), 0.0), qvel[:, 6:]], 1), qvel)
    fd = (b.get_sensor_view("tip_pos") - tip) / eps
    predicted = torch.einsum("nij,nj->ni", jacp, torch.cat([full(b, (2, 6), 0.0), qvel[:, 6:]], 1))
    assert torch.allclose(predicted, fd, atol=atol)


# ---- domain randomization ----------------------------------------------------------------------


def test_dr_terms_round_trip_and_defaults_stay_compiled(make_backend):
    terms = make_backend(2).get_dr_capabilities()
    b = make_backend(randomize=list(terms))
    for term, spec in terms.items():
        default = b.get_dr_default(term)
        assert tuple(default.shape) == spec.shape
        assert torch.equal(b.get_dr_param(term)[0].cpu(), default.cpu())
        values = modified_entries(b, term).expand(2, *spec.shape).clone()
        b.set_dr_param(term, torch.tensor([3, 1]), values)
        assert torch.allclose(b.get_dr_param(term, torch.tensor([1, 3])).cpu(), values.cpu())
        assert torch.equal(
            b.get_dr_param(term, torch.tensor([0, 2])).cpu(), default.expand(2, *spec.shape).cpu()
        )
        assert torch.equal(b.get_dr_default(term).cpu(), default.cpu())


def test_dr_refuses_unphysical_values_and_changes_nothing(make_backend):
    b = make_backend(randomize=["body_mass"])
    mass = b.get_dr_param("body_mass", torch.tensor([0]))
    bad = mass.clone()
    bad[0, 1] = -1.0
    with pytest.raises(ArgumentError, match="body_mass"):
        b.set_dr_param("body_mass", torch.tensor([0]), bad)
    zero = mass.clone()
    zero[0, 1] = 0.0
    with pytest.raises(ArgumentError, match="body_mass"):
        b.set_dr_param("body_mass", torch.tensor([0]), zero)
    with pytest.raises(ArgumentError, match="values"):
        b.set_dr_param("body_mass", torch.tensor([0]), mass[:, :-1])
    assert torch.equal(b.get_dr_param("body_mass", torch.tensor([0])), mass)


def test_dr_undeclared_or_unsupported_terms_raise_capability_error(make_backend, backend_name):
    b = make_backend()
    terms = b.get_dr_capabilities()
    for term in DR_TERMS:
        if term not in terms:
            with pytest.raises(CapabilityError, match=term):
                b.get_dr_param(term)
            with pytest.raises(CapabilityError, match=term):
                create_backend(backend_name, 2, randomize=[term])
        elif terms[term].declare:  # must be named at construction
            with pytest.raises(CapabilityError, match=term):
                b.set_dr_param(term, torch.tensor([0]), b.get_dr_default(term)[None])


# How each term shows in the physics. Measures take a trajectory (N, T, nq + nv).
def _hinge_speed(b, traj):  # mean |pole angular velocity|
    return traj[:, :, b.nq + b.joint_qvel_slice("hinge").start].abs().mean(1)


def _cart_progress(b, traj):  # mean cart position on its way to the servo target (1 m)
    return traj[:, :, b.joint_qpos_slice("slider").start].mean(1)


def _pole_angle(b, traj):
    return traj[:, -1, b.joint_qpos_slice("hinge").start]


def _box_slide(b, traj):  # x reached by the box pushed along the floor
    return traj[:, -1, 0]


def _box_height(b, traj):
    return traj[:, -1, 2]


# term -> (object changed, measure, expected sign of (modified - reference), 0: any change)
EFFECTS = {
    "body_mass": ("cart", _cart_progress, -1),  # a heavier cart lags its servo target
    "body_com": ("pole", _pole_angle, 0),
    "geom_friction": (
        ["box", "floor"],
        _box_slide,
        1,
    ),  # less friction (MuJoCo takes the max of the two): the box slides farther
    # softer contacts (a longer time constant, a lower impedance): the resting box sinks deeper
    "geom_solref": (["box", "floor"], _box_height, -1),
    "geom_solimp": (["box", "floor"], _box_height, -1),
    "geom_size": ("box", _box_height, 1),  # a bigger box rests higher
    "dof_damping": ("hinge", _hinge_speed, -1),
    "dof_armature": ("slider", _cart_progress, -1),
    "dof_frictionloss": ("hinge", _hinge_speed, -1),
    "actuator_kp": ("cart_servo", _cart_progress, 1),
    "actuator_kd": ("cart_servo", _cart_progress, -1),
    "gravity": ("", _box_height, 1),  # zero gravity: the box stays up
}


def modified(default: torch.Tensor, term: str) -> torch.Tensor:
    """A physically valid, clearly different value of a term's entries."""
    if term == "gravity":
        return torch.zeros_like(default)
    if term == "body_com":
        return default - torch.tensor([0.0, 0.0, 0.2], dtype=default.dtype, device=default.device)
    if term == "geom_friction":
        return default * 0.2
    if term == "geom_solimp":  # dmin and dmax halved
        return default * torch.tensor([0.5, 0.5, 1.0, 1.0, 1.0], dtype=default.dtype, device=default.device)
    if term == "geom_size":
        return default * 1.5
    return default * 3.0 + (1.0 if term.startswith("dof_") or term == "actuator_kd" else 0.0)


def modified_entries(b, term: str) -> torch.Tensor:
    """`modified` on every entry of a term, but the floor's size: a plane's size is not its shape,
    and geom_size refuses to change it."""
    default = b.get_dr_default(term)
    values = modified(default, term)
    if term == "geom_size":
        floor = b.find("geom", "floor")
        values[floor] = default[floor]
    return values


@pytest.mark.parametrize("term", DR_TERMS)
def test_dr_term_changes_the_physics(make_backend, backend_name, term):
    terms = make_backend(2).get_dr_capabilities()
    if term not in terms:
        pytest.skip(f"{backend_name} declares no {term} (CapabilityError is tested above)")
    b = make_backend(num_envs=2, randomize=[term])
    target, measure, sign = EFFECTS[term]
    qpos, qvel = initial_state(b, 2)
    if term == "geom_friction":  # the box on the floor, pushed along x
        qpos[:, 2], qvel[:, 0] = 0.1, 1.0
    if term in ("geom_solref", "geom_solimp", "geom_size"):  # the box resting on the floor
        qpos[:, 2] = 0.1
    b.set_state_tensor(torch.arange(2), qpos, qvel)
    default = b.get_dr_default(term)
    values = default.clone()
    kind = {"body": "body", "geom": "geom", "actuator": "actuator", "dof": "joint"}.get(terms[term].index)
    if kind is None:
        values = modified(default, term)
    else:
        ids = [b.joint_qvel_slice(target).start] if kind == "joint" else b.find(kind, target)
        values[ids] = modified(default[ids], term)
    b.set_dr_param(term, torch.tensor([1]), values[None])
    ctrl = zeros_ctrl(b)
    ctrl[:, 0] = 1.0  # servo target 1 m
    reference, changed = measure(b, run(b, 100, ctrl)).tolist()
    assert reference != changed, f"{term} changed the stored value but not the physics"
    if sign:
        assert (changed - reference) * sign > 0, f"{term}: {reference} -> {changed}, expected sign {sign}"


def test_dr_mass_changes_holding_force(make_backend):
    """A heavier box falls the same but pushes harder on the floor."""
    b = make_backend(num_envs=2, randomize=["body_mass"])
    if not b.get_capabilities().contact_forces:
        pytest.skip(f"{b.name} declares contact_forces=False")
    mass = b.get_dr_default("body_mass").clone()
    mass[b.find("body", "box")] *= 2.5
    b.set_dr_param("body_mass", torch.tensor([1]), mass[None])
    fall = run(b, 20)[:, -1, 2]
    assert torch.allclose(fall[0], fall[1], atol=1e-9)  # before landing
    run(b, 300)
    force = b.get_contact_forces(b.find("body", "box"))[:, 0, 2]
    assert torch.allclose(force[1] / force[0], on(b, 2.5), rtol=0.02)


def test_pop_diverged_flags_only_the_blown_up_env_once(make_backend):
    b = make_backend(num_envs=3)
    qpos, qvel = initial_state(b, 3)
    qvel[2, b.joint_qvel_slice("hinge")] = 1e8  # fine to write; its centripetal load blows up the step
    b.set_state_tensor(torch.arange(3), qpos, qvel)
    assert not b.pop_diverged().any()
    b.step_tensor(zeros_ctrl(b), nsteps=2)
    assert b.pop_diverged().tolist() == [False, False, True]
    healthy = initial_state(b, 1)
    b.set_state_tensor(torch.tensor([2]), *healthy)
    b.step_tensor(zeros_ctrl(b))
    assert not b.pop_diverged().any()


# ---- DR on MuJoCo's "simple" bodies ----------------------------------------------------

SIMPLE_BODIES = """
<mujoco>
  <compiler inertiafromgeom="{from_geoms}"/>
  <option timestep="0.005" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="brick" pos="0 0 1">
      <freejoint/>
      {brick_inertial}
      <geom type="box" size=".1 .15 .2" mass="2" contype="0" conaffinity="0"/>
    </body>
    <body name="sled" pos="0 1 1">
      <joint name="rail" type="slide" axis="1 0 0"/>
      {sled_inertial}
      <geom type="box" size=".1 .1 .1" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""
# the geoms' own inertias (boxes of those masses and half-sizes), for the explicit inertials
BRICK, SLED = (
    '<inertial pos="{}" mass="2" diaginertia="{:.12g} {:.12g} {:.12g}"/>',
    '<inertial pos="{}" mass="1" diaginertia="{:.12g} {:.12g} {:.12g}"/>',
)
BRICK_I = (2 / 3 * (0.15**2 + 0.2**2), 2 / 3 * (0.1**2 + 0.2**2), 2 / 3 * (0.1**2 + 0.15**2))
SLED_I = (1 / 3 * 0.02,) * 3


@pytest.mark.parametrize("from_geoms", [False, True])
def test_body_com_write_on_simple_bodies_equals_the_recompiled_model(backend_name, tmp_path, from_geoms):
    """Bodies whose COM sits at their origin are "simple" to MuJoCo's compiler (a diagonal block
    of M): moving their COM by DR must give the same motion as compiling the moved COM, also
    where the scene takes inertias from its geoms (inertiafromgeom="true")."""
    paths = {}
    for name, com in (("origin", "0 0 0"), ("moved", "0.06 -0.02 0.03")):
        paths[name] = tmp_path / f"{name}.xml"
        geoms = from_geoms and name == "origin"
        paths[name].write_text(
            SIMPLE_BODIES.format(
                from_geoms="true" if geoms else "auto",
                brick_inertial="" if geoms else BRICK.format(com, *BRICK_I),
                sled_inertial="" if geoms else SLED.format(com, *SLED_I),
            )
        )
    randomized = create_backend(backend_name, 2, scene=str(paths["origin"]), randomize=["body_com"])
    compiled = create_backend(backend_name, 2, scene=str(paths["moved"]))
    try:
        dtype, dev = randomized.get_capabilities().dtype, randomized.device
        com = randomized.get_dr_default("body_com").clone()
        com[1:] = torch.tensor([0.06, -0.02, 0.03], dtype=com.dtype)
        randomized.set_dr_param("body_com", torch.tensor([0, 1]), com.expand(2, -1, -1).clone())
        qpos = torch.as_tensor(randomized.info.qpos0, dtype=dtype, device=dev).repeat(2, 1)
        qvel = torch.zeros(2, randomized.nv, dtype=dtype, device=dev)
        qvel[:, 3:6] = torch.tensor([1.0, 2.0, 0.5], dtype=dtype)  # the brick tumbles
        qvel[:, 6] = 0.3  # the sled slides
        for b in (randomized, compiled):
            b.set_state_tensor(torch.tensor([0, 1]), qpos.clone(), qvel.clone())
            b.step_tensor(torch.zeros(2, 0, dtype=dtype, device=dev), 20)
        tol = 1e-9 if dtype == torch.float64 else 1e-4
        for key in ("qpos", "qvel"):
            torch.testing.assert_close(
                randomized.get_state_views()[key].cpu(),
                compiled.get_state_views()[key].cpu(),
                atol=tol,
                rtol=0,
            )
    finally:
        randomized.close()
        compiled.close()


FREE_BASE_AND_BALL = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".2 .1 .05" mass="3"/>
      <body name="upper" pos="0.2 0 0">
        <joint name="shoulder" type="ball" pos="0 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size=".03" mass="0.5"/>
        <body name="lower" pos="0.3 0 0">
          <joint name="elbow" type="hinge" axis="0 1 0"/>
          <joint name="extend" type="slide" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0.25 0 0" size=".03" mass="0.3"/>
          <site name="tool" pos="0.25 0.02 -0.01"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_site_jacobian_is_mujocos_with_a_free_base_and_a_ball_joint(backend_name, tmp_path):
    """Free-joint rotations are body-frame and ball joints count: the Jacobian of a site equals
    MuJoCo's on a tumbling base, and Jacobian . qvel is the site's velocity."""
    path = tmp_path / "free_base_ball.xml"
    path.write_text(FREE_BASE_AND_BALL)
    b = create_backend(backend_name, 2, scene=str(path))
    reference = create_backend("mujoco", 2, scene=str(path))
    try:
        if not b.get_capabilities().site_jacobian:
            pytest.skip(f"{backend_name} declares no site_jacobian")
        dtype = b.get_capabilities().dtype
        generator = torch.Generator().manual_seed(1)
        qpos = torch.as_tensor(reference.info.qpos0, dtype=torch.float64).repeat(2, 1)
        turn = torch.nn.functional.normalize(
            torch.randn(2, 2, 4, generator=generator, dtype=torch.float64), dim=-1
        )
        qpos[:, 3:7], qpos[:, 7:11] = turn[:, 0], turn[:, 1]  # base and shoulder orientations
        qpos[:, 11:13] = torch.tensor([0.7, 0.05], dtype=torch.float64)
        qvel = torch.randn(2, reference.nv, generator=generator, dtype=torch.float64)
        site = int(reference.find("site", "tool")[0])
        reference.set_state_tensor(torch.tensor([0, 1]), qpos, qvel)
        b.set_state_tensor(torch.tensor([0, 1]), qpos.to(b.device, dtype), qvel.to(b.device, dtype))
        tol = 1e-9 if dtype == torch.float64 else 1e-4
        for got, want in zip(b.get_site_jacobian(site), reference.get_site_jacobian(site), strict=True):
            torch.testing.assert_close(got.cpu().to(torch.float64), want, atol=tol, rtol=tol)
        jacp, _ = reference.get_site_jacobian(site)
        velocity = (jacp @ qvel[:, :, None])[..., 0]
        dt = 1e-6  # the site's velocity by a forward difference of its position, on the reference
        ahead = qpos.clone()
        mujoco_model = reference.model
        for env in range(2):
            import mujoco

            mujoco.mj_integratePos(mujoco_model, ahead[env].numpy(), qvel[env].numpy(), dt)

        def site_pos(q):
            reference.set_state_tensor(torch.tensor([0, 1]), q, qvel)
            return reference.get_mj_field("site_xpos")[:, site].clone()

        moved = (site_pos(ahead) - site_pos(qpos)) / dt
        torch.testing.assert_close(velocity, moved, atol=1e-4, rtol=1e-4)
    finally:
        b.close()
        reference.close()


def test_contact_forces_at_the_same_step_as_mujoco(backend_name):
    """A box dropped on the floor: through its impact, the contact force on it equals the mujoco
    backend's at the same step (the last physics substep's), not one step apart."""
    sims = [create_backend(backend_name, 1), create_backend("mujoco", 1)]
    try:
        box = sims[1].find("body", "box")
        qpos = torch.as_tensor(sims[1].info.qpos0, dtype=torch.float64)[None].clone()
        qpos[0, 2] = 0.4  # in the air
        forces = []
        for b in sims:
            dtype = b.get_capabilities().dtype
            zeros = torch.zeros(1, b.nv, dtype=dtype, device=b.device)
            b.set_state_tensor(torch.tensor([0]), qpos.to(b.device, dtype), zeros)
            trace = []
            for _ in range(80):
                b.step_tensor(torch.zeros(1, b.nu, dtype=dtype, device=b.device), 2)
                trace.append(b.get_contact_forces(box)[0, 0].cpu().double())
            forces.append(torch.stack(trace))
        assert float(forces[1].abs().max()) > 100  # the impact: about 26 times the box's weight
        torch.testing.assert_close(forces[0], forces[1], atol=1e-2, rtol=1e-4)
    finally:
        for b in sims:
            b.close()
