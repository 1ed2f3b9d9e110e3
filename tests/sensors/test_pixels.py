"""DMC from pixels (obs="pixels"): the stack's layout, action repeat, autoreset, spaces, ids."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

import unienv
from unienv.errors import CapabilityError
from unienv.sensors import Camera, CameraSensor

pytest.importorskip("dm_control", reason="dm-control is not installed (pip install 'unienv[dmc]')")


def _newest(env) -> torch.Tensor:
    """The camera's image of every env's current state, drawn on its own."""
    sensor = env.unwrapped._observer.sensor
    out = sensor.empty(env.num_envs)
    sensor.render(out)
    return out["rgb"]


def test_drqv2_defaults_and_the_stack_oldest_first():
    env = unienv.make("dmc_cheetah_run", obs="pixels", num_envs=2, seed=3)
    assert env.single_observation_space == gym.spaces.Box(0, 255, (9, 84, 84), np.uint8)
    assert env.observation_space.shape == (2, 9, 84, 84) and env.action_repeat == 2
    assert env.max_episode_steps == 500  # 1000 control steps of dm_control, two per action
    obs, _ = env.reset(seed=3)
    assert obs.dtype == torch.uint8 and obs.device == env.device
    first = _newest(env)
    for k in range(3):  # a new episode's stack is its first frame, three times
        assert torch.equal(obs[:, 3 * k : 3 * k + 3], first)
    actions = torch.ones(2, 6)
    history = [first]
    for _ in range(4):
        obs = env.step(actions)[0]
        history.append(_newest(env))
        expected = torch.cat([history[max(0, len(history) - 3 + k)] for k in range(3)], 1)
        assert torch.equal(obs, expected)  # frames t-2, t-1, t: oldest first
    assert not torch.equal(history[-1], history[-2])
    env.close()


def test_action_repeat_sums_the_rewards_of_its_steps():
    repeated = unienv.make("dmc_cheetah_run", obs="pixels+state", seed=5, action_repeat=3)
    single = unienv.make("dmc_cheetah_run", seed=5)
    repeated.reset(seed=5)
    single.reset(seed=5)
    actions = torch.full((1, 6), 0.7)
    for _ in range(3):
        obs, reward, *_ = repeated.step(actions)
        total = sum(single.step(actions)[1] for _ in range(3))
        torch.testing.assert_close(reward, total, rtol=0, atol=0)
        torch.testing.assert_close(obs["state"], single.observe(), rtol=0, atol=0)
    repeated.close()
    single.close()


def test_the_final_observation_is_the_stack_before_the_reset():
    env = unienv.make("dmc_cartpole_swingup", obs="pixels+state", num_envs=2, seed=0, max_episode_steps=2)
    assert isinstance(env.single_observation_space, gym.spaces.Dict)
    assert env.single_observation_space["state"].shape == (5,)
    env.reset(seed=0)
    start, actions = _newest(env), torch.ones(2, 1)
    env.step(actions)
    middle = _newest(env)
    obs, _, _, truncated, info = env.step(actions)
    assert truncated.all() and info["_final_obs"].all()
    final = info["final_obs"]["pixels"]
    assert torch.equal(final[:, :3], start) and torch.equal(final[:, 3:6], middle)
    first = _newest(env)  # the new episode's state
    for k in range(3):
        assert torch.equal(obs["pixels"][:, 3 * k : 3 * k + 3], first)
    assert not torch.equal(final[:, 6:], middle) and not torch.equal(final[:, 6:], first)
    env.close()


def test_gymnasium_ids_and_the_single_env():
    env = gym.make("unienv/DMC-CartpoleSwingup-pixels-v0")
    assert env.spec.max_episode_steps == 500
    obs, _ = env.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.shape == (9, 84, 84) and obs.dtype == np.uint8
    obs, reward, *_ = env.step(env.action_space.sample())
    assert obs.shape == (9, 84, 84) and isinstance(reward, float)
    env.close()


def test_channels_last_and_a_free_camera_tracking_a_body():
    env = unienv.make("dmc_cheetah_run", num_envs=1, seed=0)
    camera = Camera(
        None, 32, 24, ("rgb", "depth"), False, pos=(0, -3, 1), target=(0, 0, 0), track_body="torso"
    )
    sensor = CameraSensor(camera, env.backend, 1)
    out = sensor.empty(1)
    env.reset(seed=0)
    sensor.render(out)
    assert out["rgb"].shape == (1, 24, 32, 3) and out["depth"].shape == (1, 24, 32, 1)
    # the torso sits at the image's centre, about 3.16 m away along the camera's axis
    centre = out["depth"][0, 9:15, 10:22, 0]
    assert abs(float(centre.min()) - np.sqrt(10)) < 0.3
    sensor.close()
    env.close()


def test_an_engine_without_a_camera_renderer_refuses_at_construction():
    """Refused before the backend is built (so without building a Genesis scene), with the reason."""
    with pytest.raises(CapabilityError, match=r"the genesis backend renders no camera images: .*gs-madrona"):
        unienv.make("dmc_cartpole_swingup", backend="genesis", device="cpu", obs="pixels")
