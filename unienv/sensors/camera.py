"""Camera observation blocks: what a camera is, and the images it yields for every env.

`Camera` is the spec a task or a config declares: where the camera looks from (a camera of
the scene by name or index; or a free camera at `pos` aimed at `target`, world frame, which
with `track_body` follow that body's position), the image size, the modalities ("rgb" uint8,
"depth" float32 metres, "segmentation" int32 geom ids, -1 where no geom is drawn), the
layout (channels first, (C, H, W), as torch convolutions and DrQ-v2 take them, or last) and
the look (`unienv.render.cameras.LOOKS`).

`CameraSensor(camera, backend)` resolves the spec against the backend's scene once (a
misspelled camera name raises with the closest names, a bad size or modality with what was
expected), builds the engine's camera renderer (`unienv.render.cameras`; an engine without
one refuses here) and draws every env, or some, into tensors the caller holds, in one call.
Images are drawn from the scene as written (its own lights, textures, shadows and
multisampling), not in the videos' look, so that they equal dm_control's pixels; the
"learning" look draws the same scene without shadows, reflections and multisampling.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import gymnasium as gym
import mujoco
import numpy as np
import torch

from unienv.backends.scene import load_mjmodel
from unienv.errors import ArgumentError, unknown_name
from unienv.render.cameras import LOOKS, MODALITIES, camera_renderer
from unienv.render.pool import View, check_size
from unienv.utils.records import fields_of

DTYPES = {"rgb": torch.uint8, "depth": torch.float32, "segmentation": torch.int32}
NUMPY_DTYPES = {"rgb": np.uint8, "depth": np.float32, "segmentation": np.int32}
BOUNDS = {"rgb": (0, 255), "depth": (0.0, np.inf), "segmentation": (-1, np.iinfo(np.int32).max)}


@dataclasses.dataclass(frozen=True)
class Camera:
    """A camera observation: where from, what size, which images, which layout.

    camera: a camera of the scene, by name or index (0: the scene's first); None for a free
    camera at `pos` aimed at `target` (metres, world frame; offsets from `track_body`'s
    position when it is given, so that the camera follows the body). look: "scene" draws the
    scene as written (dm_control's pixels), "learning" without its shadows, reflections and
    multisampling (a fraction of the cost in software rendering)."""

    camera: str | int | None = 0
    width: int = 84
    height: int = 84
    modalities: tuple[str, ...] = ("rgb",)
    channels_first: bool = True
    pos: tuple[float, float, float] | None = None
    target: tuple[float, float, float] | None = None
    track_body: str | None = None
    look: str = "scene"

    @classmethod
    def of(cls, spec: Camera | Mapping | None) -> Camera:
        """A Camera from itself, a mapping of its fields (a config), or None (the defaults)."""
        if spec is None or isinstance(spec, Camera):
            return spec or cls()
        spec = fields_of(cls, spec, "camera", "camera field")
        if "modalities" in spec and isinstance(spec["modalities"], str):
            spec["modalities"] = (spec["modalities"],)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()})

    def image_shape(self, modality: str) -> tuple[int, ...]:
        """The shape of one env's image of `modality`."""
        c = 3 if modality == "rgb" else 1
        if self.channels_first:
            return (c, self.height, self.width)
        return (self.height, self.width, c)


def resolve(camera: Camera, model: mujoco.MjModel) -> View:
    """The renderer's view of `camera` in `model`; raises on a name, index or field that
    does not fit (ArgumentError, UnknownNameError with the closest names)."""
    check_size(camera.width, camera.height)
    if not camera.modalities or any(m not in MODALITIES for m in camera.modalities):
        raise ArgumentError(
            f"modalities: expected a non-empty tuple of {', '.join(MODALITIES)}, got {camera.modalities!r}"
        )
    if len(set(camera.modalities)) != len(camera.modalities):
        raise ArgumentError(f"modalities: each at most once, got {camera.modalities!r}")
    if camera.look not in LOOKS:
        raise unknown_name("look", camera.look, LOOKS)
    names = [model.camera(i).name for i in range(model.ncam)]
    if camera.camera is not None:
        if camera.pos is not None or camera.target is not None or camera.track_body is not None:
            raise ArgumentError("camera: give a scene camera or pos/target/track_body, not both")
        if isinstance(camera.camera, str):
            if camera.camera not in names:
                raise unknown_name("camera", camera.camera, [n for n in names if n])
            return View(camera_id=names.index(camera.camera))
        if isinstance(camera.camera, bool) or not isinstance(camera.camera, (int, np.integer)):
            raise ArgumentError(f"camera: expected a name, an index or None, got {camera.camera!r}")
        if not 0 <= camera.camera < model.ncam:
            raise ArgumentError(
                f"camera: expected an index in [0, {model.ncam}) (the scene's cameras: {names}), "
                f"got {camera.camera}"
            )
        return View(camera_id=int(camera.camera))
    if camera.pos is None or camera.target is None:
        raise ArgumentError(
            "camera: None needs pos and target (a free camera), got "
            f"pos={camera.pos!r}, target={camera.target!r}"
        )
    pos, target = (np.asarray(v, np.float64) for v in (camera.pos, camera.target))
    if pos.shape != (3,) or target.shape != (3,) or not np.isfinite([*pos, *target]).all():
        raise ArgumentError(
            f"pos, target: expected 3 finite numbers each, got {camera.pos!r}, {camera.target!r}"
        )
    ahead = target - pos
    distance = float(np.linalg.norm(ahead))
    if distance == 0.0:
        raise ArgumentError("pos, target: the camera must not sit on its target")
    track = -1
    if camera.track_body is not None:
        bodies = [model.body(i).name for i in range(model.nbody)]
        if camera.track_body not in bodies:
            raise unknown_name("track_body", camera.track_body, bodies)
        track = bodies.index(camera.track_body)
    return View(
        lookat=tuple(target),
        distance=distance,
        azimuth=math.degrees(math.atan2(ahead[1], ahead[0])),
        elevation=math.degrees(math.asin(ahead[2] / distance)),
        track_body=track,
        track_offset=tuple(target) if track >= 0 else (0.0, 0.0, 0.0),
    )


class CameraSensor:
    """One camera's images of every env of a backend; see the module docstring."""

    def __init__(self, camera: Camera | Mapping | None, backend, render_threads: int | None = None):
        self.camera = Camera.of(camera)
        model = load_mjmodel(backend.scene)  # no MuJoCo deprecation line, no MUJOCO_LOG.TXT
        view = resolve(self.camera, model)
        self.num_envs, self.device = backend.num_envs, backend.device
        self.renderer = camera_renderer(
            backend, model, [view], self.camera.width, self.camera.height, render_threads, self.camera.look
        )

    def spaces(self) -> dict[str, gym.spaces.Box]:
        """One env's image space per modality."""
        return {
            m: gym.spaces.Box(*BOUNDS[m], self.camera.image_shape(m), NUMPY_DTYPES[m])
            for m in self.camera.modalities
        }

    def empty(self, *lead: int) -> dict[str, torch.Tensor]:
        """Uninitialised image tensors, (*lead, *image shape) per modality, on the env's device."""
        return {
            m: torch.empty((*lead, *self.camera.image_shape(m)), dtype=DTYPES[m], device=self.device)
            for m in self.camera.modalities
        }

    def render(
        self,
        out: Mapping[str, torch.Tensor],
        env_ids: Sequence[int] | None = None,
        marks: Mapping | None = None,
    ) -> None:
        """Draw the envs `env_ids` (None: all) into out[modality] (k, *image shape), in place;
        marks: per-env model values to draw them with, every env's (`Task.scene_marks`)."""
        hwc = {m: self._hwc(m, t) for m, t in out.items()}
        self.renderer.render(hwc, None if env_ids is None else np.asarray(env_ids), marks or {})

    def _hwc(self, modality: str, images: torch.Tensor) -> torch.Tensor:
        """A (k, H, W, 3) or (k, H, W) view of (k, *image shape) images, as renderers write."""
        if self.camera.channels_first:
            images = images.permute(0, 2, 3, 1)
        return images if modality == "rgb" else images[..., 0]

    def close(self) -> None:
        self.renderer.close()
