"""A pool of MuJoCo OpenGL renderers on worker threads: every image unienv draws.

Model: `RenderPool(model, width, height, threads, flags)` starts `threads` worker threads;
each owns one OpenGL context (EGL, or OSMesa with MUJOCO_GL=osmesa), an `MjrContext`
of the model (its textures uploaded once), an `MjvScene` (MuJoCo's default render flags but
those in `flags`) and an `MjData`. `render(qpos, views, out)` splits the rows over the
workers (contiguous blocks); a worker loads each row's qpos (and mocap poses) into its
MjData, computes the position stage that drawing reads
(`mj_kinematics`, `mj_comPos`, `mj_camlight`, and `mj_tendon` / `mj_flex` where the model
has them: what `mj_forward` computes for the scene, minus dynamics and collision), and draws
the row's view with `mjv_updateScene`, `mjr_render` and `mjr_readPixels`, the calls
dm_control's `physics.render` makes. The images go straight into the caller's arrays (one
copy: the flip of OpenGL's bottom-up rows, into whatever strides the caller's layout has).

Invariants:
- Every worker draws with an identical context, so an image depends only on its row: the
  same rows give bit-identical images at any thread count and in any order.
- Rendering reads the rows and writes only the caller's arrays and the workers' own data.
- Depth is metres along the camera's axis, read as MuJoCo's own `mujoco.Renderer` reads it:
  from a segmentation pass (no skybox: the far plane where no geom is), the depth map
  reversed (`mjDEPTH_ZEROFAR`), the projection undone with the model's znear and zfar
  scaled by its extent. Segmentation is each pixel's geom id (-1 where no geom is drawn),
  from the same pass, so depth and segmentation together cost one pass beside the RGB one.

The GL platform: MuJoCo picks it from MUJOCO_GL when it is first imported; where that gave
GLFW (the variable unset) and there is no display, the pool hands MuJoCo EGL's context
(`headless_gl`). A platform that does not start raises GLUnavailableError with what to
set and install.
"""

from __future__ import annotations

import copy
import os
import queue
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from unienv.errors import ArgumentError, GLUnavailableError, shown
from unienv.utils import limits


def headless_gl() -> None:
    """Use EGL if MuJoCo chose GLFW but there is no display.

    MuJoCo picks its OpenGL platform when it is first imported (MUJOCO_GL); a
    program that imported mujoco before unienv on a headless machine got GLFW,
    which needs a display, and its renderer would fail.
    """
    from mujoco.rendering.classic import gl_context

    if os.environ.get("DISPLAY") or "glfw" not in getattr(gl_context.GLContext, "__module__", ""):
        return
    from mujoco import egl

    gl_context.GLContext = egl.GLContext


def _gl_context(model: mujoco.MjModel, width: int, height: int):
    """A current OpenGL context of the platform MuJoCo chose and an MjrContext of the model
    in it, or GLUnavailableError saying what to set and install."""
    from mujoco.rendering.classic import gl_context

    try:
        headless_gl()
        context = gl_context.GLContext(width, height)
        context.make_current()
        return context, mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
    except Exception as error:  # each platform fails its own way (ImportError, FatalError, ...)
        if "framebuffer is not complete" in str(error):  # a context, whose driver refuses this size
            raise ArgumentError(
                f"width, height: the OpenGL driver cannot make a {width} x {height} offscreen framebuffer "
                f"with {model.vis.quality.offsamples} samples ({error}); choose a smaller image"
            ) from None
        platform = os.environ.get("MUJOCO_GL", "unset (GLFW, or EGL without a display)")
        raise GLUnavailableError(
            f"rendering: no OpenGL context ({type(error).__name__}: {error}); MUJOCO_GL is {platform}. "
            "Set MUJOCO_GL=egl with an EGL driver (apt install libegl1; Mesa's libegl-mesa0 "
            "renders on the CPU) or MUJOCO_GL=osmesa with OSMesa (apt install libosmesa6)"
        ) from error


# the largest image side: 16384 (Mesa's llvmpipe's, and the most a GL implementation unienv
# knows takes) until the first context reads its implementation's own GL_MAX_RENDERBUFFER_SIZE
_GL_LIMIT = [16384]
GHOST_RGBA = (0.3, 0.8, 1.0, 0.3)  # a reference pose's copy of the robot: light blue, translucent


@dataclass(frozen=True)
class View:
    """Where a camera looks from: a scene camera (`camera_id`), or a free camera aimed at
    `lookat` (or at body `track_body`'s position plus `track_offset`, every frame) from `distance` metres at
    `azimuth` and `elevation` degrees, MuJoCo's `mjvCamera` conventions."""

    camera_id: int = -1
    lookat: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance: float = 4.0
    azimuth: float = 90.0
    elevation: float = -20.0
    track_body: int = -1
    track_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def camera(self) -> mujoco.MjvCamera:
        camera = mujoco.MjvCamera()
        if self.camera_id >= 0:
            camera.type, camera.fixedcamid = mujoco.mjtCamera.mjCAMERA_FIXED, self.camera_id
        else:
            camera.type = mujoco.mjtCamera.mjCAMERA_FREE
            camera.lookat[:], camera.distance = self.lookat, self.distance
            camera.azimuth, camera.elevation = self.azimuth, self.elevation
        return camera


