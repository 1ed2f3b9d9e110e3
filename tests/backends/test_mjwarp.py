"""The mjwarp backend: construction errors and declarations (run everywhere), and a
cross-check against the CPU `mujoco` backend where MuJoCo Warp can run (CUDA, or
Warp's CPU device).

Cross-check: same model, same initial states and controls. The cart-pole's
per-step states agree to float32 accuracy over 100 steps (atol 2e-5). The ant
(RK4, contacts, joint limits, gear-150 motors) is chaotic once its legs touch,
so it is checked two ways: its trajectory agrees to 1e-4 for the first 8 steps
(before contact), and every one step from the CPU backend's state agrees to a
stated tolerance: qpos within 1e-2 and qvel within 5e-2 relative to its scale
(|dqvel| <= 5e-2 * (1 + max|qvel|)). The qvel tolerance is loose because on the
steps where a contact or a joint limit engages, the two engines' soft-constraint
solves (float64 to 1e-8, float32 to 1e-6) land up to about 3e-2 apart relative to
the velocities that 150x-geared motors reach. That second check is marked xfail:
the measured gap (up to ~8% of the velocity scale at a limit or contact onset) is
larger than solver tolerances explain and is not yet diagnosed.
"""

import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.threads import in_two_threads
from unienv.backends import create
from unienv.backends.mjwarp import MjwarpBackend
from unienv.errors import ArgumentError, CapabilityError, install_command
from unienv.tasks import task_class

from ..contract.conftest import MJWARP_DEVICE, SCENE, SIM_DT

needs_engine = pytest.mark.skipif(MJWARP_DEVICE is None, reason="MuJoCo Warp cannot run here")


def test_importing_the_backend_imports_no_engine():
    code = "import sys, unienv, unienv.backends.mjwarp; assert 'warp' not in sys.modules, 'warp imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_the_extra_construction_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)  # import fails as if not installed
    with pytest.raises(ModuleNotFoundError, match=re.escape(install_command("mjwarp"))):
        create("mjwarp", SCENE, 2, SIM_DT)


@pytest.mark.skipif(not importlib.util.find_spec("mujoco_warp"), reason="mujoco_warp not installed")
def test_without_cuda_construction_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(CapabilityError, match=r"needs a CUDA GPU.*device='cpu'.*backend='mujoco'"):
        MjwarpBackend(SCENE, 2, SIM_DT)
    with pytest.raises(ArgumentError, match="asks for a CUDA GPU, but this machine has none"):
        MjwarpBackend(SCENE, 2, SIM_DT, device="cuda:0")


@pytest.mark.skipif(not importlib.util.find_spec("mujoco_warp"), reason="mujoco_warp not installed")
@pytest.mark.parametrize(
    "options, match",
    [
        ({"device": "mps"}, "device: expected None, 'cpu', 'cuda'"),
        ({"device": "cuda:99"}, "device"),
        ({"nconmax": 0}, "nconmax: expected a positive int"),
        ({"njmax": 1.5}, "njmax: expected a positive int"),
    ],
)
def test_bad_options_name_the_argument(options, match):
    if options.get("device") == "cuda:99" and not torch.cuda.is_available():
        pytest.skip("checks the CUDA index: needs CUDA")
    with pytest.raises((ArgumentError, CapabilityError), match=match):
        MjwarpBackend(SCENE, 2, SIM_DT, **options)


@needs_engine
def test_declarations_and_zero_copy_views():
    with MjwarpBackend(SCENE, 3, SIM_DT, device=MJWARP_DEVICE) as b:
        caps = b.get_capabilities()
        assert (caps.backend, caps.dtype, caps.mj_fields) == ("mjwarp", torch.float32, True)
        assert caps.deterministic == (b.device.type == "cpu")  # CUDA atomics reorder sums
        # only body_com is declared: it compiles the model without MuJoCo's simple-body shortcut
        assert [t.name for t in b.get_dr_capabilities().values() if t.declare] == ["body_com"]
        views = b.get_state_views()
        for name in ("time", "qpos", "qvel", "ctrl"):
            assert views[name].data_ptr() == getattr(b._d, name).ptr  # shares Warp's memory
        qpos = views["qpos"]
        b.step_tensor(torch.zeros(3, b.nu, device=b.device), nsteps=3)
        assert b.get_state_views()["qpos"] is qpos  # still the same live view


@needs_engine
def test_mass_dr_recomputes_derived_constants():
    with MjwarpBackend(SCENE, 2, SIM_DT, device=MJWARP_DEVICE) as b:
        mass = b.get_dr_default("body_mass").clone()
        cart = int(b.find("body", "cart")[0])
        mass[cart] *= 4.0
        b.set_dr_param("body_mass", torch.tensor([1]), mass[None])
        b.get_body_views([cart])  # the constants follow at the next derived read or step
        subtree = b._wp.to_torch(b._m.body_subtreemass).cpu()
        assert subtree.shape[0] == 2  # per world
        assert torch.allclose(subtree[1, cart] - subtree[0, cart], torch.tensor(3.0), atol=1e-5)
        acc0 = b._wp.to_torch(b._m.actuator_acc0).cpu()
        assert acc0[1, 0] < acc0[0, 0]  # the servo accelerates the heavier cart less
        inertia = b._wp.to_torch(b._m.body_inertia).cpu()
        assert torch.allclose(inertia[1, cart], 4.0 * inertia[0, cart])


