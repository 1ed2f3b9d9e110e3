"""The mujoco backend adds nothing to MuJoCo's physics: its trajectories are raw mujoco.batch's, bit for bit."""

import copy
import os

import mujoco
import numpy as np
import torch
from mujoco import batch as mjbatch

from unienv.backends import create
from unienv.tasks import GYM_ASSETS

SCENE = os.path.join(os.path.dirname(__file__), "..", "contract", "scene.xml")  # a free box and a cart-pole


def test_trajectory_is_bit_identical_to_raw_mujoco_batch():
    scene, n = os.path.join(GYM_ASSETS, "ant.xml"), 6
    backend = create("mujoco", scene, n, 0.01, nthread=2)
    model = mujoco.MjModel.from_xml_path(scene)
    raw = mjbatch.Batch(model, nsim=n, nthread=1)
    rng = np.random.default_rng(0)
    qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (n, model.nq))
    qvel = 0.1 * rng.standard_normal((n, model.nv))
    backend.set_state_tensor(torch.arange(n), torch.from_numpy(qpos), torch.from_numpy(qvel))
    raw.bind("qpos")[:], raw.bind("qvel")[:] = qpos, qvel
    raw.forward()
    views = backend.get_state_views()
    for _ in range(100):  # contacts, RK4, 5 substeps per call
        u = rng.uniform(-1, 1, (n, model.nu))
        backend.step_tensor(torch.from_numpy(u), 5)
        raw.bind("ctrl")[:] = u
        raw.step(nstep=5)
    assert np.array_equal(views["qpos"].numpy(), raw.bind("qpos"))
    assert np.array_equal(views["qvel"].numpy(), raw.bind("qvel"))
    # and derived quantities are those of the state it holds, as after mj_forward
    data = raw.get_data(0)
    mujoco.mj_forward(model, data)
    mujoco.mj_rnePostConstraint(model, data)  # cfrc_ext, which the backend always computes
    box = backend.get_body_views(backend.find("body", "torso"))
    np.testing.assert_array_equal(box.pos[0, 0].numpy(), data.xpos[1])
    np.testing.assert_array_equal(backend.get_mj_field("cfrc_ext")[0].numpy(), data.cfrc_ext)


def test_stepping_some_envs_holds_the_others_and_steps_those_as_a_full_step():
    """step_unchecked(env_ids=...), the env's NEXT_STEP restarts: rows outside the ids stay
    bit-identical, rows inside them move as a step of every env moves them."""
    scene, n = os.path.join(GYM_ASSETS, "hopper.xml"), 4
    some, every = (create("mujoco", scene, n, 0.002, nthread=2) for _ in range(2))
    rng = np.random.default_rng(1)
    qpos = torch.from_numpy(some.info.qpos0 + rng.uniform(-0.1, 0.1, (n, some.nq)))
    qvel = torch.from_numpy(rng.uniform(-0.1, 0.1, (n, some.nv)))
    for b in (some, every):
        b.set_state_tensor(torch.arange(n), qpos, qvel)
    ctrl = torch.from_numpy(rng.uniform(-1, 1, (n, some.nu)))
    before = some.get_physics_state().clone()
    some.step_unchecked(ctrl, 4, torch.tensor([1, 3]))
    every.step_unchecked(ctrl, 4)
    after, full = some.get_physics_state(), every.get_physics_state()
    assert torch.equal(after[[0, 2]], before[[0, 2]])
    assert torch.equal(after[[1, 3]], full[[1, 3]]) and not torch.equal(after[1], before[1])
    some.step_unchecked(ctrl, 4, torch.tensor([], dtype=torch.int64))  # nothing to step
    assert torch.equal(some.get_physics_state(), after)


