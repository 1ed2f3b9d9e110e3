"""Offscreen rendering of any backend's state.

Frames are rendered by MuJoCo from the scene's MJCF and a qpos row in MJCF
order, which every backend reports; so videos look the same whatever engine
produced the state, and no engine needs a renderer of its own. Headless
machines use EGL (or OSMesa, with MUJOCO_GL=osmesa): MuJoCo picks its
platform from MUJOCO_GL when it is imported, and where that gave GLFW (the
variable unset) on a machine without a display, the renderer gets EGL's context
instead (`pool.headless_gl`). The choice is this package's alone: nothing else in
unienv sets MUJOCO_GL.

Videos and camera observations (`unienv.sensors`) draw through one path,
`pool.RenderPool`: worker threads that each own a GL context and draw rows of qpos.
Videos draw in unienv's look below; camera observations draw the scene as written
(MuJoCo's and dm_control's look), so that they equal dm_control's pixels.

Every scene is rendered in one look (`dressed_model`): a gradient sky, a
checkered floor that shows motion, a bright headlight. The look is applied
to the renderer's own copy of the model and changes visual elements only, so
the physics, which each backend builds from the scene file, never sees it.
Its quality settings are chosen for software rendering (no GPU): no
multisampling, no floor reflection and no shadows, which cost most of a
frame there and barely show on this floor (the documentation's "Videos and
rendering" page has the measured cost of each).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import multiprocessing
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import mujoco
import numpy as np

from unienv.backends.scene import load_mjmodel
from unienv.render.pool import RenderPool, View

SKY = {"rgb1": (0.3, 0.5, 0.7), "rgb2": (0.0, 0.0, 0.0)}  # a gradient from blue at the zenith
FLOOR = {"rgb1": (0.25, 0.35, 0.45), "rgb2": (0.15, 0.25, 0.35), "markrgb": (0.8, 0.8, 0.8)}  # edged checker
FLOOR_SQUARES_PER_M = 2  # texrepeat of the 2 x 2 checker texture per metre: squares of 25 cm


def dressed_model(
    scene: str,
    *,
    offsamples: int = 0,
    reflectance: float = 0.0,
    shadows: bool = False,
    shadowsize: int = 1024,
) -> mujoco.MjModel:
    """The scene's model in unienv's look, for rendering only.

    The scene's skybox is replaced by SKY and its ground planes take the FLOOR
    checker; a scene without one gets a collision-free floor under its lowest
    geom. The headlight lights the camera's side of the robot, which the
    scenes' top lights leave dark. Only textures, materials, lights, visual
    options and that visual-only floor change: qpos means what it means in
    the scene. The keywords are the quality settings (multisampling, floor
    reflectance, the scene lights' shadows and their map size), each a cost in
    software rendering (`python -m unienv.render` measures them); shadows, off
    by default, cost most and barely show on this floor under top lights.
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
        name="unienv_floor",
        textures=textures,
        texuniform=True,
        texrepeat=[FLOOR_SQUARES_PER_M] * 2,
        reflectance=reflectance,
    )
    floors = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
    if not floors:
        model = _compile(spec)
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
    for light in spec.lights:
        light.castshadow = light.castshadow and shadows
    spec.visual.quality.offsamples = offsamples
    spec.visual.quality.shadowsize = shadowsize
    return _compile(spec)


def _compile(spec: mujoco.MjSpec) -> mujoco.MjModel:
    with warnings.catch_warnings():  # Gymnasium's scenes set it; a renderer needs no masses
        warnings.filterwarnings("ignore", "compiler attribute 'settotalmass' is deprecated")
        return spec.compile()