@needs_engine
def test_two_backends_step_from_two_threads():
    """Warp's graph capture is per process: two backends captured and stepped at once from two
    threads take turns (no "Graph capture already in progress", no launch recorded into the
    other's graph), and each follows the trajectory it follows alone."""
    made = [MjwarpBackend(SCENE, 2, SIM_DT, device=MJWARP_DEVICE) for _ in range(3)]

    def trajectory(b, start=None):
        if start is not None:
            start.wait()  # both threads capture their first graphs at the same moment
        out = []
        for k in range(4):
            qpos, qvel = _rows(b, 0.1 * k)
            b.set_state_tensor(torch.tensor([1]), qpos[1:], qvel[1:])  # a reset graph
            b.step_tensor(torch.full((2, b.nu), 0.5, device=b.device), nsteps=3)  # a step graph
            out.append(b.get_sensor_view("tip_pos").clone().cpu())  # a forward graph
        return torch.stack(out)

    with made[0], made[1], made[2]:
        results = in_two_threads(lambda i, start: trajectory(made[i], start))
        alone = trajectory(made[2])
        for i in (0, 1):
            if made[2].get_capabilities().deterministic:
                assert torch.equal(results[i], alone)
            else:
                assert torch.allclose(results[i], alone, atol=1e-5)


def _rows(b, tilt):
    """qpos/qvel for every env: the contract scene at rest, the pole tilted by `tilt`."""
    qpos = torch.as_tensor(b.info.qpos0, dtype=torch.float32, device=b.device).repeat(b.num_envs, 1)
    qpos[:, b.joint_qpos_slice("hinge")] = tilt
    return qpos, torch.zeros(b.num_envs, b.nv, device=b.device)


# ---- cross-check against the CPU mujoco backend ------------------------------------------------


def _pair(task_name, n=8, seed=0, scene=None):
    task = task_class(task_name)()
    scene = scene or task.scene
    cpu = create("mujoco", scene, n, task.sim_dt)
    warp = create("mjwarp", scene, n, task.sim_dt, device=MJWARP_DEVICE)
    g = torch.Generator().manual_seed(seed)
    qpos = torch.as_tensor(cpu.info.qpos0) + 0.1 * (
        2 * torch.rand(n, cpu.nq, generator=g, dtype=torch.float64) - 1
    )
    qvel = 0.1 * torch.randn(n, cpu.nv, generator=g, dtype=torch.float64)
    qpos, qvel = qpos.float().double(), qvel.float().double()  # both start from float32 values
    cpu.set_state_tensor(torch.arange(n), qpos, qvel)
    warp.set_state_tensor(torch.arange(n), qpos.float().to(warp.device), qvel.float().to(warp.device))
    lo, hi = (torch.as_tensor(x).clamp(-1, 1) for x in cpu.info.ctrl_range.T)

    def controls():
        return (lo + (hi - lo) * torch.rand(n, cpu.nu, generator=g, dtype=torch.float64)).float().double()

    return cpu, warp, controls


def _states(b):
    s = b.get_state_views()
    return s["qpos"].double().cpu(), s["qvel"].double().cpu()


@needs_engine
def test_cartpole_steps_agree_with_cpu_backend_to_float32():
    cpu, warp, controls = _pair("cartpole")
    with cpu, warp:
        for step in range(100):
            u = controls()
            cpu.step_tensor(u)
            warp.step_tensor(u.float().to(warp.device))
            (qc, vc), (qw, vw) = _states(cpu), _states(warp)
            np.testing.assert_allclose(qw, qc, atol=2e-5, err_msg=f"qpos, step {step}")
            np.testing.assert_allclose(vw, vc, atol=2e-5, err_msg=f"qvel, step {step}")


@needs_engine
def test_ant_agrees_with_cpu_backend_before_contact():
    cpu, warp, controls = _pair("ant")
    with cpu, warp:
        for step in range(8):  # falling, before the legs touch: float32 accuracy
            u = controls()
            cpu.step_tensor(u)
            warp.step_tensor(u.float().to(warp.device))
            (qc, vc), (qw, vw) = _states(cpu), _states(warp)
            np.testing.assert_allclose(qw, qc, atol=1e-4, err_msg=f"qpos, step {step}")
            np.testing.assert_allclose(vw, vc, atol=1e-4, err_msg=f"qvel, step {step}")


def _one_step_gap(cpu, warp, controls, steps=60):
    """Largest |qvel| difference of one mjwarp step from the CPU backend's state, over `steps`."""
    ids, gap = torch.arange(cpu.num_envs), 0.0
    for _ in range(steps):
        qc, vc = _states(cpu)
        warp.set_state_tensor(ids, qc.float().to(warp.device), vc.float().to(warp.device))
        u = controls()
        cpu.step_tensor(u)
        warp.step_tensor(u.float().to(warp.device))
        (_, vc), (_, vw) = _states(cpu), _states(warp)
        gap = max(gap, ((vw - vc).abs().max() / (1.0 + vc.abs().max())).item())
    return gap


@needs_engine
@pytest.mark.xfail(
    reason="mujoco_warp 4.0.0 and MuJoCo 4.0.0 disagree on pyramidal-cone contacts (the ant's default): "
    "one step from the same state differs by up to ~8% of the velocity scale at a single foot-floor "
    "contact; without contacts, or with elliptic cones (test below), they agree to ~1e-6",
    strict=True,
)
def test_ant_one_step_from_cpu_state_agrees_through_contacts():
    cpu, warp, controls = _pair("ant")
    with cpu, warp:
        assert _one_step_gap(cpu, warp, controls) <= 5e-2


@needs_engine
def test_ant_with_elliptic_cones_agrees_through_contacts(tmp_path):
    """The same contacts and limits as above, with elliptic friction cones: float32 agreement."""
    import mujoco

    spec = mujoco.MjSpec.from_file(task_class("ant")().scene)
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    scene = tmp_path / "ant_elliptic.xml"
    scene.write_text(spec.to_xml())
    cpu, warp, controls = _pair("ant", scene=str(scene))
    with cpu, warp:
        assert _one_step_gap(cpu, warp, controls) <= 1e-4