def test_an_env_that_diverges_again_after_its_reset_is_flagged_again():
    """MuJoCo clears a row's warning counters when the row is reset: a blow-up of the same env
    in the very next step must still be flagged (it was compared with the stale count)."""
    b = create("mujoco", SCENE, 3, 0.005)
    b.materialize()
    views = b.get_state_views()
    calm_q, wild_v = views["qpos"][[2]].clone(), views["qvel"][[2]].clone()
    wild_v[0] = 1e9  # below MuJoCo's 1e10 limit now; the accelerations it makes are beyond it
    ctrl = torch.zeros(3, b.nu, dtype=torch.float64)
    for blow_up in range(3):  # each time the env is reset into a state that blows up at once
        b.set_state_tensor(torch.tensor([2]), calm_q, wild_v)
        b.step_tensor(ctrl, 2)
        assert b.pop_diverged().tolist() == [False, False, True], blow_up
    b.close()


def test_the_envs_host_entries_agree_with_the_contracts_calls():
    """The env's fast path on the CPU engine: set_state_unchecked takes NumPy arrays as
    set_state_tensor takes tensors, and pop_diverged_host is None while no env diverged and
    pop_diverged's mask when one did."""
    by_tensor, by_array = (create("mujoco", SCENE, 3, 0.005) for _ in range(2))
    for b in (by_tensor, by_array):
        b.materialize()
    views = by_tensor.get_state_views()
    calm_q, wild_v = views["qpos"][[1]].clone(), views["qvel"][[1]].clone()
    wild_v[0] = 1e9  # accelerations beyond MuJoCo's limit: it resets the row and warns
    ctrl = torch.zeros(3, by_tensor.nu, dtype=torch.float64)
    by_array.step_tensor(ctrl, 2)
    assert by_array.pop_diverged_host() is None  # a calm step
    for b in (by_tensor, by_array):
        b.set_physics_state(by_tensor.get_physics_state())
    by_tensor.set_state_tensor(torch.tensor([1]), calm_q, wild_v)
    by_array.set_state_unchecked(np.array([1]), calm_q.numpy(), wild_v.numpy())
    assert torch.equal(by_array.get_physics_state(), by_tensor.get_physics_state())
    for b in (by_tensor, by_array):
        b.step_tensor(ctrl, 2)
    assert by_tensor.pop_diverged().tolist() == [False, True, False]
    assert by_array.pop_diverged_host().tolist() == [False, True, False]
    by_array.step_tensor(ctrl, 2)  # the row MuJoCo reset steps on calmly
    assert by_array.pop_diverged_host() is None
    for b in (by_tensor, by_array):
        b.close()


FILTER_ARM = """
<mujoco>
  <size nuserdata="2"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.05 0.05 0.05"/></body>
    <body name="arm" pos="0.5 0 0.5">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
    </body>
  </worldbody>
  <actuator>
    <general joint="hinge" dyntype="filter" dynprm="0.05" gainprm="2"/>
    <motor joint="hinge" gear="1"/>
  </actuator>
</mujoco>
"""


def test_a_reset_row_continues_as_after_mj_resetData(tmp_path):
    """The backend's reset (it zeroes the state fields instead of calling mj_resetData, which
    clears a sim's whole buffer) leaves nothing behind: activations, warm start, time, ctrl and
    applied wrenches of the old episode are gone, and the reset rows continue bit for bit as
    MjData reset by MuJoCo itself; on a model with mocap bodies the backend calls MuJoCo's reset."""
    path = tmp_path / "filter_arm.xml"
    path.write_text(FILTER_ARM)
    mocap = os.path.join(os.path.dirname(__file__), "..", "contract", "mocap.xml")
    for scene in (str(path), mocap, os.path.join(GYM_ASSETS, "ant.xml")):
        n, rng = 3, np.random.default_rng(1)
        backend = create("mujoco", scene, n, 0.005, nthread=1)
        backend.materialize()
        model = backend.model
        body = backend.find("body", backend.names("body")[1])
        for _ in range(20):  # an episode leaves activations, warm starts, time and a wrench behind
            wrench = torch.full((n, 1, 3), 5.0, dtype=torch.float64)
            backend.apply_body_wrench(body, wrench, -wrench)
            backend.step_tensor(torch.from_numpy(rng.uniform(-1, 1, (n, model.nu))), 2)
        qpos = model.qpos0 + rng.uniform(-0.05, 0.05, (2, model.nq))
        qvel = rng.uniform(-0.1, 0.1, (2, model.nv))
        backend.set_state_tensor(torch.tensor([0, 2]), torch.from_numpy(qpos), torch.from_numpy(qvel))
        fresh = [mujoco.MjData(model) for _ in range(2)]
        for data, q, v in zip(fresh, qpos, qvel, strict=True):
            data.qpos[:], data.qvel[:] = q, v
        views = backend.get_state_views()
        for _ in range(30):
            u = rng.uniform(-1, 1, (n, model.nu))
            backend.step_tensor(torch.from_numpy(u), 2)
            for data, row in zip(fresh, (0, 2), strict=True):
                data.ctrl[:] = u[row]
                mujoco.mj_step(model, data, nstep=2)
        for data, row in zip(fresh, (0, 2), strict=True):
            assert np.array_equal(views["qpos"][row].numpy(), data.qpos), scene
            assert np.array_equal(views["qvel"][row].numpy(), data.qvel), scene
            assert views["time"][row].item() == data.time, scene
        backend.close()


