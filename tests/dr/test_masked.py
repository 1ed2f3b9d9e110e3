"""DR driven by masks: the backends' masked write, the manager's static-shape path and
its host syncs (none on the sync-free backends), and the draws it makes."""

import os

import pytest
import torch
import yaml

from tests.contract.conftest import DEVICE_BACKENDS, MJWARP_DEVICE
from tests.contract.test_contract import modified_entries
from tests.dr.conftest import SCENE, ContractTask
from tests.syncs import count_host_syncs
from unienv import dr as domain_randomization
from unienv.backends import create
from unienv.errors import ArgumentError, UnknownNameError
from unienv.utils.rows import Rows, device_rows, host_rows

CFG = os.path.join(os.path.dirname(__file__), "..", "..", "cfg")
MASK = [False, True, False, True]


def test_masked_write_changes_only_the_masked_rows(dr_backend):
    b = dr_backend
    mask = torch.tensor(MASK, device=b.device)
    for term, spec in b.get_dr_capabilities().items():
        before = b.get_dr_param(term)
        values = modified_entries(b, term).expand(4, *spec.shape).clone().to(b.device)
        values[~mask] = float("nan")  # rows outside the mask are ignored, whatever they hold
        written = b.set_dr_param_mask(term, mask, values)
        after = b.get_dr_param(term)
        assert torch.equal(written.cpu(), mask.cpu()), term
        assert torch.allclose(after[MASK], values[mask].to("cpu", torch.float64)), term
        assert torch.equal(after[[not m for m in MASK]], before[[not m for m in MASK]]), term


def test_masked_write_changes_the_physics(dr_backend):
    """A heavier cart lags its servo target; only in the env whose mass was written."""
    b = dr_backend
    mass = b.get_dr_default("body_mass").clone()
    mass[b.find("body", "cart")] *= 3.0
    mask = torch.tensor([False, True, False, False], device=b.device)
    b.set_dr_param_mask("body_mass", mask, mass.expand(4, -1).to(b.device))
    views = b.get_state_views()
    b.set_state_tensor(torch.arange(4), views["qpos"].clone(), torch.zeros_like(views["qvel"]))
    ctrl = torch.zeros(4, b.nu, dtype=views["ctrl"].dtype, device=b.device)
    ctrl[:, 0] = 1.0  # servo target 1 m
    for _ in range(50):
        b.step_tensor(ctrl, 1)
    cart = b.get_state_views()["qpos"][:, b.joint_qpos_slice("slider").start].cpu()
    assert cart[1] < cart[0] and torch.equal(cart[0], cart[2]) and torch.equal(cart[0], cart[3])


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda b, m, v: b.set_dr_param_mask("body_mas", m, v), UnknownNameError, "body_mass"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", m.long(), v), ArgumentError, "mask"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", m[:3], v), ArgumentError, "mask"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", MASK, v), ArgumentError, "mask"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", m, v[:, :-1]), ArgumentError, "values"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", m, v.long()), ArgumentError, "values"),
        (lambda b, m, v: b.set_dr_param_mask("body_mass", m, v.cpu().numpy()), ArgumentError, "values"),
    ],
)
def test_masked_write_refuses_bad_arguments_and_changes_nothing(dr_backend, call, error, match):
    b = dr_backend
    before = b.get_dr_param("body_mass")
    mask = torch.tensor(MASK, device=b.device)
    values = (before * 2.0).to(b.device)
    with pytest.raises(error, match=match):
        call(b, mask, values)
    assert torch.equal(b.get_dr_param("body_mass"), before)


