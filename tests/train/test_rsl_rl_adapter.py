"""The rsl_rl adapter's contract: TensorDict observation groups, time-outs, episode extras, self-reset."""

import subprocess
import sys

import pytest
import torch

import unienv

pytest.importorskip("rsl_rl")
from tensordict import TensorDict  # noqa: E402

from unienv.wrappers.rsl_rl import RslRlVecEnv, exportable_actor  # noqa: E402


def test_import_unienv_imports_no_rl_library():
    code = (
        "import sys, unienv, unienv.wrappers, unienv.training.rollout; "
        "print([m for m in ('rsl_rl', 'stable_baselines3', 'tensordict') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_observations_are_a_tensordict_with_a_policy_group():
    vec = RslRlVecEnv(unienv.make("cartpole", num_envs=6, seed=0))
    obs = vec.get_observations()
    assert isinstance(obs, TensorDict) and list(obs.keys()) == ["policy"]
    assert obs["policy"].shape == (6, 5) and obs["policy"].dtype == torch.float32
    assert (vec.num_envs, vec.num_actions, vec.max_episode_length) == (6, 1, 500)
    obs, rew, dones, extras = vec.step(torch.zeros(6, 1))
    assert isinstance(obs, TensorDict) and obs["policy"].shape == (6, 5)
    assert rew.shape == (6,) and rew.dtype == torch.float32
    assert dones.shape == (6,) and dones.dtype == torch.bool
    assert extras["time_outs"].shape == (6,) and not extras["time_outs"].any()
    assert torch.equal(vec.get_observations()["policy"], obs["policy"])
    vec.close()


def test_time_limit_is_a_time_out_and_the_env_resets_itself():
    vec = RslRlVecEnv(unienv.make("cartpole", num_envs=4, seed=0, max_episode_steps=5))
    for step in range(1, 6):
        _, _, dones, extras = vec.step(torch.zeros(4, 1))
        assert bool(dones.all()) == (step == 5)
    assert extras["time_outs"].all()
    episode = extras["episode"]
    assert torch.equal(episode["Episode/length"], torch.full((4,), 5.0))
    assert torch.equal(episode["Episode/return"], torch.full((4,), 5.0))  # +1 per upright step
    assert torch.equal(episode["Episode/time_out"], torch.ones(4))
    assert torch.equal(episode["Episode_Reward/alive"], torch.full((4,), 5.0))
    assert torch.equal(vec.episode_length_buf, torch.zeros(4, dtype=torch.int64))  # new episodes
    _, _, dones, extras = vec.step(torch.zeros(4, 1))
    assert not dones.any() and extras["episode"] == {}
    vec.close()


def test_a_terminal_state_is_done_but_not_a_time_out():
    # a pole limit of 1e-4 rad ends every episode at its first step
    vec = RslRlVecEnv(unienv.make("cartpole", num_envs=3, seed=0, task_options={"max_angle": 1e-4}))
    _, rew, dones, extras = vec.step(torch.zeros(3, 1))
    assert dones.all() and not extras["time_outs"].any()
    assert torch.equal(rew, torch.zeros(3)) and torch.equal(
        extras["episode"]["Episode/time_out"], torch.zeros(3)
    )
    vec.close()


def test_actions_are_clipped_to_the_action_space():
    env = unienv.make("cartpole", num_envs=2, seed=0)
    vec = RslRlVecEnv(env)
    vec.step(torch.tensor([[5.0], [-5.0]]))
    assert env.backend.get_state_views()["ctrl"].flatten().tolist() == [1.0, -1.0]
    vec.close()


def test_random_initial_episode_lengths_are_written_to_the_env():
    env = unienv.make("cartpole", num_envs=3, seed=0)
    vec = RslRlVecEnv(env)
    vec.episode_length_buf = torch.tensor([0, 10, 499])
    _, _, dones, extras = vec.step(torch.zeros(3, 1))
    assert dones.tolist() == [False, False, True] and extras["time_outs"].tolist() == [False, False, True]
    vec.close()


def test_refuses_an_env_that_does_not_reset_itself():
    with pytest.raises(unienv.ArgumentError, match="env: expected autoreset_mode SAME_STEP"):
        RslRlVecEnv(unienv.make("cartpole", num_envs=2, autoreset_mode="next_step"))


def test_rsl_rl_ppo_runs_and_logs_episode_extras(tmp_path):
    from rsl_rl.runners import OnPolicyRunner

    cfg = {
        "num_steps_per_env": 8,
        "save_interval": 100,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {"class_name": "PPO", "num_mini_batches": 2, "num_learning_epochs": 1},
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": [16],
            "obs_normalization": True,
            "distribution_cfg": {"class_name": "GaussianDistribution"},
        },
        "critic": {"class_name": "MLPModel", "hidden_dims": [16]},
    }
    vec = RslRlVecEnv(unienv.make("cartpole", num_envs=16, seed=0, max_episode_steps=10))
    runner = OnPolicyRunner(vec, cfg, log_dir=str(tmp_path), device=vec.device)
    runner.learn(2)
    assert len(runner.logger.rewbuffer) > 0 and max(runner.logger.lenbuffer) <= 10
    assert list(tmp_path.glob("events.out.tfevents.*")) and (tmp_path / "model_1.pt").exists()
    # the actor a policy file stores (plain layers) acts as rsl_rl's own deterministic export
    obs = 3 * torch.randn(64, 5)
    torch.testing.assert_close(
        exportable_actor(runner)(obs), runner.get_inference_policy(device="cpu").as_jit()(obs)
    )
    vec.close()
