"""Substep reads (`substep_reads=`, `Task.substep_reads`): derived quantities served as the
engine's last substep left them, where a reference environment reads them.

On the mujoco backend they equal a loop of plain MjData stepped with `mj_step` (cfrc_ext after
`mj_rnePostConstraint`, as Gymnasium v5 reads it), the step runs no forward pass at the state
for them, a written row reads at its new state, and a read at the state that would recompute
one is refused. Unknown names are refused at construction; an engine that cannot serve one
declares it and warns.
"""

import importlib.util
import os

import mujoco
import numpy as np
import pytest
import torch

import unienv
from unienv.backends import SUBSTEP_READS, create
from unienv.errors import CapabilityError, UnknownNameError
from unienv.tasks import GYM_ASSETS, task_class

ANT = os.path.join(GYM_ASSETS, "ant.xml")
N = 3


def start(backend, model, rng) -> list[mujoco.MjData]:
    """Random states written into the backend and into one MjData per env."""
    qpos = model.qpos0 + rng.uniform(-0.1, 0.1, (N, model.nq))
    qvel = 0.1 * rng.standard_normal((N, model.nv))
    backend.set_state_tensor(torch.arange(N), torch.from_numpy(qpos), torch.from_numpy(qvel))
    datas = [mujoco.MjData(model) for _ in range(N)]
    for d, q, v in zip(datas, qpos, qvel, strict=True):
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(model, d)
    return datas


def step(backend, model, datas, rng, nsteps: int = 5) -> None:
    u = rng.uniform(-1, 1, (N, model.nu))
    backend.step_tensor(torch.from_numpy(u), nsteps)
    for d, ctrl in zip(datas, u, strict=True):
        d.ctrl[:] = ctrl
        mujoco.mj_step(model, d, nstep=nsteps)


def test_substep_reads_are_what_mj_step_left_and_cfrc_ext_after_rne_post_constraint():
    fields = ("cfrc_ext", "cinert", "qfrc_constraint", "body_views")
    backend = create("mujoco", ANT, N, 0.01, nthread=2, substep_reads=fields)
    assert backend.get_capabilities().substep_reads == frozenset(fields)
    model, rng = mujoco.MjModel.from_xml_path(ANT), np.random.default_rng(0)
    datas = start(backend, model, rng)
    for _ in range(60):  # the ant lands: contacts, RK4
        step(backend, model, datas, rng)
    for d in datas:
        mujoco.mj_rnePostConstraint(model, d)  # as Gymnasium's step ends
    assert np.abs(np.stack([d.cfrc_ext for d in datas])).max() > 1.0  # in contact
    for name in ("cfrc_ext", "cinert", "qfrc_constraint"):
        expected = np.stack([getattr(d, name) for d in datas])
        np.testing.assert_array_equal(backend.get_mj_field(name).numpy(), expected, err_msg=name)
    torso = backend.find("body", "torso")
    pos = np.stack([d.xpos[1] for d in datas])
    np.testing.assert_array_equal(backend.get_body_views(torso).pos[:, 0].numpy(), pos)
    # one substep behind the state: the torso's xpos is not its free joint's qpos
    assert not np.array_equal(pos, backend.get_state_views()["qpos"][:, :3].numpy())


def test_a_written_row_reads_at_its_new_state_and_the_others_keep_the_last_substeps():
    backend = create("mujoco", ANT, N, 0.01, nthread=1, substep_reads=("cfrc_ext", "site_xpos"))
    model, rng = mujoco.MjModel.from_xml_path(ANT), np.random.default_rng(1)
    datas = start(backend, model, rng)
    for _ in range(60):
        step(backend, model, datas, rng)
    d = datas[1]
    qpos, qvel = d.qpos + 0.01, d.qvel.copy()
    backend.set_state_tensor(torch.tensor([1]), torch.from_numpy(qpos[None]), torch.from_numpy(qvel[None]))
    mujoco.mj_resetData(model, d)  # as a reset does (Gymnasium's too), then the state
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(model, d)
    for e in datas:
        mujoco.mj_rnePostConstraint(model, e)
    expected = np.stack([e.cfrc_ext for e in datas])
    np.testing.assert_array_equal(backend.get_mj_field("cfrc_ext").numpy(), expected)


