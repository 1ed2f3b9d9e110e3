"""Mocap bodies: a write moves only the selected envs' bodies, with derived quantities current."""

import os

import pytest
import torch

from tests.contract.conftest import AVAILABLE, backend_options, create_backend
from unienv.errors import ArgumentError, CapabilityError

SCENE = os.path.join(os.path.dirname(__file__), "mocap.xml")
N = 4


def _mocap(backend_name):
    """A backend of the mocap scene, or None where it declares no mocap, once its refusal is checked."""
    backend = create_backend(backend_name, N, scene=SCENE)
    if backend.get_capabilities().mocap:
        return backend
    for call in (
        backend.get_mocap_views,
        lambda: backend.set_mocap_pose_tensor(torch.tensor([0]), *_poses(backend, 1)),
    ):
        with pytest.raises(CapabilityError, match=f"the {backend_name} backend does not support mocap"):
            call()
    backend.close()
    return None


def _poses(backend, n):
    g = torch.Generator().manual_seed(n)
    pos = torch.rand(n, 2, 3, generator=g, dtype=torch.float64) * 2 - 1
    quat = torch.nn.functional.normalize(torch.randn(n, 2, 4, generator=g, dtype=torch.float64), dim=-1)
    quat = quat * torch.sign(quat[..., :1])  # w >= 0: one sign per rotation, to compare
    return pos.to(backend.device), quat.to(backend.device)


def _body_poses(backend):
    views = backend.get_body_views(backend.info.mocap_body)
    return views.pos.cpu().double(), views.quat.cpu().double()


@pytest.mark.parametrize("by", ["ids", "mask"])
def test_mocap_write_moves_only_the_selected_envs(backend_name, by):
    backend = _mocap(backend_name)
    if backend is None:
        return
    tol = 1e-6 if backend.get_capabilities().dtype == torch.float32 else 1e-12
    assert list(backend.info.mocap_body) == list(backend.find("body", ["marker", "paddle"]))
    before_pos, before_quat = _body_poses(backend)
    box_before = backend.get_body_views(backend.find("body", "box")).pos.cpu().clone()
    pos, quat = _poses(backend, N)
    selected = torch.tensor([False, True, False, True])
    if by == "ids":
        backend.set_mocap_pose_tensor(torch.tensor([3, 1]), pos[[3, 1]], quat[[3, 1]])
    else:
        written = backend.set_mocap_pose_tensor_mask(selected.to(backend.device), pos, quat)
        assert torch.equal(written.cpu(), selected)
    after_pos, after_quat = _body_poses(backend)  # no step in between: derived quantities are current
    torch.testing.assert_close(after_pos[selected], pos.cpu()[selected], atol=tol, rtol=0)
    torch.testing.assert_close(after_quat[selected], quat.cpu()[selected], atol=tol, rtol=0)
    assert torch.equal(after_pos[~selected], before_pos[~selected])
    assert torch.equal(after_quat[~selected], before_quat[~selected])
    view_pos, view_quat = backend.get_mocap_views()
    torch.testing.assert_close(view_pos.cpu().double()[selected], pos.cpu()[selected], atol=tol, rtol=0)
    assert torch.equal(backend.get_body_views(backend.find("body", "box")).pos.cpu(), box_before)
    backend.step_tensor(torch.zeros(N, 0, dtype=pos.dtype, device=backend.device), 3)
    torch.testing.assert_close(_body_poses(backend)[0], after_pos, atol=tol, rtol=0)  # they stay put
    backend.close()


def test_mocap_refuses_bad_poses_and_changes_nothing(backend_name):
    backend = _mocap(backend_name)
    if backend is None:
        return
    before = [v.clone() for v in backend.get_mocap_views()]
    pos, quat = _poses(backend, 2)
    with pytest.raises(ArgumentError, match=r"pos: expected shape \(2, 2, 3\)"):
        backend.set_mocap_pose_tensor(torch.tensor([0, 1]), pos[:, :1], quat)
    with pytest.raises(ArgumentError, match="quat: contains NaN"):
        backend.set_mocap_pose_tensor(torch.tensor([0, 1]), pos, quat * float("nan"))
    with pytest.raises(ArgumentError, match="quat: a quaternion has zero norm"):
        backend.set_mocap_pose_tensor(torch.tensor([0, 1]), pos, quat * 0)
    with pytest.raises(ArgumentError, match="env_ids"):
        backend.set_mocap_pose_tensor(torch.tensor([0, N]), pos, quat)
    assert all(torch.equal(a, b) for a, b in zip(before, backend.get_mocap_views(), strict=True))
    backend.close()


def test_a_state_reset_puts_the_mocap_bodies_back(backend_name):
    backend = _mocap(backend_name)
    if backend is None:
        return
    home = [v.clone() for v in backend.get_mocap_views()]
    pos, quat = _poses(backend, N)
    backend.set_mocap_pose_tensor(torch.arange(N), pos, quat)
    views = backend.get_state_views()
    backend.set_state_tensor(torch.tensor([2]), views["qpos"][[2]].clone(), views["qvel"][[2]].clone())
    now = backend.get_mocap_views()
    assert all(torch.equal(a[2], b[2]) for a, b in zip(home, now, strict=True))
    assert not torch.equal(now[0][0], home[0][0])
    backend.close()


@pytest.mark.parametrize("name", ["mujoco", "mjwarp"])
def test_reach_target_is_a_mocap_marker_that_follows_each_reset(name):
    if name not in AVAILABLE:
        pytest.skip(f"{name} is not installed here")
    import unienv

    env = unienv.make("reach", backend=name, num_envs=3, seed=0, **backend_options(name))
    target = env.backend.find("body", "target")
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)  # observation: ..., ee (14:17), target (17:20), target - ee
        marker = env.backend.get_body_views(target).pos[:, 0]
        torch.testing.assert_close(marker.float().cpu(), obs[:, 17:20].cpu(), atol=1e-6, rtol=0)
    env.close()