ROLLING_PIN = """
<mujoco>
  <option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="3 3 0.1"/>
    <body name="pin" pos="0 0 0.25" euler="20 10 0">
      <freejoint/>
      <geom type="capsule" fromto="-0.2 0 0 0.2 0 0" size="0.04"/>
      <site name="tip" pos="0.2 0 0" size="0.01"/>
    </body>
    <body name="flap" pos="0.6 0 0.3">
      <joint name="hinge" type="hinge" axis="1 0 0" damping="0.05"/>
      <geom type="box" size="0.1 0.02 0.15" pos="0 0 -0.15"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="3"/></actuator>
  <sensor>
    <touch name="tip_touch" site="tip"/>
    <accelerometer name="tip_acc" site="tip"/>
    <jointpos name="flap_angle" joint="hinge"/>
  </sensor>
</mujoco>
"""


def test_sensors_and_contact_forces_are_mujocos_though_early_substeps_skip_sensors(tmp_path):
    """Substeps no reader sees run without sensors. A pin dropped on a plane, 3 substeps a step:
    the trajectory stays the scene's own under mj_step; contact forces are the last substep's
    cfrc_ext (mj_rnePostConstraint after mj_step), but for the first read, before which steps
    ran without sensors, and after a sensor read, which made the step compute mj_forward at
    its new state: those are at the state, as are the scene's sensors."""
    path = tmp_path / "rolling_pin.xml"
    path.write_text(ROLLING_PIN)
    model = mujoco.MjModel.from_xml_path(str(path))
    n, rng = 2, np.random.default_rng(4)
    backend = create("mujoco", str(path), n, model.opt.timestep, nthread=1)
    backend.materialize()
    pin = backend.find("body", "pin")
    datas = [mujoco.MjData(model) for _ in range(n)]
    views = backend.get_state_views()
    for step in range(60):  # the pin lands at about step 15
        u = rng.uniform(-1, 1, (n, 1))
        backend.step_tensor(torch.from_numpy(u), 3)
        for row, data in enumerate(datas):
            data.ctrl[:] = u[row]
            mujoco.mj_step(model, data, nstep=3)
            assert np.array_equal(views["qpos"][row].numpy(), data.qpos), step
            assert np.array_equal(views["qvel"][row].numpy(), data.qvel), step
        if step < 10:
            continue  # contact forces unread so far
        expected = []
        for data in datas:
            if step == 10 or (step - 1) % 7 == 0:  # the first read, or a sensor read before the step
                data = copy.copy(data)
                mujoco.mj_forward(model, data)
            mujoco.mj_rnePostConstraint(model, data)
            expected.append(data.cfrc_ext[pin[0], 3:])
        forces = backend.get_contact_forces(pin)[:, 0].numpy()
        np.testing.assert_allclose(forces, np.stack(expected), rtol=1e-12, atol=1e-12, err_msg=str(step))
        if step % 7 == 0:  # the scene's sensors, at the state
            touch, acc = backend.get_sensor_view("tip_touch"), backend.get_sensor_view("tip_acc")
            for row, data in enumerate(datas):
                fresh = copy.copy(data)
                mujoco.mj_forward(model, fresh)
                np.testing.assert_allclose(touch[row].numpy(), fresh.sensor("tip_touch").data, rtol=1e-12)
                np.testing.assert_allclose(acc[row].numpy(), fresh.sensor("tip_acc").data, rtol=1e-12)
    assert float(np.abs(forces).max()) > 1.0  # the pin rests on the plane
    backend.close()


