"""Offscreen rendering of any backend's state, and mp4 writing.

Frames are rendered by MuJoCo from the scene's MJCF and a qpos row in MJCF
order, which every backend reports; so videos look the same whatever engine
produced the state, and no engine needs a renderer of its own. Headless
machines use EGL (or OSMesa, with MUJOCO_GL=osmesa); unienv sets
MUJOCO_GL=egl on import when the variable is unset and there is no display.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import imageio.v2 as imageio
import mujoco
import numpy as np

from unienv.backends.base import load_mjmodel


def _headless_gl() -> None:
    """Use EGL if MuJoCo chose GLFW but there is no display.

    MuJoCo picks its OpenGL platform when it is first imported (MUJOCO_GL); a
    program that imported mujoco before unienv on a headless machine got GLFW,
    which needs a display, and its renderer would fail. EGL is what unienv sets
    when it is imported first.
    """
    from mujoco.rendering.classic import gl_context

    if os.environ.get("DISPLAY") or "glfw" not in getattr(gl_context.GLContext, "__module__", ""):
        return
    from mujoco import egl

    gl_context.GLContext = egl.GLContext


class Renderer:
    """Renders (H, W, 3) uint8 frames of a scene from qpos rows, with a free camera."""

    def __init__(
        self, scene: str, width: int = 640, height: int = 480, camera: Mapping[str, Any] | None = None
    ):
        _headless_gl()
        self.model = load_mjmodel(scene)
        self.model.vis.global_.offwidth = max(width, self.model.vis.global_.offwidth)
        self.model.vis.global_.offheight = max(height, self.model.vis.global_.offheight)
        self.data = mujoco.MjData(self.model)
        self._renderer = mujoco.Renderer(self.model, height, width)
        camera = dict(camera or {})
        self._camera = mujoco.MjvCamera()
        self._camera.distance = camera.get("distance", 4.0)
        self._camera.azimuth = camera.get("azimuth", 90.0)
        self._camera.elevation = camera.get("elevation", -20.0)
        self._camera.lookat[:] = camera.get("lookat", (0.0, 0.0, 0.5))
        track = camera.get("track_body")
        self._track = None if track is None else self.model.body(track).id

    def render(self, qpos: np.ndarray) -> np.ndarray:
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        if self._track is not None:
            self._camera.lookat[:] = self.data.xpos[self._track]
        self._renderer.update_scene(self.data, camera=self._camera)
        return self._renderer.render().copy()

    def close(self) -> None:
        self._renderer.close()


def tile(frames: Iterable[np.ndarray], columns: int | None = None) -> np.ndarray:
    """Frames of one size laid out on a grid (row-major), padded with black."""
    frames = list(frames)
    columns = columns or math.ceil(math.sqrt(len(frames)))
    rows = math.ceil(len(frames) / columns)
    h, w, c = frames[0].shape
    grid = np.zeros((rows * h, columns * w, c), dtype=frames[0].dtype)
    for k, f in enumerate(frames):
        r, col = divmod(k, columns)
        grid[r * h : (r + 1) * h, col * w : (col + 1) * w] = f
    return grid


def write_video(path: str, frames: Iterable[np.ndarray], fps: int) -> str:
    """Write frames to an H.264 mp4 (ffmpeg from imageio-ffmpeg); returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with imageio.get_writer(path, fps=fps, codec="libx264", quality=7, macro_block_size=8) as writer:
        for frame in frames:
            writer.append_data(frame)
    return path