class Renderer:
    """Renders (H, W, 3) uint8 frames of a scene from qpos rows, with a free camera."""

    def __init__(
        self,
        scene: str,
        width: int = 640,
        height: int = 480,
        camera: Mapping[str, Any] | None = None,
        model: mujoco.MjModel | None = None,
    ):
        """model: the scene's model to draw; by default dressed_model(scene)."""
        self.model = dressed_model(scene) if model is None else model
        camera = dict(camera or {})
        track = camera.get("track_body")
        self.view = View(
            lookat=tuple(camera.get("lookat", (0.0, 0.0, 0.5))),
            distance=camera.get("distance", 4.0),
            azimuth=camera.get("azimuth", 90.0),
            elevation=camera.get("elevation", -20.0),
            track_body=-1 if track is None else self.model.body(track).id,
        )
        self.pool = RenderPool(self.model, width, height)

    def render_rows(
        self,
        qpos: np.ndarray,
        mocap_pos: np.ndarray | None = None,
        mocap_quat: np.ndarray | None = None,
        ghost: np.ndarray | None = None,
    ) -> np.ndarray:
        """(k, H, W, 3) frames of the scene at qpos rows (k, nq), in one call of the pool, with
        the mocap bodies at (k, nmocap, 3) and (k, nmocap, 4) wxyz poses where given, and a
        translucent copy of the moving bodies at `ghost`'s rows (k, nq) where given."""
        qpos = np.asarray(qpos, np.float64).reshape(-1, self.model.nq)
        frames = np.empty((len(qpos), self.pool.height, self.pool.width, 3), np.uint8)
        mocap = None if mocap_pos is None else (np.asarray(mocap_pos), np.asarray(mocap_quat))
        ghost = None if ghost is None else np.asarray(ghost, np.float64).reshape(qpos.shape)
        self.pool.render(qpos, [self.view], {"rgb": frames}, mocap, ghost=ghost)
        return frames

    def render(
        self, qpos: np.ndarray, mocap_pos: np.ndarray | None = None, mocap_quat: np.ndarray | None = None
    ) -> np.ndarray:
        """A frame of the scene at qpos, with its mocap bodies at (nmocap, 3) and (nmocap, 4) wxyz
        poses where given."""
        if mocap_pos is None:
            return self.render_rows(qpos[None])[0]
        return self.render_rows(qpos[None], mocap_pos[None], mocap_quat[None])[0]

    def close(self) -> None:
        """Release the pool's GL contexts."""
        self.pool.close()


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


# ---- `python -m unienv.render`: what each rendering option costs -------------------------------


def _frame_seconds(renderer: Renderer, qpos: np.ndarray, frames: int) -> float:
    renderer.render(qpos)  # the first frame uploads textures and compiles shaders
    start = time.perf_counter()
    for _ in range(frames):
        renderer.render(qpos)
    return (time.perf_counter() - start) / frames


def _worker_frames(task: str, width: int, height: int, frames: int) -> float:
    """In a worker process: render `frames` frames of the task's scene; returns the seconds."""
    from unienv.tasks import task_class

    t = task_class(task)()
    renderer = _WORKER.get((task, width, height))
    if renderer is None:
        renderer = _WORKER[task, width, height] = Renderer(t.scene, width, height, t.camera)
    return _frame_seconds(renderer, renderer.model.qpos0, frames) * frames


_WORKER: dict = {}


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Milliseconds per frame of one task's scene for each rendering option, best of interleaved
    rounds, and the cost of a renderer (GL context, shaders, textures) and of a 2-process pool."""
    from unienv.tasks import task_class

    parser = argparse.ArgumentParser(prog="python -m unienv.render", description=main.__doc__)
    parser.add_argument("--task", default="quadruped")
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=360)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    task = task_class(args.task)()
    size = (args.width, args.height)
    options = {
        "scene as written (MuJoCo's defaults)": (size, lambda: load_mjmodel(task.scene)),
        "unienv's look (the default)": (size, lambda: dressed_model(task.scene)),
        "  + 4x multisampling": (size, lambda: dressed_model(task.scene, offsamples=4)),
        "  + floor reflectance 0.2": (size, lambda: dressed_model(task.scene, reflectance=0.2)),
        "  + shadows, 1024-pixel map": (size, lambda: dressed_model(task.scene, shadows=True)),
        "  + shadows, 4096-pixel map": (
            size,
            lambda: dressed_model(task.scene, shadows=True, shadowsize=4096),
        ),
        "  at 320 x 240": ((320, 240), lambda: dressed_model(task.scene)),
    }
    best = dict.fromkeys(options, math.inf)
    start = time.perf_counter()
    Renderer(task.scene, *size, task.camera).close()
    created = time.perf_counter() - start
    for _ in range(args.rounds):
        for name, ((width, height), model) in options.items():
            renderer = Renderer(task.scene, width, height, task.camera, model=model())
            best[name] = min(best[name], _frame_seconds(renderer, renderer.model.qpos0, args.frames))
            renderer.close()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:

        def both(frames: int) -> float:  # each worker renders `frames`; returns the wall time
            start = time.perf_counter()
            list(pool.map(_worker_frames, [args.task] * 2, [args.width] * 2, [args.height] * 2, [frames] * 2))
            return time.perf_counter() - start

        started = both(1)  # processes started, unienv imported, a renderer each
        best["unienv's look, 2 worker processes"] = both(args.frames // 2) / (args.frames // 2 * 2)
    print(f"{args.task}, {args.width} x {args.height}, MUJOCO_GL={os.environ.get('MUJOCO_GL')}:")
    for name, seconds in best.items():
        print(f"  {name:40s} {1000 * seconds:7.1f} ms/frame")
    print(f"  a renderer's creation (GL context, shaders, textures): {1000 * created:.0f} ms")
    print(f"  the 2-process pool's start (spawn, import, renderers): {1000 * started:.0f} ms")
    return best | {"renderer_creation": created, "pool_start": started}