SLIDING_BOX = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1" friction="0.3"/>
    <body name="box" pos="0 0 0.2">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.05" mass="2"/>
      <site name="sole" type="box" pos="0 0 -0.05" size="0.11 0.11 0.02"/>
    </body>
  </worldbody>
  <sensor>
    <touch name="sole_touch" site="sole"/>
    <velocimeter name="sole_vel" site="sole"/>
  </sensor>
</mujoco>
"""


def test_sensor_reads_after_silent_steps_and_state_writes_are_at_the_state(tmp_path):
    """Steps that no reader sees leave sensors off between calls; a sensor read after them, and
    after a state write, still computes the scene's sensors at the state (mj_forward)."""
    path = tmp_path / "sliding_box.xml"
    path.write_text(SLIDING_BOX)
    model = mujoco.MjModel.from_xml_path(str(path))
    backend = create("mujoco", str(path), 3, model.opt.timestep, nthread=1)
    backend.materialize()
    data = mujoco.MjData(model)
    for _ in range(40):  # the box lands and rests: its weight on the sole
        backend.step_tensor(torch.zeros(3, 0, dtype=torch.float64), 4)
    qpos = backend.get_state_views()["qpos"].clone()
    qvel = backend.get_state_views()["qvel"].clone()
    qvel[1, 0] += 1.5  # env 1 slides
    backend.set_state_tensor([1], qpos[1:2], qvel[1:2])
    touch, vel = backend.get_sensor_view("sole_touch"), backend.get_sensor_view("sole_vel")
    for row in range(3):
        data.qpos[:], data.qvel[:] = qpos[row].numpy(), qvel[row].numpy()
        mujoco.mj_forward(model, data)
        np.testing.assert_allclose(touch[row].numpy(), data.sensor("sole_touch").data, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(vel[row].numpy(), data.sensor("sole_vel").data, rtol=1e-9, atol=1e-9)
    assert touch.min() > 10.0 and vel[1, 0] > 1.0  # about 2 kg x 9.81; the slide
    backend.close()


def test_sensors_read_every_one_substep_step_are_at_the_state(tmp_path):
    """A step of one substep whose sensors are read after it computes them in the same batch
    call (sensors on, mj_forward at the new state): each read equals mj_forward's at the state,
    and the trajectory stays mj_step's, through the box's landing and a slide."""
    path = tmp_path / "sliding_box.xml"
    path.write_text(SLIDING_BOX)
    model = mujoco.MjModel.from_xml_path(str(path))
    backend = create("mujoco", str(path), 2, model.opt.timestep, nthread=1)
    backend.materialize()
    datas = [mujoco.MjData(model) for _ in range(2)]
    views = backend.get_state_views()
    for data, speed in zip(datas, (0.0, 1.5), strict=True):
        data.qvel[0] = speed
    backend.set_state_tensor(
        [0, 1], views["qpos"].clone(), torch.from_numpy(np.stack([d.qvel for d in datas]))
    )
    for step in range(80):  # lands at about step 25
        backend.step_tensor(torch.zeros(2, 0, dtype=torch.float64), 1)
        touch, vel = backend.get_sensor_view("sole_touch"), backend.get_sensor_view("sole_vel")
        for row, data in enumerate(datas):
            mujoco.mj_step(model, data)
            assert np.array_equal(views["qpos"][row].numpy(), data.qpos), step
            fresh = copy.copy(data)
            mujoco.mj_forward(model, fresh)
            np.testing.assert_allclose(
                touch[row].numpy(), fresh.sensor("sole_touch").data, rtol=1e-12, atol=1e-12
            )
            np.testing.assert_allclose(
                vel[row].numpy(), fresh.sensor("sole_vel").data, rtol=1e-12, atol=1e-12
            )
    assert touch.min() > 10.0 and abs(float(vel[1, 0])) > 0.0  # resting on the sole; env 1 moved
    backend.close()