class _Worker:
    """One thread that owns a GL context, an MjrContext, a scene and an MjData of the model."""

    def __init__(self, model: mujoco.MjModel, width: int, height: int, maxgeom: int, flags: Mapping):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.done: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(
            target=self._run, args=(model, width, height, maxgeom, flags), daemon=True, name="unienv-render"
        )
        self.thread.start()
        started = self.done.get()
        if isinstance(started, BaseException):
            self.thread.join()
            raise started

    def _run(self, model, width, height, maxgeom, flags) -> None:
        try:
            gl, self.context = _gl_context(model, width, height)
            from OpenGL import GL

            _GL_LIMIT[0] = int(GL.glGetIntegerv(GL.GL_MAX_RENDERBUFFER_SIZE))
            self.model = copy.copy(model)  # its own: edits write per-env marks into it
            self.data, self.ghost = mujoco.MjData(self.model), mujoco.MjData(self.model)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
            self.context.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR  # as mujoco.Renderer reads
            self.scene = mujoco.MjvScene(model, maxgeom)
            for flag, on in flags.items():
                self.scene.flags[flag] = on
            self.option, self.perturb = mujoco.MjvOption(), mujoco.MjvPerturb()
            self.rect = mujoco.MjrRect(0, 0, width, height)
            self.rgb = np.empty((height, width, 3), np.uint8)
            self.depth = np.empty((height, width), np.float32)
        except BaseException as error:
            self.done.put(error)
            return
        self.done.put(None)
        while (job := self.jobs.get()) is not None:
            try:
                self._draw(*job)
                self.done.put(None)
            except BaseException as error:  # handed to the caller's thread
                self.done.put(error)
        self.context.free()
        gl.free()

    def _draw(self, qpos, mocap, views, out, rows, edits, ghost) -> None:
        m, d = self.model, self.data
        for k in rows:
            for field, element, values in edits:
                getattr(m, field)[element, : values.shape[1]] = values[k]
            d.qpos[:] = qpos[k]
            if mocap is not None:
                d.mocap_pos[:], d.mocap_quat[:] = mocap[0][k], mocap[1][k]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_camlight(m, d)
            if m.ntendon:
                mujoco.mj_tendon(m, d)
            if m.nflex:
                mujoco.mj_flex(m, d)
            view = views[k % len(views)]
            camera = view.camera()
            if view.track_body >= 0:
                camera.lookat[:] = d.xpos[view.track_body] + view.track_offset
            mujoco.mjv_updateScene(
                m, d, self.option, self.perturb, camera, mujoco.mjtCatBit.mjCAT_ALL, self.scene
            )
            if ghost is not None:
                self._add_ghost(ghost[k])
            self._read(k, out)

    def _add_ghost(self, qpos) -> None:
        """The moving bodies' geoms at qpos added to the scene, in GHOST_RGBA."""
        g, first = self.ghost, self.scene.ngeom
        g.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, g)
        mujoco.mjv_addGeoms(
            self.model, g, self.option, self.perturb, mujoco.mjtCatBit.mjCAT_DYNAMIC, self.scene
        )
        for i in range(first, self.scene.ngeom):
            self.scene.geoms[i].rgba[:] = GHOST_RGBA

    def _read(self, k: int, out: Mapping[str, np.ndarray]) -> None:
        """Draw the updated scene into row k of each array in `out`: the scene's look for
        "rgb"; a segmentation pass (flat id colours, no skybox) for "segmentation" and for
        "depth", whose buffer MuJoCo's own depth read takes from that pass too."""
        scene, context, rect = self.scene, self.context, self.rect
        if "rgb" in out:
            mujoco.mjr_render(rect, scene, context)
            mujoco.mjr_readPixels(self.rgb, None, rect, context)
            out["rgb"][k] = self.rgb[::-1]
        if "depth" not in out and "segmentation" not in out:
            return
        flags = scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
        try:
            mujoco.mjr_render(rect, scene, context)
            mujoco.mjr_readPixels(self.rgb, self.depth if "depth" in out else None, rect, context)
        finally:
            flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = False
        if "depth" in out:
            out["depth"][k] = self._metres(self.depth[::-1])
        if "segmentation" in out:
            rgb = self.rgb[::-1].astype(np.int32)
            segid = rgb[..., 0] + rgb[..., 1] * 256 + rgb[..., 2] * 65536 - 1  # -1: no geom
            geom_of = np.full(scene.ngeom + 1, -1, np.int32)  # the last: no geom
            for g in range(scene.ngeom):
                if scene.geoms[g].objtype == mujoco.mjtObj.mjOBJ_GEOM:
                    geom_of[g] = scene.geoms[g].objid
            out["segmentation"][k] = geom_of[np.where(segid < 0, scene.ngeom, segid)]

    def _metres(self, depth: np.ndarray) -> np.ndarray:
        """OpenGL's reversed-Z [0, 1] depth as metres, as `mujoco.Renderer` converts it: the
        projection's float32 coefficients, undone in float64."""
        extent = self.model.stat.extent
        near = np.float32(self.model.vis.map.znear * extent)
        far = np.float32(self.model.vis.map.zfar * extent)
        z = depth.astype(np.float64)
        if self.scene.camera[0].orthographic:
            return far - z * (far - near)
        c = np.float32(-0.5) * (-(far + near) / (far - near)) - np.float32(0.5)
        d = np.float32(-0.5) * (-(np.float32(2) * far * near) / (far - near))
        return d / (z + c)


