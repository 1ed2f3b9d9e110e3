"""Pixel observations: a camera's images of every env, stacked over the last frames.

`UniEnv(..., obs="pixels", pixels=PixelOptions(...))` observes through `PixelObservation`
instead of (or beside, `obs="pixels+state"`) the task's state vector. Defaults are
DrQ-v2's: 84 x 84 RGB from the scene's camera 0 drawn as dm_control draws it (the "scene"
look; "learning" leaves out shadows, reflections and multisampling), the last 3 frames (and,
set by `unienv.make`, an action repeat of 2). An observation is a uint8 tensor (N, 3 * frames,
H, W), channels first, the oldest frame first, as DrQ-v2 stacks them; with "pixels+state"
it is a dict {"pixels": images, "state": the task's observation}.

Model: each modality has a ring of frames per env, (N, frames, *image), and one head shared
by all envs (every env gets a frame at every step). After a step's physics the camera draws
every env into the slot after the head, in one renderer call; an env that starts an episode
is drawn again and its whole ring filled with that first frame, as DrQ-v2's stack starts.
An observation is the one copy that orders the ring oldest first; nothing else is copied.
The terminal observation of an env reset within a step (SAME_STEP's info["final_obs"]) is
the stack before its reset, copied only in a step that resets some env.

The env calls the hooks `after_step(memory)` (every env has a new state), `after_reset(mask,
memory)` (the envs of mask start episodes), and `observation(state)` / `outputs(...)` at its
public boundary, where the state observation becomes the pixel one. The memory gives the
task's `scene_marks` (each env's target, where the scene file cannot say it), drawn with
every frame.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from unienv.errors import ArgumentError, unknown_name
from unienv.render import pool
from unienv.sensors import Camera, CameraSensor
from unienv.utils import limits
from unienv.utils.limits import check_size
from unienv.utils.records import fields_of

OBS = ("state", "pixels", "pixels+state")


@dataclasses.dataclass(frozen=True)
class PixelOptions:
    """What a pixel observation is: the image size, the camera (a scene camera's name or
    index, or a `Camera` / mapping of its fields for a free or tracking one), the frames
    stacked, the threads that render (default: one per core, at most one per env), and the
    look: "scene" (the default) draws the scene as written, dm_control's pixels; "learning"
    draws it without shadows, reflections and multisampling, which a policy does not need."""

    width: int = 84
    height: int = 84
    camera: Any = 0
    frame_stack: int = 3
    render_threads: int | None = None
    look: str = "scene"

    @classmethod
    def of(cls, spec: PixelOptions | Mapping | None) -> PixelOptions:
        if spec is None or isinstance(spec, PixelOptions):
            return spec or cls()
        return cls(**fields_of(cls, spec, "pixels", "pixels option"))

    def camera_spec(self) -> Camera:
        """The Camera these options observe through (RGB, channels first): a `Camera` or mapping
        given as `camera` takes these options' width, height and look."""
        fields = {"width": self.width, "height": self.height, "look": self.look}
        fields |= {"modalities": ("rgb",), "channels_first": True}
        if isinstance(self.camera, Camera):
            return dataclasses.replace(self.camera, **fields)
        if isinstance(self.camera, Mapping):
            return Camera.of({**self.camera, **fields})
        return Camera(camera=self.camera, **fields)


MAX_FRAME_STACK = 256
"""The most frames a pixel observation stacks (DrQ-v2 stacks 3)."""


def check_memory(options: PixelOptions, backend) -> int:
    """The frame stack, refused unless a whole number in [1, MAX_FRAME_STACK] whose frames fit
    in the memory free on the backend's device: every env's ring of frames, an observation and a
    final observation of the same size (3 x envs x frames x 3 x height x width bytes), before a
    renderer or a frame is made."""
    stack = check_size("pixels.frame_stack", options.frame_stack, MAX_FRAME_STACK, unit="frames")
    pool.check_size(options.width, options.height)
    n, h, w = backend.num_envs, options.height, options.width
    limits.check_memory(
        f"pixels: {n} envs x frame_stack {stack} x 3 x {h} x {w}",
        3 * n * stack * 3 * h * w,
        backend.device,
        "uint8 frames (the rings, an observation and a final one)",
    )
    return stack


def checked_obs(obs: Any) -> str:
    if obs not in OBS:
        raise unknown_name("obs", obs, OBS)
    return obs


def observer(obs: str, options, backend, task):
    """What turns the task's observation into the env's: itself (obs="state") or camera frames."""
    if checked_obs(obs) == "state":
        if options is not None:
            raise ArgumentError('pixels: options for camera frames need obs="pixels" or "pixels+state"')
        return StateObservation()
    return PixelObservation(obs, options, backend, task)


