"""Camera images on the mjwarp backend: MuJoCo Warp's batched ray tracer over every world at once.

`WarpCameras` renders one MJCF camera of every world in one launch of `mujoco_warp.render` (a
Warp kernel: on CUDA, and on Warp's CPU device for tests), from the state on the device: no
copy to the host, no host sync, and on both devices the BVH refit and the render replay as one
captured graph (`WarpRunner`). The images are torch views of the ray tracer's buffers, read
into fresh tensors on the backend's device:

    rgb           uint8 (N, H, W, 3), unpacked from the tracer's packed 0xAARRGGBB words
    depth         float32 (N, H, W), metres along the camera's axis (MuJoCo's depth), 0 where
                  no geom (MuJoCo's OpenGL depth reads its far plane there)
    segmentation  int32 (N, H, W), the geom id seen, -1 where none

It is the mjwarp entry of `unienv.render.cameras.RENDERERS`, with that seam's signature. It
draws the scene's own cameras only: a free camera (pos and target) is refused at
construction, since the tracer's rays start from the model's cameras.

What the ray tracer renders differently from MuJoCo's OpenGL renderer, on the same model (the
documentation's Pixels page measures the pixel difference): one ray per pixel (no
multisampling), Phong shading per light evaluated per pixel (OpenGL interpolates per vertex
on coarse primitives), hard ray-traced shadows that keep a fraction of the light
(`shadow_light_fraction`) where OpenGL uses a shadow map; no reflections, fog or haze; the
skybox sampled per ray. Geom groups 0-2 are drawn, as MuJoCo's default visual options do.
In the "learning" look (`unienv.render.cameras.LOOKS`) the tracer casts no shadow rays; it has
no reflections or multisampling to leave out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from unienv.backends.mjwarp_graphs import WARP_LOCK
from unienv.errors import CapabilityError

SKYBOX = 2  # mjtTexture.mjTEXTURE_SKYBOX
GEOM = 5  # mjtObj.mjOBJ_GEOM, the object type of a geom hit in the tracer's segmentation


class WarpCameras:
    """One scene camera of every world of an mjwarp backend, by MuJoCo Warp's ray tracer."""

    def __init__(
        self,
        backend: Any,
        model: Any,
        views: Sequence[Any],
        width: int,
        height: int,
        threads=None,
        look: str = "scene",
    ):
        """model, threads: unused (the tracer draws the backend's own model, in one launch);
        look: "scene" traces the lights' shadows, "learning" does not."""
        cameras = {v.camera_id for v in views}
        if len(cameras) != 1 or min(cameras) < 0:
            raise CapabilityError(
                "camera: the mjwarp backend draws one of the scene's cameras for every env (MuJoCo "
                "Warp's ray tracer starts its rays from the model's cameras), not a free camera "
                "(pos, target): add a <camera> to the scene's MJCF and name it"
            )
        self._backend, self.height, self.width = backend, height, width
        wp, mjw = backend._wp, backend._mjw
        self._mjw = mjw
        backend.materialize()
        with WARP_LOCK, wp.ScopedDevice(backend._wp_device):
            self._rc = rc = mjw.create_render_context(
                backend.model,
                nworld=backend.num_envs,
                cam_res=(width, height),
                render_rgb=True,
                render_depth=True,
                render_seg=True,
                cam_active=[cameras.pop()],
                use_shadows=look == "scene",
                render_skybox=bool((backend.model.tex_type == SKYBOX).any()),
            )
        self._packed = wp.to_torch(rc.rgb_data).view(torch.uint8)  # bytes of 0xAARRGGBB: B, G, R, A
        self._depth, self._seg = wp.to_torch(rc.depth_data), wp.to_torch(rc.seg_data)
        self._key = ("render", id(self))
        self._warm = False

    def _work(self) -> None:
        b = self._backend
        self._mjw.refit_bvh(b._m, b._d, self._rc)
        self._mjw.render(b._m, b._d, self._rc)

    def render(
        self, out: Mapping[str, torch.Tensor], env_ids: np.ndarray | None = None, marks: Mapping | None = None
    ) -> None:
        """Draw every world at its current state; out[modality][k] gets the k-th of env_ids (all: None).
        marks (a task's per-env targets, `Task.scene_marks`) are not drawn yet: refused."""
        if marks:
            raise CapabilityError(
                f"cameras: the mjwarp backend does not yet draw a task's per-env scene marks "
                f"({', '.join(marks)}: targets kept in memory); use backend='mujoco' for this task's pixels"
            )
        b = self._backend
        b._refresh()  # a step leaves poses of its last substep's start: bring them to the state
        if not self._warm:  # the first render compiles the tracer's kernels, outside any capture
            b._runner.run(None, self._work)
            self._warm = True
        else:
            b._runner.run(self._key, self._work)
        n, h, w = b.num_envs, self.height, self.width
        rows = slice(None) if env_ids is None else torch.as_tensor(env_ids, device=b.device)
        for modality, images in out.items():
            if modality == "rgb":
                images.copy_(self._packed.view(n, h, w, 4)[rows][..., [2, 1, 0]])
            elif modality == "depth":
                images.copy_(self._depth.view(n, h, w)[rows])
            else:
                seg = self._seg.view(n, h, w, 2)[rows]
                images.copy_(torch.where(seg[..., 1] == GEOM, seg[..., 0], -1))

    def close(self) -> None:
        self._rc = self._packed = self._depth = self._seg = None
