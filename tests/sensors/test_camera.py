"""Camera images on the mujoco backend: parity with dm_control and MuJoCo, determinism, errors.

Parity: for the same physics state (dm_control's after a reset and 20 random actions, copied
into unienv's backend), unienv's 84 x 84 RGB from camera 0 in the "scene" look equals
dm_control's `physics.render(84, 84, camera_id=0)` pixel for pixel: both draw the scene as
written with the same MuJoCo calls on the same GL implementation. Depth equals MuJoCo's own
depth read (`mujoco.Renderer` with depth rendering) to within 1e-5 m. The "learning" look
equals MuJoCo's own renderer with its shadows, reflections and multisampling switched off.
"""

from __future__ import annotations

import os
import subprocess
import sys

import mujoco
import numpy as np
import pytest
import torch

import unienv
from unienv import backends
from unienv.errors import ArgumentError, UnknownNameError
from unienv.render.cameras import MODALITIES
from unienv.render.pool import headless_gl
from unienv.sensors import Camera, CameraSensor
from unienv.tasks import task_class

os.environ.setdefault("MUJOCO_GL", "egl")  # dm_control picks its GL platform from it at import
PARITY = {  # task: dm_control's (domain, task)
    "dmc_cheetah_run": ("cheetah", "run"),
    "dmc_walker_walk": ("walker", "walk"),
    "dmc_cartpole_swingup": ("cartpole", "swingup"),
    "dmc_hopper_hop": ("hopper", "hop"),
    "dmc_acrobot_swingup": ("acrobot", "swingup"),
    "dmc_ball_in_cup_catch": ("ball_in_cup", "catch"),
    "dmc_humanoid_walk": ("humanoid", "walk"),
}


def dm_physics(domain: str, task: str, steps: int = 20):
    """dm_control's physics of the task after a seeded reset and `steps` random actions."""
    from tests.tasks.test_dmc import dm_control_suite

    env = dm_control_suite().load(domain, task, task_kwargs={"random": 0})
    env.reset()
    rng, spec = np.random.default_rng(0), env.action_spec()
    for _ in range(steps):
        env.step(rng.uniform(spec.minimum, spec.maximum))
    return env.physics


def backend_at(name: str, qpos: np.ndarray, num_envs: int = 2):
    """The mujoco backend of task `name` with every env at qpos."""
    task = task_class(name)()
    backend = backends.create("mujoco", task.scene, num_envs, task.sim_dt)
    rows = torch.as_tensor(np.repeat(qpos[None], num_envs, 0))
    backend.set_state_tensor(
        torch.arange(num_envs), rows, torch.zeros(num_envs, backend.nv, dtype=torch.float64)
    )
    return backend


@pytest.mark.parametrize("name", sorted(PARITY))
def test_rgb_equals_dm_control_pixel_for_pixel_and_depth_mujocos(name):
    physics = dm_physics(*PARITY[name])
    reference = physics.render(84, 84, camera_id=0)
    with backend_at(name, physics.data.qpos.copy()) as backend:
        camera = Camera(channels_first=False, modalities=("rgb", "depth"), look="scene")
        sensor = CameraSensor(camera, backend, 2)
        out = sensor.empty(2)
        sensor.render(out)
        sensor.close()
    assert out["rgb"].dtype == torch.uint8 and out["rgb"].shape == (2, 84, 84, 3)
    np.testing.assert_array_equal(out["rgb"][0].numpy(), reference)
    np.testing.assert_array_equal(out["rgb"][1].numpy(), reference)
    # MuJoCo's own depth read of the same state and camera
    headless_gl()
    model = mujoco.MjModel.from_xml_path(task_class(name)().scene)
    data = mujoco.MjData(model)
    data.qpos[:] = physics.data.qpos
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 84, 84) as renderer:
        renderer.enable_depth_rendering()
        renderer.update_scene(data, camera=0)
        depth = renderer.render()
    np.testing.assert_allclose(out["depth"][0, ..., 0].numpy(), depth, rtol=0, atol=1e-5)
    assert np.ptp(depth) > 0.1  # a scene in depth, not a blank


def test_the_learning_look_is_mujocos_renderer_without_shadows_reflections_multisampling():
    """Its RGB is MuJoCo's renderer with those three switched off; its depth and geom ids are the
    scene look's."""
    physics = dm_physics("cheetah", "run")
    images = {}
    with backend_at("dmc_cheetah_run", physics.data.qpos.copy(), 1) as backend:
        for look in ("scene", "learning"):
            camera = Camera(channels_first=False, modalities=MODALITIES, look=look)
            sensor = CameraSensor(camera, backend, 1)
            images[look] = sensor.empty(1)
            sensor.render(images[look])
            sensor.close()
        model = mujoco.MjModel.from_xml_path(backend.scene)
    headless_gl()
    model.vis.quality.offsamples = 0
    data = mujoco.MjData(model)
    data.qpos[:] = physics.data.qpos
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, 84, 84) as renderer:
        renderer.update_scene(data, camera=0)
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        reference = renderer.render()
    np.testing.assert_array_equal(images["learning"]["rgb"][0].numpy(), reference)
    differ = (images["learning"]["rgb"] != images["scene"]["rgb"]).any(-1).float().mean()
    assert differ > 0.05  # the shadow, the floor's reflection, the edges
    for modality in ("depth", "segmentation"):  # drawn in their own pass, whatever the look
        assert torch.equal(images["learning"][modality], images["scene"][modality])