def test_the_step_runs_no_forward_pass_for_substep_reads():
    backend = create("mujoco", ANT, N, 0.01, nthread=1, substep_reads=("qfrc_constraint", "site_xpos"))
    backend.get_mj_field("qfrc_constraint")
    stages, forwards = [], []
    batch = backend._batch
    step, forward = batch.step, batch.forward
    batch.step = lambda ids=None, nstep=1, stage=0: (stages.append(stage), step(ids, nstep, stage))[1]
    batch.forward = lambda *a, **k: (forwards.append(a), forward(*a, **k))[1]
    for _ in range(3):
        backend.step_tensor(torch.zeros(N, backend.nu, dtype=torch.float64), 5)
        backend.get_mj_field("qfrc_constraint"), backend.get_mj_field("site_xpos")
    assert stages == [0, 0, 0] and not forwards


def test_a_read_at_the_state_that_would_overwrite_a_substep_read_is_refused():
    backend = create("mujoco", ANT, N, 0.01, nthread=1, substep_reads=("body_views",))
    backend.step_tensor(torch.zeros(N, backend.nu, dtype=torch.float64), 5)
    with pytest.raises(CapabilityError, match="substep_reads: .*body_views"):
        backend.get_mj_field("cvel")


def test_an_unknown_substep_read_is_refused_naming_the_closest():
    with pytest.raises(UnknownNameError, match="substep_reads.*'cfrc_ex'.*did you mean 'cfrc_ext'"):
        create("mujoco", ANT, N, 0.01, substep_reads=("cfrc_ex",))
    assert "cfrc_ext" in SUBSTEP_READS


def test_the_reproduction_tasks_declare_their_substep_reads():
    env = unienv.make("inverted_double_pendulum", num_envs=2)
    try:
        assert env.backend.get_capabilities().substep_reads == {"site_xpos", "qfrc_constraint"}
    finally:
        env.close()


@pytest.mark.skipif(importlib.util.find_spec("mujoco_warp") is None, reason="mjwarp is not installed")
def test_an_engine_that_cannot_serve_them_declares_and_warns():
    with pytest.warns(UserWarning, match="reads body_views at the returned state"):
        backend = create("mjwarp", ANT, 2, 0.01, device="cpu", substep_reads=("body_views",))
    caps = backend.get_capabilities()
    assert caps.substep_reads == frozenset()
    assert "reads body_views at the returned state, not as the last substep left it" in caps.differences
    backend.close()


def test_acceleration_sensors_are_the_last_substeps_and_the_others_at_the_state():
    """dm_control's legacy step: touch sensors where mj_step left them, positions, velocities
    and their sensors after mj_step1 at the new state; a written row's at its new state."""
    scene = task_class("dmc_hopper_hop")().scene
    backend = create("mujoco", scene, N, 0.005, nthread=2, substep_reads=("sensors",))
    model, rng = mujoco.MjModel.from_xml_path(scene), np.random.default_rng(2)
    datas = start(backend, model, rng)
    names = ("touch_toe", "touch_heel", "torso_subtreelinvel")

    def sensors(ds) -> dict:
        return {n: np.stack([d.sensor(n).data for d in ds]) for n in names}

    touched = False
    for i in range(100):
        backend.get_sensor_view("touch_toe")  # read every step
        step(backend, model, datas, rng, nsteps=4)
        for d in datas:
            mujoco.mj_step1(model, d)
        if i == 60:  # one env restarts
            d = datas[2]
            qpos, qvel = d.qpos.copy(), -d.qvel
            backend.set_state_tensor(
                torch.tensor([2]), torch.from_numpy(qpos[None]), torch.from_numpy(qvel[None])
            )
            mujoco.mj_resetData(model, d)
            d.qpos[:], d.qvel[:] = qpos, qvel
            mujoco.mj_forward(model, d)
        expected = sensors(datas)
        touched |= bool(expected["touch_toe"].any() or expected["touch_heel"].any())
        for n in names:
            np.testing.assert_array_equal(
                backend.get_sensor_view(n).numpy(), expected[n], err_msg=f"{n}, step {i}"
            )
    assert touched  # the touch sensors saw contact
