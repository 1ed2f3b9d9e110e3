"""The CPU engine's host reads (`MujocoBackend.host_reads()`, what the env hands a NumPy task):
each read gives the backend's own read's values as NumPy arrays, at the state the backend holds,
with the same refusals; and a single env's step on the CPU engine then calls no torch at all."""

import copy
import cProfile
import os
import pstats

import mujoco
import numpy as np
import pytest
import torch

import unienv
from unienv.backends import create
from unienv.backends.scene import MJ_FIELDS
from unienv.errors import ArgumentError, BackendClosedError

SCENE = os.path.join(os.path.dirname(__file__), "..", "contract", "scene.xml")  # a free box and a cart-pole


def stepped_backend(n=3, steps=40):
    """The contract scene, n envs from different states, stepped with different controls."""
    backend = create("mujoco", SCENE, n, 0.005, nthread=2)
    rng = np.random.default_rng(0)
    qpos = backend.info.qpos0 + rng.uniform(-0.2, 0.2, (n, backend.nq))
    qpos[:, 3:7] = [1.0, 0.0, 0.0, 0.0]  # the box's quaternion
    backend.set_state_tensor(
        torch.arange(n), torch.from_numpy(qpos), torch.zeros(n, backend.nv, dtype=torch.float64)
    )
    for _ in range(steps):  # the box lands: contact forces
        backend.step_tensor(torch.from_numpy(rng.uniform(-1, 1, (n, backend.nu))), 2)
    return backend


def reads(reader, backend):
    """Every read of the contract, in one order."""
    box, tip = backend.find("body", ["box", "pole"]), int(backend.find("site", "tip")[0])
    out = {f"state.{k}": v for k, v in reader.get_state_views().items()}
    out |= {f"body.{k}": v for k, v in reader.get_body_views(box)._asdict().items()}
    out |= {f"sensor.{name}": reader.get_sensor_view(name) for name in ("hinge_angle", "tip_pos")}
    out["contact"] = reader.get_contact_forces(box)
    out["jacp"], out["jacr"] = reader.get_site_jacobian(tip)
    out |= {f"field.{name}": reader.get_mj_field(name) for name in MJ_FIELDS}
    return out


@pytest.mark.parametrize("host_first", [True, False], ids=["host_reads_first", "tensors_first"])
def test_each_host_read_is_the_backends_read_as_numpy(host_first):
    """Whichever form reads first after a step (and so computes the stages), both give the
    same values, bit for bit, and those are MuJoCo's at the state the backend holds."""
    backend = stepped_backend()
    host = backend.host_reads()
    for _ in range(3):
        backend.step_tensor(torch.full((3, backend.nu), 0.3, dtype=torch.float64), 2)
        first, second = (host, backend) if host_first else (backend, host)
        a, b = reads(first, backend), reads(second, backend)
        arrays, tensors = (a, b) if host_first else (b, a)
        for name in arrays:
            assert arrays[name].__class__ is np.ndarray, name
            assert isinstance(tensors[name], torch.Tensor), name
            np.testing.assert_array_equal(arrays[name], tensors[name].numpy(), err_msg=name)
    # the state views are the batch's rows; the derived reads are those of mj_forward at them
    assert np.shares_memory(host.get_state_views()["qpos"], backend.get_state_views()["qpos"].numpy())
    model = mujoco.MjModel.from_xml_path(SCENE)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = (host.get_state_views()[k][1] for k in ("qpos", "qvel"))
    data.ctrl[:] = host.get_state_views()["ctrl"][1]
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(
        host.get_body_views(backend.find("body", "pole")).pos[1, 0], data.xpos[3], atol=1e-12
    )
    np.testing.assert_allclose(host.get_sensor_view("tip_pos")[1], data.sensor("tip_pos").data, atol=1e-12)
    np.testing.assert_allclose(host.get_mj_field("qfrc_constraint")[1], data.qfrc_constraint, atol=1e-9)


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.get_body_views([7]),
        lambda r: r.get_body_views(["lid"]),
        lambda r: r.get_contact_forces([-1]),
        lambda r: r.get_sensor_view("tip_velocity"),
        lambda r: r.get_site_jacobian(3),
        lambda r: r.get_mj_field("qacc"),
    ],
    ids=["body_id", "body_name", "contact_body", "sensor", "site", "field"],
)
def test_a_host_read_refuses_what_the_backends_read_refuses(call):
    backend = stepped_backend(steps=1)
    with pytest.raises(Exception) as refused:
        call(backend)
    with pytest.raises(type(refused.value)) as host_refused:
        call(backend.host_reads())
    assert isinstance(refused.value, (ArgumentError, KeyError, ValueError)), refused.value
    assert str(host_refused.value) == str(refused.value)


def test_host_reads_of_a_closed_backend_raise_and_the_rest_is_the_backends():
    backend = stepped_backend(steps=1)
    host = backend.host_reads()
    assert host.num_envs == 3 and host.info is backend.info
    assert np.array_equal(host.find("body", "box"), backend.find("body", "box"))
    assert copy.copy(host).backend is backend  # a copy is built without __init__: no recursion
    backend.close()
    with pytest.raises(BackendClosedError):
        host.get_state_views()
    with pytest.raises(BackendClosedError):
        host.get_body_views([1])


def torch_calls(fn) -> list[str]:
    """The torch functions and methods `fn` ran (cProfile's record of every call)."""
    profile = cProfile.Profile()
    profile.runcall(fn)
    names = [f"{file}:{name}" for file, _, name in pstats.Stats(profile).stats]
    return [n for n in names if "torch" in n]


@pytest.mark.parametrize("task", ["inverted_double_pendulum", "reacher", "ant", "quadruped"])
def test_the_single_envs_step_and_reset_call_no_torch_on_the_cpu_engine(task):
    """A torch call inside a NumPy step costs a few microseconds (the single env's overhead over
    Gymnasium's is tens): state views, body views, MuJoCo fields and contact forces reach the
    task as the engine's NumPy arrays, and its outputs leave as NumPy."""
    env = unienv.make_single(task, max_episode_steps=8)
    env.reset(seed=0)
    actions = [env.action_space.sample() for _ in range(20)]

    def run():
        for a in actions:  # episodes of 8 steps: resets too
            if any(env.step(a)[2:4]):
                env.reset()

    run()  # first reads bind outputs and find ids
    assert torch_calls(run) == []
    env.close()