MARKED = {  # tasks whose targets dm_control draws by editing its model: (domain, task), target
    "dmc_reacher_hard": ("reacher", "hard", lambda p: p.named.model.geom_pos["target"][:2]),
    "dmc_finger_turn_easy": ("finger", "turn_easy", lambda p: p.named.model.site_pos["target"][[0, 2]]),
    "dmc_finger_spin": ("finger", "spin", None),
    "dmc_fish_swim": ("fish", "swim", lambda p: p.named.model.geom_pos["target"]),
    "dmc_swimmer_swimmer6": ("swimmer", "swimmer6", lambda p: [*p.named.model.geom_pos["target"][:2], 0.05]),
}


@pytest.mark.parametrize("name", sorted(MARKED))
def test_targets_kept_in_memory_are_drawn_as_dm_control_draws_them(name):
    """Each env's target (the task's scene_marks) at dm_control's place and size; spin's hidden sites."""
    domain, task, target = MARKED[name]
    physics = dm_physics(domain, task)
    env = unienv.make(name, obs="pixels", num_envs=2, seed=0, pixels={"frame_stack": 1, "look": "scene"})
    env.reset(seed=0)
    qpos = torch.as_tensor(np.repeat(physics.data.qpos[None], 2, 0))
    env.backend.set_state_tensor(torch.arange(2), qpos, torch.zeros(2, env.backend.nv, dtype=torch.float64))
    if target is not None:
        env.unwrapped._memory["target"][0] = target(physics)  # env 1 keeps its own target
    obs = env.observe()
    env.close()
    reference = physics.render(84, 84, camera_id=0)
    np.testing.assert_array_equal(obs[0].permute(1, 2, 0).numpy(), reference)
    assert target is None or not np.array_equal(obs[1].permute(1, 2, 0).numpy(), reference)


def test_segmentation_names_the_geoms_drawn():
    physics = dm_physics("cartpole", "swingup", steps=0)
    with backend_at("dmc_cartpole_swingup", physics.data.qpos.copy(), 1) as backend:
        sensor = CameraSensor(Camera(modalities=("segmentation",)), backend, 1)
        out = sensor.empty(1)
        sensor.render(out)
        sensor.close()
    ids = set(out["segmentation"].unique().tolist())
    pole, cart = physics.model.name2id("pole_1", "geom"), physics.model.name2id("cart", "geom")
    assert {pole, cart} <= ids and ids <= set(range(-1, physics.model.ngeom))


def _stream(threads: int, look: str, steps: int = 6) -> list[torch.Tensor]:
    pixels = {"render_threads": threads, "look": look}
    env = unienv.make("dmc_cheetah_run", obs="pixels", num_envs=3, seed=7, pixels=pixels)
    obs, _ = env.reset(seed=7)
    frames, rng = [obs.clone()], torch.Generator().manual_seed(0)
    for _ in range(steps):
        actions = torch.rand(3, 6, generator=rng) * 2 - 1
        frames.append(env.step(actions)[0].clone())
    env.close()
    return frames


@pytest.mark.parametrize("look", ["scene", "learning"])
def test_same_seed_gives_bit_identical_images_across_runs_and_thread_counts(look):
    one, again, two = _stream(1, look), _stream(1, look), _stream(2, look)
    for a, b, c in zip(one, again, two, strict=True):
        assert torch.equal(a, b) and torch.equal(a, c)
    assert not torch.equal(one[0], one[-1])  # the cheetah moved: the images differ over time


def test_errors_name_the_argument_and_change_nothing():
    with pytest.raises(UnknownNameError, match="did you mean 'side'"):
        unienv.make("dmc_cheetah_run", obs="pixels", pixels={"camera": "sde"})
    with pytest.raises(ArgumentError, match="camera: expected an index in"):
        unienv.make("dmc_cheetah_run", obs="pixels", pixels={"camera": 7})
    for size in (0, 10**6):
        with pytest.raises(ArgumentError, match=r"width: expected an int in \[1, "):
            unienv.make("dmc_cheetah_run", obs="pixels", pixels={"width": size})
    with pytest.raises(ArgumentError, match="frame_stack"):
        unienv.make("dmc_cheetah_run", obs="pixels", pixels={"frame_stack": 0})
    with pytest.raises(UnknownNameError, match="did you mean 'frame_stack'"):
        unienv.make("dmc_cheetah_run", obs="pixels", pixels={"frame_stak": 2})
    with pytest.raises(UnknownNameError, match=r"unknown look 'fast' \(valid: 'scene', 'learning'\)"):
        unienv.make("dmc_cheetah_run", obs="pixels", pixels={"look": "fast"})
    with pytest.raises(UnknownNameError, match="unknown obs 'pixel'"):
        unienv.make("dmc_cheetah_run", obs="pixel")
    with pytest.raises(ArgumentError, match="action_repeat"):
        unienv.make("dmc_cheetah_run", obs="pixels", action_repeat=0)
    # nothing was changed: a good env after the bad ones renders as ever
    env = unienv.make("dmc_cheetah_run", obs="pixels", seed=0)
    assert env.reset(seed=0)[0].shape == (1, 9, 84, 84)
    env.close()


def test_no_gl_names_mujoco_gl_and_what_to_install():
    """A GL platform that does not start (GLFW, told of a display that is not there): one
    clear error naming MUJOCO_GL and what to install, raised before the env exists."""
    code = (
        "import unienv\n"
        "from unienv.errors import GLUnavailableError\n"
        "try:\n"
        "    unienv.make('dmc_cartpole_swingup', obs='pixels')\n"
        "except GLUnavailableError as e:\n"
        "    print('REFUSED', e)\n"
    )
    env = {**os.environ, "MUJOCO_GL": "glfw", "DISPLAY": ":4242"}
    env.pop("PYOPENGL_PLATFORM", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert "REFUSED rendering: no OpenGL context" in out.stdout, out.stderr[-2000:]
    assert "MUJOCO_GL is glfw" in out.stdout and "MUJOCO_GL=egl" in out.stdout and "apt install" in out.stdout
