"""What a CleanRL-style loop gets from the Gymnasium VectorEnv, and the torch normalisers."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import unienv
from unienv.wrappers.normalize import NormalizeObservation, NormalizeReward, RunningMeanStd


def test_cleanrl_loop_reads_final_obs_and_episode_stats_from_final_info():
    env = unienv.make("cartpole", num_envs=4, seed=0, max_episode_steps=3)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    obs, _ = env.reset()
    for _ in range(3):
        obs, _, terminated, truncated, infos = env.step(torch.zeros(4, 1))
    done = terminated | truncated
    assert done.all() and infos["_final_obs"].all()
    assert not torch.equal(infos["final_obs"], obs)  # the terminal obs; obs starts the next episode
    assert torch.equal(infos["final_info"]["episode_stats"]["l"], torch.full((4,), 3))
    assert infos["final_info"]["_episode_stats"].all()


def test_gymnasium_vector_normalize_observation_refuses_same_step():
    env = unienv.make("cartpole", num_envs=2)
    with pytest.raises(ValueError, match="autoreset_mode"):
        gym.wrappers.vector.NormalizeObservation(env)


def test_running_mean_std_matches_numpy_over_batches():
    rms = RunningMeanStd((3,))
    batches = [torch.randn(n, 3, generator=torch.Generator().manual_seed(n)) * 2 + 1 for n in (5, 17, 1, 40)]
    for b in batches:
        rms.update(b)
    every = torch.cat(batches).double()
    assert torch.allclose(rms.mean, every.mean(0), atol=1e-4)
    assert torch.allclose(rms.var, every.var(0, unbiased=False), atol=1e-3)


def test_normalize_observation_whitens_obs_and_final_obs_alike():
    env = NormalizeObservation(unienv.make("cartpole", num_envs=32, seed=0, max_episode_steps=20))
    twin = unienv.make("cartpole", num_envs=32, seed=0, max_episode_steps=20)  # the same, unnormalised
    obs, _ = env.reset()
    twin.reset()
    seen, finals = [obs], 0
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        action = torch.rand(32, 1, generator=generator) * 2 - 1
        obs, _, _, _, info = env.step(action)
        raw, _, _, _, raw_info = twin.step(action)
        mean, scale = env.obs_rms.mean, torch.sqrt(env.obs_rms.var + env.epsilon)
        assert torch.allclose(obs, ((raw - mean) / scale).float())
        if "final_obs" in info:
            finals += 1
            done = info["_final_obs"]
            expected = ((raw_info["final_obs"] - mean) / scale).float()
            assert torch.allclose(info["final_obs"][done], expected[done])
        seen.append(obs)
    assert finals >= 10
    late = torch.cat(seen[100:])
    assert late.mean(0).abs().max() < 0.3 and (late.std(0) - 1).abs().max() < 0.3
    env.update_running_mean = False
    mean = env.obs_rms.mean.clone()
    env.step(torch.zeros(32, 1))
    assert torch.equal(env.obs_rms.mean, mean)  # frozen for evaluation


def test_normalize_reward_scales_by_the_std_of_the_discounted_return():
    # the reference: baselines' / SB3's VecNormalize rule with Gymnasium's NumPy RunningMeanStd
    env = NormalizeReward(unienv.make("cartpole", num_envs=8, seed=0, max_episode_steps=30), gamma=0.9)
    raw_env = unienv.make("cartpole", num_envs=8, seed=0, max_episode_steps=30)
    env.reset(seed=0)
    raw_env.reset(seed=0)
    returns, rms, terminations = np.zeros(8), gym.wrappers.utils.RunningMeanStd(shape=()), 0
    generator = torch.Generator().manual_seed(1)
    for _ in range(120):
        action = torch.rand(8, 1, generator=generator) * 2 - 1
        scaled, (_, reward, terminated, truncated, _) = env.step(action)[1], raw_env.step(action)
        returns = returns * 0.9 + reward.numpy()
        rms.update(returns)
        np.testing.assert_allclose(scaled.numpy(), reward.numpy() / np.sqrt(rms.var + 1e-8), rtol=1e-6)
        returns[(terminated | truncated).numpy()] = 0.0
        terminations += int(terminated.sum())
    assert scaled.dtype == torch.float64 and terminations > 0


def test_normalisers_refuse_bad_arguments():
    env = unienv.make("cartpole", num_envs=2)
    with pytest.raises(unienv.ArgumentError, match="gamma"):
        NormalizeReward(env, gamma=1.5)
    with pytest.raises(unienv.ArgumentError, match="epsilon"):
        NormalizeObservation(env, epsilon=0)
