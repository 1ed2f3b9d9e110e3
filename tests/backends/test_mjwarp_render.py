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

import unienv
from tests.syncs import count_host_syncs
from unienv.backends import create
from unienv.backends.mjwarp_render import WarpCameras
from unienv.errors import CapabilityError
from unienv.render.pool import View, headless_gl
from unienv.tasks.dmc.common import suite_xml

from ..contract.conftest import MJWARP_DEVICE

pytestmark = pytest.mark.skipif(MJWARP_DEVICE is None, reason="MuJoCo Warp cannot run here")
H = W = 84


def draw(cameras, n, **kwargs):
    """Every env's RGB, depth and geom ids, as CameraSensor hands the renderer its tensors."""
    out = {
        "rgb": torch.zeros(n, H, W, 3, dtype=torch.uint8),
        "depth": torch.zeros(n, H, W),
        "segmentation": torch.zeros(n, H, W, dtype=torch.int32),
    }
    cameras.render(out, **kwargs)
    return out


@pytest.fixture(scope="module")
def walker():
    backend = create("mjwarp", suite_xml("walker"), num_envs=2, sim_dt=0.0025, device=MJWARP_DEVICE)
    gen = torch.Generator().manual_seed(0)
    for _ in range(30):
        backend.step_tensor((2 * torch.rand(2, backend.nu, generator=gen) - 1).to(backend.device), 4)
    cameras = WarpCameras(backend, None, [View(camera_id=0)], W, H)
    yield backend, cameras
    backend.close()


def opengl(model, qpos):
    """MuJoCo's own RGB, depth and geom ids of camera 0 at qpos."""
    headless_gl()
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
    images = draw(cameras, 2)
    assert not torch.equal(images["rgb"][0], images["rgb"][1])  # each world its own state
    assert (images["segmentation"] >= -1).all() and (images["segmentation"] < backend.model.ngeom).all()
    one = draw(cameras, 1, env_ids=np.array([1]))  # the rows asked for, in order
    assert all(torch.equal(one[k][0], images[k][1]) for k in images)


@pytest.mark.parametrize("world", [0, 1])
def test_the_ray_tracer_matches_mujocos_opengl_renderer_within_tolerance(walker, world):
    backend, cameras = walker
    images = {k: v[world].numpy() for k, v in draw(cameras, 2).items()}
    gl = opengl(backend.model, backend.get_state_views()["qpos"][world].cpu().double().numpy())
    diff = np.abs(images["rgb"].astype(int) - gl["rgb"].astype(int))
    assert diff.mean() <= 8 and (diff.max(-1) > 32).mean() <= 0.05, (diff.mean(), (diff.max(-1) > 32).mean())
    both = (images["segmentation"] >= 0) & (gl["seg"] >= 0)
    assert both.mean() > 0.2  # the robot and the floor fill a good part of the image
    assert (np.abs(images["depth"] - gl["depth"])[both] <= 1e-3).mean() >= 0.95
    assert (images["segmentation"] == gl["seg"]).mean() >= 0.97


def test_the_learning_look_casts_no_shadow_rays(walker):
    """The "learning" look: the same image but for the shadows, which only darken a pixel."""
    backend, scene = walker
    learning = WarpCameras(backend, None, [View(camera_id=0)], W, H, look="learning")
    lit, shaded = draw(learning, 2)["rgb"].int(), draw(scene, 2)["rgb"].int()
    learning.close()
    assert (lit >= shaded).all()
    assert (lit > shaded).any(-1).float().mean() > 0.01  # the walker's shadow on the floor


def test_images_follow_a_state_written_without_a_step(walker):
    backend, cameras = walker
    before = draw(cameras, 2)["rgb"]
    qpos = backend.get_state_views()["qpos"].clone()
    qpos[0, 1] += 0.5  # world 0's torso up by 0.5 m
    backend.set_state_tensor(torch.tensor([0], device=backend.device), qpos[:1], torch.zeros_like(qpos[:1]))
    after = draw(cameras, 2)["rgb"]
    assert not torch.equal(before[0], after[0]) and torch.equal(before[1], after[1])


def test_a_step_and_its_render_make_no_host_sync(walker):
    backend, cameras = walker
    ctrl = torch.zeros(2, backend.nu, device=backend.device)
    backend.step_tensor(ctrl, 4)
    draw(cameras, 2)  # replays are what the hot path runs
    with count_host_syncs() as counts:
        for _ in range(3):
            backend.step_tensor(ctrl, 4)
            draw(cameras, 2)
    assert not counts, counts


def test_a_free_camera_is_refused_with_what_to_do(walker):
    backend, _ = walker
    with pytest.raises(CapabilityError, match=r"not a free camera \(pos, target\): add a <camera>"):
        WarpCameras(backend, None, [View(lookat=(0, 0, 1))], W, H)


def test_the_pixel_env_on_mjwarp_makes_no_host_sync_and_restarts_stacks():
    env = unienv.make(
        "dmc_cartpole_swingup", backend="mjwarp", device=MJWARP_DEVICE, obs="pixels", num_envs=2
    )
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 9, 84, 84) and obs.dtype == torch.uint8 and obs.device == env.device
    actions = torch.ones(2, 1, device=env.device)
    env.step(actions)
    with count_host_syncs() as counts:
        for _ in range(3):
            obs, *_ = env.step(actions)
    assert not counts, counts
    assert not torch.equal(obs[:, :3], obs[:, 6:])  # the cart moved between the oldest and newest frame
    obs, _ = env.reset(options={"reset_mask": torch.tensor([True, False], device=env.device)})
    assert torch.equal(obs[0, :3], obs[0, 6:]) and not torch.equal(obs[1, :3], obs[1, 6:])
    env.close()


def test_a_task_whose_targets_live_in_memory_is_refused_on_mjwarp():
    """reacher's target is drawn per env from memory on mujoco; the ray tracer cannot yet."""
    env = unienv.make("dmc_reacher_easy", backend="mjwarp", device=MJWARP_DEVICE, obs="pixels", num_envs=1)
    with pytest.raises(CapabilityError, match=r"does not yet draw a task's per-env scene marks \(geom_pos"):
        env.reset(seed=0)
    env.close()
