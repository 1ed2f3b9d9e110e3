"""skrl's PPO learns on a unienv task through unienv.wrappers.skrl (torch in, torch out)."""

import pytest
import torch

import unienv
from unienv.errors import ArgumentError
from unienv.training.rollout import rollout

skrl = pytest.importorskip("skrl")  # the skrl extra; CI installs it

from skrl.agents.torch.ppo import PPO, PPO_CFG  # noqa: E402
from skrl.memories.torch import RandomMemory  # noqa: E402
from skrl.trainers.torch import SequentialTrainer  # noqa: E402
from skrl.utils.model_instantiators.torch import deterministic_model, gaussian_model  # noqa: E402

from unienv.wrappers.skrl import SkrlVecEnv  # noqa: E402

TASK, NUM_ENVS = "inverted_pendulum", 16


def mean_return(policy_model, seed: int) -> float:
    """Mean return of the policy's mean action over 16 fresh envs' first episodes (<= 150 steps)."""
    env = unienv.make(TASK, num_envs=16, seed=seed, max_episode_steps=150)

    def policy(obs):
        _, outputs = policy_model.act({"observations": obs.float()}, role="policy")
        return outputs["mean_actions"].clamp(-3.0, 3.0)

    with torch.no_grad():
        stats = rollout(env, policy, 150, seed=seed, progress=False)
    env.close()
    return sum(stats.returns[:16]) / 16


def test_skrl_ppo_improves_the_return(tmp_path, one_torch_thread):
    torch.manual_seed(0)
    env = SkrlVecEnv(unienv.make(TASK, num_envs=NUM_ENVS, seed=0, max_episode_steps=150), seed=0)
    assert env.num_envs == NUM_ENVS and env.observation_space.shape == (4,)
    net = [{"name": "net", "input": "OBSERVATIONS", "layers": [32, 32], "activations": "elu"}]
    spaces = {
        "observation_space": env.observation_space,
        "action_space": env.action_space,
        "device": env.device,
    }
    models = {
        "policy": gaussian_model(**spaces, network=net, output="ACTIONS"),
        "value": deterministic_model(**spaces, network=net, output="ONE"),
    }
    cfg = PPO_CFG(
        rollouts=32, learning_epochs=5, mini_batches=4, learning_rate=1e-3, time_limit_bootstrap=True
    )
    cfg.experiment.directory, cfg.experiment.write_interval, cfg.experiment.checkpoint_interval = (
        str(tmp_path),
        0,
        0,
    )
    memory = RandomMemory(memory_size=cfg.rollouts, num_envs=NUM_ENVS, device=env.device)
    agent = PPO(models=models, memory=memory, cfg=cfg, **spaces)
    before = mean_return(models["policy"], seed=100)
    trainer = SequentialTrainer(
        env=env,
        agents=agent,
        cfg={
            "timesteps": 32 * 40,
            "disable_progressbar": True,
            "headless": True,
            "close_environment_at_exit": False,
        },
    )
    trainer.train()
    after = mean_return(models["policy"], seed=100)
    env.close()
    assert after > max(3 * before, 60.0), (before, after)  # random: ~5-10 steps upright; max 150


def test_skrl_adapter_hands_tensors_through_and_refuses_next_step():
    env = SkrlVecEnv(unienv.make("cartpole", num_envs=3, seed=0))
    obs, _ = env.reset()
    again, _ = env.reset()  # skrl's trainers call reset() once; after that it is the current obs
    assert obs is again and obs.dtype == torch.float32 and obs.shape == (3, 5)
    obs, reward, terminated, truncated, info = env.step(torch.full((3, 1), 7.0))  # clipped to 1
    assert reward.shape == terminated.shape == truncated.shape == (3, 1) and "reward_terms" in info
    with pytest.raises(ArgumentError, match="SAME_STEP"):
        SkrlVecEnv(unienv.make("cartpole", autoreset_mode="next_step"))