@pytest.mark.parametrize("bad", [float("nan"), -1.0, 0.0])
def test_masked_write_never_writes_a_value_out_of_the_domain(dr_backend, bad):
    """Where host reads are free the call raises and writes nothing; a sync-free backend
    leaves the bad row unwritten (and says so in the mask it returns), writing the others."""
    b = dr_backend
    before = b.get_dr_param("body_mass")
    cart = int(b.find("body", "cart")[0])
    values = (before * 2.0).to(b.device)
    values[1, cart] = bad  # a NaN, a negative mass, a massive body at zero
    mask = torch.tensor(MASK, device=b.device)
    if not b.get_capabilities().sync_free:
        with pytest.raises(ArgumentError, match="values"):
            b.set_dr_param_mask("body_mass", mask, values)
        assert torch.equal(b.get_dr_param("body_mass"), before)
        return
    written = b.set_dr_param_mask("body_mass", mask, values)
    assert written.cpu().tolist() == [False, False, False, True]
    after = b.get_dr_param("body_mass")
    assert torch.equal(after[:3], before[:3])
    assert torch.allclose(after[3], values[3].to("cpu", torch.float64))


# ---- the manager ----------------------------------------------------------------------------

SYNC_FREE = DEVICE_BACKENDS  # built for a GPU (sync-free), run here on the CPU


def _ant(backend_name, config, num_envs):
    from unienv.tasks.gym.ant import Ant

    task = Ant()
    terms = domain_randomization.parse(config)
    backend = create(
        backend_name,
        task.scene,
        num_envs,
        task.sim_dt,
        device="cpu",
        randomize=domain_randomization.backend_params(terms),
    )
    manager = domain_randomization.DomainRandomization(terms, backend, task, seed=0, rows=device_rows)
    backend.materialize()
    task.setup(backend)
    manager.startup()
    return backend, task, manager


@pytest.mark.parametrize("backend_name", SYNC_FREE)
def test_dr_reads_nothing_back_on_a_sync_free_backend(backend_name):
    """cfg/dr/default.yaml on the ant: resets by mask, interval pushes (every 60-120
    steps), latency and observation noise, over 150 env steps, with no host read from
    unienv's code."""
    with open(f"{CFG}/dr/default.yaml") as f:
        config = yaml.safe_load(f)
    n = 8
    backend, task, dr = _ant(backend_name, config, n)
    dev, dtype = backend.device, backend.get_capabilities().dtype
    views = backend.get_state_views()
    qpos, qvel = views["qpos"].clone(), views["qvel"].clone()  # a reset state, full width
    actions = torch.zeros(n, task.single_action_space.shape[0], dtype=dtype, device=dev)
    obs = torch.zeros(n, task.single_observation_space.shape[0], dtype=dtype, device=dev)
    envs = torch.arange(n, device=dev)
    syncs = []
    for step in range(150):
        mask = (envs < 4) & ((envs + step) % 7 == 0)  # often; envs 4-7 run on to their pushes
        with count_host_syncs() as counts:
            rows = device_rows(mask)
            dr.reset(rows)
            dr.reset_state(rows, qpos, qvel)
            applied = dr.actions(actions)
            dr.observation(obs)
            dr.observation(obs, rows)
        syncs.append(counts)
        backend.step_tensor(task.action_to_ctrl(applied), 1)  # the pushes act, the constants follow
    assert not any(syncs), [c for c in syncs if c][:1]
    drawn = {name: lo <= hi for name, (lo, hi) in dr.ranges().items()}
    assert drawn == {**dict.fromkeys(drawn, True), "obs_noise": False}  # no bias: its only draws
    backend.close()


