"""Offscreen rendering of any backend's state, and mp4 writing.

Frames are rendered by MuJoCo from the scene's MJCF and a qpos row in MJCF
order, which every backend reports; so videos look the same whatever engine
produced the state, and no engine needs a renderer of its own. Headless
machines use EGL (or OSMesa, with MUJOCO_GL=osmesa); unienv sets
MUJOCO_GL=egl on import when the variable is unset and there is no display.

Every scene is rendered in one look (`dressed_model`): a gradient sky, a
checkered floor that shows motion, a bright headlight. The look is applied
to the renderer's own copy of the model and changes visual elements only, so
the physics, which each backend builds from the scene file, never sees it.
Its quality settings are chosen for software rendering (no GPU): no
multisampling, no floor reflection and a 1024-pixel shadow map cut a
480x360 frame from ~90 to ~25 ms on 2 cores (README, "Videos").
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import imageio.v2 as imageio
import mujoco
import numpy as np


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


SKY = {"rgb1": (0.3, 0.5, 0.7), "rgb2": (0.0, 0.0, 0.0)}  # a gradient from blue at the zenith
FLOOR = {"rgb1": (0.25, 0.35, 0.45), "rgb2": (0.15, 0.25, 0.35), "markrgb": (0.8, 0.8, 0.8)}  # edged checker
FLOOR_SQUARES_PER_M = 2  # texrepeat of the 2 x 2 checker texture per metre: squares of 25 cm


def dressed_model(scene: str) -> mujoco.MjModel:
    """The scene's model in unienv's look, for rendering only.

    The scene's skybox is replaced by SKY and its ground planes take the FLOOR
    checker; a scene without one gets a collision-free floor under its lowest
    geom. The headlight lights the camera's side of the robot, which the
    scenes' top lights leave dark. Only textures, materials, lights, visual
    options and that visual-only floor change: qpos means what it means in
    the scene.
    """
    spec = mujoco.MjSpec.from_file(scene)
    for texture in [t for t in spec.textures if t.type == mujoco.mjtTexture.mjTEXTURE_SKYBOX]:
        spec.delete(texture)
    spec.add_texture(
        name="unienv_sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        width=512,
        height=3072,
        **SKY,
    )
    spec.add_texture(
        name="unienv_floor",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        mark=mujoco.mjtMark.mjMARK_EDGE,
        width=300,
        height=300,
        **FLOOR,
    )
    textures = [""] * mujoco.mjtTextureRole.mjNTEXROLE
    textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "unienv_floor"
    spec.add_material(
        name="unienv_floor", textures=textures, texuniform=True, texrepeat=[FLOOR_SQUARES_PER_M] * 2
    )
    floors = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
    if not floors:
        model = spec.compile()
        data = mujoco.MjData(model)
        mujoco.mj_kinematics(model, data)
        lowest = float(np.min(data.geom_xpos[:, 2] - model.geom_rbound))
        floors = [
            spec.worldbody.add_geom(
                type=mujoco.mjtGeom.mjGEOM_PLANE, pos=[0, 0, lowest], size=[0, 0, 1], contype=0, conaffinity=0
            )
        ]
    for floor in floors:
        floor.material = "unienv_floor"
        floor.rgba = [0.5, 0.5, 0.5, 1]  # MuJoCo's default: the material's colour shows
    if not any(light.type == mujoco.mjtLightType.mjLIGHT_DIRECTIONAL for light in spec.lights):
        # spotlights light a circle of floor; a sun lights it to the horizon (no second shadow pass)
        spec.worldbody.add_light(
            type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, pos=[0, 0, 4], dir=[0, 0, -1], castshadow=False
        )
    headlight = spec.visual.headlight
    headlight.ambient, headlight.diffuse, headlight.specular = [0.3] * 3, [0.6] * 3, [0.0] * 3
    spec.visual.rgba.haze = [0.15, 0.25, 0.35, 1.0]
    spec.visual.quality.offsamples = 0
    spec.visual.quality.shadowsize = 1024
    return spec.compile()


class Renderer:
    """Renders (H, W, 3) uint8 frames of a scene from qpos rows, with a free camera."""

    def __init__(
        self, scene: str, width: int = 640, height: int = 480, camera: Mapping[str, Any] | None = None
    ):
        _headless_gl()
        self.model = dressed_model(scene)
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
