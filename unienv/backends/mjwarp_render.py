"""Camera images on the mjwarp backend: MuJoCo Warp's batched ray tracer over every world at once.

`WarpCameras` renders one MJCF camera of every world in one launch of `mujoco_warp.render` (a
Warp kernel: on CUDA, and on Warp's CPU device for tests), from the state on the device: no
copy to the host, no host sync, and on both devices the BVH refit and the render replay as one
captured graph (`WarpRunner`). The images are torch views of the ray tracer's buffers, read
into fresh tensors on the backend's device:

    rgb    uint8 (N, H, W, 3), unpacked from the tracer's packed 0xAARRGGBB words
    depth  float32 (N, H, W), metres along the camera's axis (MuJoCo's depth), 0 where no geom
    seg    int32 (N, H, W), the geom id seen, -1 where none

What the ray tracer renders differently from MuJoCo's OpenGL renderer, on the same model (the
documentation's Pixels page measures the pixel difference): one ray per pixel (no
multisampling), Phong shading per light evaluated per pixel (OpenGL interpolates per vertex
on coarse primitives), hard ray-traced shadows that keep a fraction of the light
(`shadow_light_fraction`) where OpenGL uses a shadow map; no reflections, fog or haze; the
skybox sampled per ray. Geom groups 0-2 are drawn, as MuJoCo's default visual options do.
"""

from __future__ import annotations

from typing import Any

import torch

from unienv.backends.mjwarp_graphs import WARP_LOCK
from unienv.errors import ArgumentError

IMAGES = ("rgb", "depth", "seg")
MAX_SIDE = 4096  # pixels per side; the tracer has no limit of its own but memory


class WarpCameras:
    """One camera of every world of an mjwarp backend, rendered by MuJoCo Warp's ray tracer."""

    def __init__(self, backend: Any, camera: int, height: int, width: int, images=("rgb",)):
        model = backend.model
        if not 0 <= camera < model.ncam:
            raise ArgumentError(f"camera: expected a camera id in [0, {model.ncam}), got {camera!r}")
        for arg, side in (("height", height), ("width", width)):
            if isinstance(side, bool) or not isinstance(side, int) or not 1 <= side <= MAX_SIDE:
                raise ArgumentError(f"{arg}: expected an int in [1, {MAX_SIDE}], got {side!r}")
        unknown = sorted(set(images) - set(IMAGES))
        if unknown or not images:
            raise ArgumentError(f"images: expected a non-empty subset of {IMAGES}, got {tuple(images)!r}")
        self._backend, self.height, self.width, self.images = backend, height, width, tuple(images)
        wp, mjw = backend._wp, backend._mjw
        self._mjw = mjw
        backend.materialize()
        with WARP_LOCK, wp.ScopedDevice(backend._wp_device):
            self._rc = rc = mjw.create_render_context(
                model,
                nworld=backend.num_envs,
                cam_res=(width, height),
                render_rgb="rgb" in images,
                render_depth="depth" in images,
                render_seg="seg" in images,
                cam_active=[camera],
                use_shadows=True,
                render_skybox=any(t == 2 for t in model.tex_type),  # mjTEXTURE_SKYBOX
            )
        self._packed = wp.to_torch(rc.rgb_data).view(torch.uint8) if "rgb" in images else None
        self._depth = wp.to_torch(rc.depth_data) if "depth" in images else None
        self._seg = wp.to_torch(rc.seg_data) if "seg" in images else None
        self._key = ("render", id(self))
        self._warm = False

    def _work(self) -> None:
        b = self._backend
        self._mjw.refit_bvh(b._m, b._d, self._rc)
        self._mjw.render(b._m, b._d, self._rc)

    def render(self) -> dict[str, torch.Tensor]:
        """The images of every world at the current state, as fresh tensors on the device."""
        b = self._backend
        b._refresh()  # a step leaves poses of its last substep's start: bring them to the state
        if not self._warm:  # the first render compiles the tracer's kernels, outside any capture
            b._runner.run(None, self._work)
            self._warm = True
        else:
            b._runner.run(self._key, self._work)
        n, h, w = b.num_envs, self.height, self.width
        out = {}
        if self._packed is not None:  # bytes of 0xAARRGGBB words, little-endian: B, G, R, A
            out["rgb"] = self._packed.view(n, h, w, 4)[..., [2, 1, 0]]
        if self._depth is not None:
            out["depth"] = self._depth.view(n, h, w).clone()
        if self._seg is not None:
            seg = self._seg.view(n, h, w, 2)
            out["seg"] = torch.where(seg[..., 1] == 5, seg[..., 0], -1).to(torch.int32)  # mjOBJ_GEOM
        return out