def test_the_mask_path_draws_what_the_ids_path_draws():
    """Env i's draws do not depend on how the envs are picked: a sync-free backend (device
    rows: masks, static shapes) and the CPU engine (host rows: ids, and reset states of the
    reset envs only) give the same values for the same resets."""
    if MJWARP_DEVICE != "cpu":
        pytest.skip("needs mjwarp on Warp's CPU device")
    config = {
        "damping": {"param": "dof_damping", "range": [0.0, 1.0], "operation": "abs"},
        "kp": {"param": "actuator_kp", "range": [1.0, 9.0], "operation": "abs", "shared": True},
        "armature": {
            "param": "dof_armature", "range": [0.0, 0.1], "operation": "abs", "schedule": "interval",
            "interval": [1, 4],
        },
        "push": {"param": "push", "body": "box", "range": [-1.0, 1.0], "interval": [2, 3]},
        "noise": {"param": "obs_noise", "range": [-0.1, 0.1], "bias": 0.1},
        "latency": {"param": "action_latency", "range": [0, 2]},
        "v": {"param": "init_state", "field": "qvel", "objects": "hinge", "range": [-1.0, 1.0]},
    }  # fmt: skip
    terms = domain_randomization.parse(config)
    managers, selectors = [], (host_rows, device_rows)
    for name, select in zip(("mujoco", "mjwarp"), selectors, strict=True):
        device = MJWARP_DEVICE if name == "mjwarp" else None
        randomize = domain_randomization.backend_params(terms)
        backend = create(name, SCENE, 6, ContractTask.sim_dt, device=device, randomize=randomize)
        task = ContractTask()
        manager = domain_randomization.DomainRandomization(terms, backend, task, seed=5, rows=select)
        backend.materialize()
        task.setup(backend)
        manager.startup()
        managers.append(manager)
    assert [m.backend.get_capabilities().sync_free for m in managers] == [False, True]
    g = torch.Generator().manual_seed(0)
    obs = torch.zeros(6, 17, dtype=torch.float64)
    for _ in range(12):
        mask = torch.rand(6, generator=g) < 0.4
        action = torch.rand(6, 2, generator=g, dtype=torch.float64)
        out = []
        for m, select in zip(managers, selectors, strict=True):
            # as the env makes them: host rows that select nothing are empty ids
            rows = select(mask) or Rows(mask, torch.zeros(0, dtype=torch.int64))
            m.reset(rows)
            width = 6 if rows.ids is None else len(rows.ids)  # reset states are aligned with the rows
            qpos, qvel = (torch.zeros(width, k, dtype=torch.float64) for k in (m.backend.nq, m.backend.nv))
            _, qvel = m.reset_state(rows, qpos, qvel)
            if rows.ids is not None:  # back to full width, zero for the envs not reset
                qvel = torch.zeros(6, m.backend.nv, dtype=torch.float64).index_copy(0, rows.ids, qvel)
            out.append((qvel, m.actions(action), m.observation(obs, rows), m.params()))
        (qvel_a, act_a, obs_a, params_a), (qvel_b, act_b, obs_b, params_b) = out
        assert torch.equal(qvel_a, qvel_b) and torch.equal(act_a, act_b) and torch.equal(obs_a, obs_b)
        for name in params_a:
            a, b = params_a[name], params_b[name]
            if name in ("damping", "kp", "armature"):  # undrawn entries hold each engine's default
                drawn = a != managers[0]._bound[list(config).index(name)].base
                a, b = a[drawn], b[drawn]
            assert torch.equal(a, b), name
    assert managers[0].ranges() == managers[1].ranges()
    for m in managers:
        m.backend.close()


def test_a_push_uses_the_randomized_mass_from_the_managers_own_buffer(dr_backend):
    """No read of the backend's masses: the manager's buffer follows its own writes."""
    b = dr_backend
    terms = domain_randomization.parse(
        {
            "mass": {"param": "body_mass", "objects": "box", "range": [2.0, 3.0], "operation": "scale"},
            "push": {"param": "push", "body": "box", "range": [0.5, 0.5], "interval": 1},
        }
    )
    task = ContractTask(box_z=2.0)
    task.setup(b)
    select = device_rows if b.get_capabilities().sync_free else host_rows
    manager = domain_randomization.DomainRandomization(terms, b, task, seed=1, rows=select)
    manager.startup()
    manager.reset(select(torch.ones(4, dtype=torch.bool, device=b.device)))
    box = int(b.find("body", "box")[0])
    assert torch.allclose(manager._current["body_mass"][:, box].cpu(), b.get_dr_param("body_mass")[:, box])
    sent = {}
    b.apply_body_wrench = lambda ids, force, torque: sent.update(force=force)
    try:
        manager.actions(torch.zeros(4, 2, dtype=torch.float64, device=b.device))
    finally:
        del b.apply_body_wrench  # the class's method again
    mass = b.get_dr_param("body_mass")[:, box]
    expected = (mass[:, None] * 0.5 / task.dt).expand(4, 3)
    assert torch.allclose(sent["force"][:, 0].cpu(), expected)
