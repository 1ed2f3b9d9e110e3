"""The documentation's pictures of each engine's camera image of one state, and their pixel difference.

    python scripts/pixel_images.py                   # cartpole cheetah walker finger reacher
    python scripts/pixel_images.py walker --size 84

For each dm_control domain: 20 env steps of random actions on the mjwarp backend (Warp's CPU
device unless CUDA is there), then camera 0 of that state by MuJoCo Warp's ray tracer and by
MuJoCo's OpenGL renderer (the mujoco backend's), side by side in docs/pixels_<domain>.png (OpenGL
left), and one table line: mean |dRGB| (of 255), the share of pixels off by more than 32 in a
channel, and the depth difference where both see a geom.
"""

from __future__ import annotations

import argparse
import os

import imageio.v3 as iio
import mujoco
import numpy as np
import torch

from unienv.backends import create
from unienv.backends.mjwarp_render import WarpCameras
from unienv.render.pool import View, headless_gl
from unienv.tasks.dmc.common import suite_xml

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def opengl(model: mujoco.MjModel, qpos: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's RGB and depth of camera 0 at qpos."""
    headless_gl()
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, size, size) as renderer:
        renderer.update_scene(data, camera=0)
        rgb = renderer.render().copy()
        renderer.enable_depth_rendering()
        renderer.update_scene(data, camera=0)
        return rgb, renderer.render().copy()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("domains", nargs="*", default=["cartpole", "cheetah", "walker", "finger", "reacher"])
    p.add_argument("--size", type=int, default=84)
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("| domain | mean abs dRGB (of 255) | pixels off by > 32 | depth within 1 mm (both see a geom) |")
    print("|---|---|---|---|")
    for domain in args.domains:
        model = mujoco.MjModel.from_xml_path(suite_xml(domain))
        backend = create("mjwarp", suite_xml(domain), num_envs=1, sim_dt=model.opt.timestep, device=device)
        gen = torch.Generator().manual_seed(0)
        for _ in range(20):
            backend.step_tensor((2 * torch.rand(1, backend.nu, generator=gen) - 1).to(backend.device), 4)
        size = args.size
        images = {
            "rgb": torch.zeros(1, size, size, 3, dtype=torch.uint8),
            "depth": torch.zeros(1, size, size),
        }
        WarpCameras(backend, None, [View(camera_id=0)], size, size).render(images)
        images = {k: v[0].cpu().numpy() for k, v in images.items()}
        rgb, depth = opengl(
            backend.model, backend.get_state_views()["qpos"][0].cpu().double().numpy(), args.size
        )
        backend.close()
        diff = np.abs(images["rgb"].astype(int) - rgb.astype(int))
        hit = images["depth"] > 0
        close = (np.abs(images["depth"] - depth)[hit] <= 1e-3).mean()
        print(f"| {domain} | {diff.mean():.1f} | {(diff.max(-1) > 32).mean():.1%} | {close:.1%} |")
        iio.imwrite(os.path.join(DOCS, f"pixels_{domain}.png"), np.concatenate((rgb, images["rgb"]), 1))


if __name__ == "__main__":
    main()