class RenderPool:
    """Worker threads that draw rows of qpos into images; see the module docstring."""

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int,
        height: int,
        threads: int = 1,
        maxgeom: int = 10000,
        flags: Mapping[mujoco.mjtRndFlag, bool] | None = None,
    ):
        """model: the model to draw (its offscreen buffer is raised to width x height);
        threads: worker threads, each with its own GL context; flags: render flags to set on
        every worker's scene (`mjRND_SHADOW`: False draws without shadow maps)."""
        check_size(width, height)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ArgumentError(f"render_threads: expected an int >= 1, got {shown(threads)}")
        samples = max(1, int(model.vis.quality.offsamples))
        limits.check_memory(
            f"rendering at {width} x {height} on {threads} render threads",
            threads * context_bytes(width, height, samples),
            "cpu",
            f"{threads} offscreen buffers of {width} x {height} pixels x {samples} samples",
        )
        model.vis.global_.offwidth = max(width, model.vis.global_.offwidth)
        model.vis.global_.offheight = max(height, model.vis.global_.offheight)
        self.model, self.width, self.height = model, width, height
        self._workers: list[_Worker] = []
        try:
            for _ in range(threads):
                self._workers.append(_Worker(model, width, height, maxgeom, flags or {}))
            check_size(width, height)  # against the GL implementation's own limit, now known
        except BaseException:
            self.close()
            raise

    @property
    def threads(self) -> int:
        return len(self._workers)

    def render(
        self,
        qpos: np.ndarray,
        views: Sequence[View],
        out: Mapping[str, np.ndarray],
        mocap: tuple[np.ndarray, np.ndarray] | None = None,
        edits: Sequence[tuple[str, int, np.ndarray]] = (),
        ghost: np.ndarray | None = None,
    ) -> None:
        """Draw row k of qpos (k, nq) from views[k % len(views)] into out[...][k]: "rgb"
        (k, H, W, 3) uint8, "depth" (k, H, W) float32 metres, "segmentation" (k, H, W) int32
        geom ids; mocap: the rows' (k, nmocap, 3) positions and (k, nmocap, 4) quaternions;
        edits: (model field, element id, (k, m) values) written into the first m entries of
        that element's field in each worker's copy of the model before drawing row k; ghost:
        rows (k, nq) whose moving bodies are drawn translucent (GHOST_RGBA) into row k's image."""
        if not self._workers:
            raise RuntimeError("render: this render pool is closed")
        blocks = np.array_split(np.arange(len(qpos)), len(self._workers))
        busy = [(w, rows) for w, rows in zip(self._workers, blocks, strict=True) if len(rows)]
        for w, rows in busy:
            w.jobs.put((qpos, mocap, views, out, rows, edits, ghost))
        errors = [w.done.get() for w, _ in busy]
        for error in errors:
            if error is not None:
                raise error

    def close(self) -> None:
        """Stop the workers and free their GL contexts (idempotent)."""
        for w in self._workers:
            w.jobs.put(None)
        for w in self._workers:
            w.thread.join()
        self._workers = []


def context_bytes(width: int, height: int, samples: int) -> int:
    """What one worker's OpenGL context holds for a width x height image: MuJoCo's offscreen
    framebuffer (RGBA8 colour and 24+8-bit depth-stencil per sample) and its resolve buffer, in
    the driver's memory (the host's, with Mesa's llvmpipe), and the worker's RGB and depth arrays."""
    return width * height * (8 * samples + 8 + 3 + 4)


def check_size(width: int, height: int) -> None:
    """Refuse an image size the offscreen buffer cannot hold (ArgumentError, naming it)."""
    limit = _GL_LIMIT[0]
    for name, value in (("width", width), ("height", height)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 1 <= value <= limit:
            raise ArgumentError(
                f"{name}: expected an int in [1, {limit}] (the renderer's offscreen buffer), got {value!r}"
            )
