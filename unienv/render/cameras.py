"""Camera images of every env of a backend, one call per env step: the engines' renderers.

A camera renderer draws the backend's current state of the envs asked for into the caller's
tensors, `out[modality]` of shape (k, H, W, 3) uint8 for "rgb", (k, H, W) float32 metres
for "depth" and (k, H, W) int32 geom ids for "segmentation" (views of whatever layout the
caller keeps: strides are honoured, nothing is allocated per call). `RENDERERS` maps a
backend's name to its renderer's class; `camera_renderer` builds it, or refuses a backend
that has none with CapabilityError at construction. An engine with a renderer of its own
(MuJoCo Warp's ray tracer, Genesis's cameras) adds its class here, with the same signature.

Each renderer draws in one of the `LOOKS`: "scene", the scene as written (its lights' shadows,
its materials' reflections, its multisampling: on the mujoco backend dm_control's pixels, pixel
for pixel), or "learning", the same scene without those three, which a policy does not need and
which cost most of a frame drawn in software. "learning" is set on the renderer's own state
(its scene's render flags, its copy of the model's `vis.quality.offsamples`), never on the
backend's model: the physics and every other geom, light, texture and colour stay as written.

On the mujoco backend, `PoolCameras` draws with `pool.RenderPool`: the state rows are
the batch's own qpos (a view, read by the workers without a copy) and mocap poses; each
worker computes the rows' kinematics on an MjData of its own, since `mujoco.batch` keeps no
MjData between calls. The images are bit-identical at any number of render threads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np
import torch

from unienv.backends.mjwarp_render import WarpCameras
from unienv.errors import CapabilityError
from unienv.render.pool import RenderPool, View
from unienv.utils.limits import check_size

MODALITIES = ("rgb", "depth", "segmentation")
LOOKS = ("scene", "learning")
LEARNING_FLAGS = {mujoco.mjtRndFlag.mjRND_SHADOW: False, mujoco.mjtRndFlag.mjRND_REFLECTION: False}


def default_threads(num_envs: int) -> int:
    """Render threads by default: one per core this process may use, at most one per env."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, num_envs))


class PoolCameras:
    """The mujoco backend's camera renderer: a RenderPool over the batch's state rows."""

    def __init__(
        self,
        backend,
        model: mujoco.MjModel,
        views: Sequence[View],
        width: int,
        height: int,
        threads: int | None = None,
        look: str = "scene",
    ):
        """model: the renderer's own copy of the scene's model (what is drawn); views: one per
        env, or one for all; look: one of LOOKS."""
        self.backend, self.views = backend, list(views)
        self._mocap = backend.get_capabilities().mocap and backend.nmocap > 0
        most = default_threads(backend.num_envs)
        threads = most if threads is None else threads
        check_size("render_threads", threads, most, unit="render threads (one per env and per core at most)")
        flags = None
        if look == "learning":
            model.vis.quality.offsamples, flags = 0, LEARNING_FLAGS
        self.pool = RenderPool(model, width, height, threads, flags=flags)

    def render(
        self, out: Mapping[str, torch.Tensor], env_ids: np.ndarray | None = None, marks: Mapping | None = None
    ) -> None:
        """Draw the envs `env_ids` (all: None) into out[modality][k] for the k-th of them;
        marks: {model field: {element name: (num_envs, k) values}} to draw each env with."""
        edits = [
            (field, self._id(field, name), values if env_ids is None else values[env_ids])
            for field, named in (marks or {}).items()
            for name, values in named.items()
        ]
        qpos = self.backend.get_state_views()["qpos"].numpy()
        mocap = tuple(t.numpy() for t in self.backend.get_mocap_views()) if self._mocap else None
        views = self.views
        if env_ids is not None:
            qpos = qpos[env_ids]
            mocap = None if mocap is None else (mocap[0][env_ids], mocap[1][env_ids])
            views = views if len(views) == 1 else [views[i] for i in env_ids]
        self.pool.render(qpos, views, {k: v.numpy() for k, v in out.items()}, mocap, edits)

    def _id(self, field: str, name: str) -> int:
        """The id of the element `name` of the model field `field` ("geom_pos": a geom's)."""
        kind = field.split("_")[0]
        return int(mujoco.mj_name2id(self.pool.model, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), name))

    def close(self) -> None:
        self.pool.close()


RENDERERS = {"mujoco": PoolCameras, "mjwarp": WarpCameras}

# why an engine's own cameras do not serve camera observations (measured with Genesis 1.4.5)
REFUSALS = {
    "genesis": (
        "Genesis draws every env in one call only with its BatchRenderer (the gs-madrona package: "
        "CUDA on Linux x86-64; not installed); its Rasterizer draws one env at a time through "
        "OpenGL from poses copied to the host (a host sync per frame), and its cameras must exist "
        "before the scene is built (here a build with one took 15 min). Use backend='mjwarp' or "
        "'mujoco' for pixels"
    ),
}


def require_renderer(backend: str) -> type:
    """The camera renderer's class of the backend named `backend`, or CapabilityError naming
    the backends that have one (checked before a backend is built, and again by camera_renderer)."""
    cls = RENDERERS.get(backend)
    if cls is None:
        why = REFUSALS.get(backend, "no renderer is written for it")
        raise CapabilityError(
            f"cameras: the {backend} backend renders no camera images: {why} "
            f"(camera observations run on: {', '.join(RENDERERS)})"
        )
    return cls


def camera_renderer(backend, model, views, width, height, threads=None, look="scene"):
    """The camera renderer of `backend`'s engine, drawing `views` at width x height in `look`."""
    return require_renderer(backend.name)(backend, model, views, width, height, threads, look)