def repeated(xp, reward, terms, terminated, step_reward, step_terms, step_terminated) -> tuple:
    """Reward, its terms and termination over an action's repeats so far, one more added:
    the rewards summed, those after an env terminated left out."""
    kept = ~terminated
    reward = reward + xp.where(kept, step_reward, 0.0)
    terms = {k: terms[k] + xp.where(kept, v, 0.0) for k, v in step_terms.items()}
    return reward, terms, terminated | step_terminated


def _host(marks: dict) -> dict:
    """The task's scene marks as NumPy arrays (the renderer's threads write them per env)."""
    return {f: {k: np.asarray(torch.as_tensor(v).cpu()) for k, v in d.items()} for f, d in marks.items()}


class StateObservation:
    """The task's observation as it is (obs="state"): every hook does nothing."""

    single_observation_space = None

    def after_step(self, memory) -> None:
        pass

    def after_reset(self, mask, memory) -> None:
        pass

    def observation(self, state, memory=None):
        return state

    def outputs(self, *outputs) -> tuple:
        return outputs

    def close(self) -> None:
        pass


class PixelObservation:
    """Stacked camera frames of every env; see the module docstring."""

    def __init__(self, obs: str, options: PixelOptions | Mapping | None, backend, task):
        options = PixelOptions.of(options)
        stack = check_memory(options, backend)
        self.with_state, self.frames = obs == "pixels+state", stack
        self.sensor = CameraSensor(options.camera_spec(), backend, options.render_threads)
        n, image = backend.num_envs, self.sensor.spaces()["rgb"]
        c, h, w = image.shape
        pixels = gym.spaces.Box(0, 255, (c * stack, h, w), np.uint8)
        self.single_observation_space = (
            gym.spaces.Dict({"pixels": pixels, "state": task.single_observation_space})
            if self.with_state
            else pixels
        )
        self._ring = self.sensor.empty(n, stack)["rgb"]  # (N, frames, C, H, W)
        self._head = 0  # the slot of the newest frame, every env's
        self._in_step = False
        self._final: torch.Tensor | None = None
        self._task, self._marks = task, {}

    def _draw(self, out: torch.Tensor, env_ids=None) -> None:
        self.sensor.render({"rgb": out}, env_ids, self._marks)

    def after_step(self, memory) -> None:
        """Every env has a new state: draw it into the next slot of its ring."""
        self._marks = _host(self._task.scene_marks(memory))
        self._head = (self._head + 1) % self.frames
        self._draw(self._ring[:, self._head])
        self._in_step, self._final = True, None

    def after_reset(self, mask, memory) -> None:
        """The envs of `mask` start an episode: their rings hold only its first frame. A
        host mask (NumPy) draws those envs; a device mask draws every env and writes the
        masked rows, reading nothing on the host."""
        if self._in_step:  # the stacks they ended with, SAME_STEP's final observation
            self._final = self._stacked()
        self._marks = _host(self._task.scene_marks(memory))
        if isinstance(mask, np.ndarray):
            env_ids = np.flatnonzero(mask)
            first = self.sensor.empty(len(env_ids))["rgb"]
            self._draw(first, env_ids)
            self._ring[torch.from_numpy(env_ids)] = first[:, None]
        else:
            first = self.sensor.empty(len(mask))["rgb"]
            self._draw(first)
            self._ring.copy_(torch.where(mask.view(-1, 1, 1, 1, 1), first[:, None], self._ring))

    def _stacked(self) -> torch.Tensor:
        """(N, frames * C, H, W): each env's frames, oldest first (one copy of the ring)."""
        order = [(self._head + 1 + i) % self.frames for i in range(self.frames)]
        return torch.cat([self._ring[:, i] for i in order], dim=1)

    def observation(self, state: torch.Tensor, memory=None) -> Any:
        """The observation of the envs' current frames; state: the task's observation;
        memory: given, the newest frame is drawn again (the state was written since)."""
        if memory is not None:
            self._marks = _host(self._task.scene_marks(memory))
            self._draw(self._ring[:, self._head])
        self._in_step = False
        pixels = self._stacked()
        return {"pixels": pixels, "state": state} if self.with_state else pixels

    def outputs(self, obs, reward, terminated, truncated, info: dict) -> tuple:
        """A step's outputs with pixel observations (and final observations) in place of state."""
        final, self._final = self._final, None
        observation = self.observation(obs)
        pixels = observation["pixels"] if self.with_state else observation
        diverged = info.get("_diverged")
        if diverged is not None:  # a diverged state is never handed out (SAME_STEP: every one is final)
            (pixels if final is None else final).masked_fill_(diverged.view(-1, 1, 1, 1), 0)
        if final is not None and "final_obs" in info:
            info["final_obs"] = {"pixels": final, "state": info["final_obs"]} if self.with_state else final
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        self.sensor.close()
