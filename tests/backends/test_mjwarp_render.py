"""MuJoCo Warp's ray tracer as the mjwarp backend's cameras, against MuJoCo's OpenGL renderer.

Same model, same state (walker after random actions, two worlds in different states), camera 0
at 84x84. The tolerances are what the two renderers' differences allow (measured: mean absolute
RGB difference 3.6-5.5 of 255 on cartpole, cheetah and walker; the Pixels page says where they
differ): mean |dRGB| <= 8, at most 5% of pixels off by more than 32 in a channel; depth where both
see a geom within 1e-3 m on 95% of those pixels (edges differ by a pixel); the geom seen agrees on
97% of pixels.
"""

import mujoco
import numpy as np
import pytest
import torch

from tests.syncs import count_host_syncs
from unienv import render
from unienv.backends import create
from unienv.errors import ArgumentError
from unienv.tasks.dmc_common import suite_xml

from ..contract.conftest import MJWARP_DEVICE

pytestmark = pytest.mark.skipif(MJWARP_DEVICE is None, reason="MuJoCo Warp cannot run here")
H = W = 84


@pytest.fixture(scope="module")
def walker():
    from unienv.backends.mjwarp_render import WarpCameras

    backend = create("mjwarp", suite_xml("walker"), num_envs=2, sim_dt=0.0025, device=MJWARP_DEVICE)
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        backend.step_tensor((2 * torch.rand(2, backend.nu, generator=gen) - 1).to(backend.device), 4)
    cameras = WarpCameras(backend, 0, H, W, ("rgb", "depth", "seg"))
    yield backend, cameras
    backend.close()


def opengl(model, qpos):
    """MuJoCo's own RGB, depth and geom ids of camera 0 at qpos."""
    render._headless_gl()
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    out = {}
    with mujoco.Renderer(model, H, W) as renderer:
        renderer.update_scene(data, camera=0)
        out["rgb"] = renderer.render().copy()
        renderer.enable_depth_rendering()
        renderer.update_scene(data, camera=0)
        out["depth"] = renderer.render().copy()
        renderer.disable_depth_rendering()
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, camera=0)
        seg = renderer.render()
        out["seg"] = np.where(seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM, seg[..., 0], -1)
    return out


def test_images_are_batched_typed_and_on_the_device(walker):
    backend, cameras = walker
    images = cameras.render()
    assert images["rgb"].dtype == torch.uint8 and images["rgb"].shape == (2, H, W, 3)
    assert images["depth"].dtype == torch.float32 and images["depth"].shape == (2, H, W)
    assert images["seg"].dtype == torch.int32 and images["seg"].shape == (2, H, W)
    assert all(x.device == backend.device for x in images.values())
    assert not torch.equal(images["rgb"][0], images["rgb"][1])  # each world its own state


@pytest.mark.parametrize("world", [0, 1])
def test_the_ray_tracer_matches_mujocos_opengl_renderer_within_tolerance(walker, world):
    backend, cameras = walker
    images = {k: v[world].cpu().numpy() for k, v in cameras.render().items()}
    gl = opengl(backend.model, backend.get_state_views()["qpos"][world].cpu().double().numpy())
    diff = np.abs(images["rgb"].astype(int) - gl["rgb"].astype(int))
    assert diff.mean() <= 8 and (diff.max(-1) > 32).mean() <= 0.05, (diff.mean(), (diff.max(-1) > 32).mean())
    both = (images["seg"] >= 0) & (gl["seg"] >= 0)
    assert both.mean() > 0.2  # the robot and the floor fill a good part of the image
    assert (np.abs(images["depth"] - gl["depth"])[both] <= 1e-3).mean() >= 0.95
    assert (images["seg"] == gl["seg"]).mean() >= 0.97


def test_images_follow_a_state_written_without_a_step(walker):
    backend, cameras = walker
    before = cameras.render()["rgb"]
    qpos = backend.get_state_views()["qpos"].clone()
    qpos[0, 1] += 0.5  # world 0's torso up by 0.5 m
    backend.set_state_tensor(torch.tensor([0], device=backend.device), qpos[:1], torch.zeros_like(qpos[:1]))
    after = cameras.render()["rgb"]
    assert not torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_a_step_and_its_render_make_no_host_sync(walker):
    backend, cameras = walker
    ctrl = torch.zeros(2, backend.nu, device=backend.device)
    backend.step_tensor(ctrl, 4)
    cameras.render()  # replays are what the hot path runs
    with count_host_syncs() as counts:
        for _ in range(3):
            backend.step_tensor(ctrl, 4)
            cameras.render()
    assert not counts, counts


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"camera": 7}, r"camera: expected a camera id in \[0, 2\), got 7"),
        ({"height": 0}, r"height: expected an int in \[1, 4096\], got 0"),
        ({"width": 5000}, r"width: expected an int in \[1, 4096\], got 5000"),
        ({"images": ("rgb", "normals")}, r"images: expected a non-empty subset"),
    ],
)
def test_bad_camera_arguments_are_refused(walker, kwargs, message):
    from unienv.backends.mjwarp_render import WarpCameras

    backend, _ = walker
    args = {"camera": 0, "height": H, "width": W, "images": ("rgb",)} | kwargs
    with pytest.raises(ArgumentError, match=message):
        WarpCameras(backend, **args)
