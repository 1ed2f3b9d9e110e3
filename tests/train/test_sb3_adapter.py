"""Stable-Baselines3 on the SB3 adapter: SB3's own checks pass and its PPO learns from it."""

import numpy as np
import pytest

import unienv

pytest.importorskip("stable_baselines3")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common import env_checker  # noqa: E402
from stable_baselines3.common.vec_env import VecCheckNan, VecMonitor  # noqa: E402

from unienv.wrappers.sb3 import Sb3VecEnv  # noqa: E402


def test_sb3_check_env_passes_on_the_single_env():
    env = unienv.make_single("cartpole", seed=0)
    env_checker.check_env(env, warn=True, skip_render_check=True)


def test_sb3_env_checks_pass_on_the_adapter():
    venv = Sb3VecEnv(unienv.make("ant", num_envs=4, seed=0, max_episode_steps=20))
    assert not env_checker._check_unsupported_spaces(venv, venv.observation_space, venv.action_space)
    checked = VecCheckNan(venv, raise_exception=True)  # NaN/inf in actions, obs, rewards raise
    obs = checked.reset()
    assert obs.shape == (4, *venv.observation_space.shape) and obs.dtype == venv.observation_space.dtype
    for row in obs:
        env_checker._check_obs(row, venv.observation_space, "reset")
    venv.action_space.seed(0)
    ended = 0
    for _ in range(45):
        actions = np.stack([venv.action_space.sample() for _ in range(4)])
        obs, rewards, dones, infos = checked.step(actions)
        assert rewards.shape == (4,) and rewards.dtype == np.float32
        assert dones.shape == (4,) and dones.dtype == bool
        assert isinstance(infos, list) and len(infos) == 4 and all(isinstance(i, dict) for i in infos)
        for row in obs:
            env_checker._check_obs(row, venv.observation_space, "step")
        for i in np.flatnonzero(dones):
            ended += 1
            info = infos[i]
            env_checker._check_obs(info["terminal_observation"], venv.observation_space, "step")
            assert not np.array_equal(info["terminal_observation"], obs[i])  # obs[i] is the next episode's
            assert set(info["episode"]) == {"r", "l", "t"} and 1 <= info["episode"]["l"] <= 20
            assert info["TimeLimit.truncated"] == (info["episode"]["l"] == 20)
        for i in np.flatnonzero(~dones):
            assert infos[i] == {}
    assert ended >= 8  # every env hit the time limit at least twice
    venv.close()


def test_seed_takes_effect_at_the_next_reset():
    venv = Sb3VecEnv(unienv.make("cartpole", num_envs=3))
    assert venv.seed(7) == [7, 8, 9]
    first = venv.reset()
    venv.seed(7)
    assert np.array_equal(venv.reset(), first)
    single = unienv.make("cartpole", num_envs=1, seed=8)
    assert np.allclose(single.reset(seed=8)[0].numpy()[0], first[1])  # env i is seeded s + i
    venv.close()


def test_refuses_an_env_that_does_not_reset_itself():
    with pytest.raises(unienv.ArgumentError, match="env: expected autoreset_mode SAME_STEP"):
        Sb3VecEnv(unienv.make("cartpole", num_envs=2, autoreset_mode="disabled"))


def test_sb3_ppo_learns_on_the_adapter_and_logs_episode_returns():
    venv = Sb3VecEnv(unienv.make("cartpole", num_envs=16, seed=0))
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps == 4096
    assert len(model.ep_info_buffer) > 0  # what SB3 logs as rollout/ep_rew_mean
    assert all(ep["r"] == ep["l"] - 1 for ep in model.ep_info_buffer)  # +1 per upright step, 0 at the fall
    venv.close()


def test_sb3_vec_monitor_accepts_the_adapter():
    venv = VecMonitor(Sb3VecEnv(unienv.make("cartpole", num_envs=4, seed=0, max_episode_steps=3)))
    venv.reset()
    for _ in range(3):
        _, _, dones, infos = venv.step(np.zeros((4, 1), np.float32))
    assert dones.all() and all(info["episode"]["l"] == 3 for info in infos)
    venv.close()
