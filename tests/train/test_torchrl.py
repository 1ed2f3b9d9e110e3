"""TorchRL's PPO learns on a unienv task wrapped by TorchRL's own GymWrapper (no adapter)."""

import pytest
import torch
from torch import nn

import unienv
from unienv.training.rollout import rollout

pytest.importorskip("torchrl")  # the torchrl extra; CI installs it

from tensordict import TensorDict  # noqa: E402
from tensordict.nn import NormalParamExtractor, TensorDictModule  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402
from torchrl.envs import DoubleToFloat, GymWrapper, TransformedEnv  # noqa: E402
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type  # noqa: E402
from torchrl.modules import ProbabilisticActor, TanhNormal, ValueOperator  # noqa: E402
from torchrl.objectives import ClipPPOLoss  # noqa: E402
from torchrl.objectives.value import GAE  # noqa: E402

TASK, NUM_ENVS, EPISODE = "inverted_pendulum", 16, 150


def torchrl_env(seed: int):
    """The README's wrapping: DISABLED autoreset (TorchRL resets ended envs itself, by mask),
    float64 observations and rewards cast to float32."""
    env = unienv.make(
        TASK, num_envs=NUM_ENVS, seed=seed, autoreset_mode="disabled", max_episode_steps=EPISODE
    )
    wrapped = GymWrapper(env)
    wrapped.reward_spec = wrapped.reward_spec.to(env.dtype)  # rewards come in the backend's dtype
    return TransformedEnv(wrapped, DoubleToFloat(in_keys=["observation", "reward"]))


def mean_return(actor, seed: int) -> float:
    """Mean return of the deterministic policy over 16 fresh envs' first episodes."""
    env = unienv.make(TASK, num_envs=16, seed=seed, max_episode_steps=EPISODE)

    def policy(obs):
        return actor(TensorDict({"observation": obs.float()}, batch_size=[16]))["action"]

    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        stats = rollout(env, policy, EPISODE, seed=seed, progress=False)
    env.close()
    return sum(stats.returns[:16]) / 16


def test_torchrl_gym_wrapper_takes_the_env_as_is():
    env = torchrl_env(seed=0)
    assert env.batch_size == (NUM_ENVS,)
    check_env_specs(env)  # TorchRL's own check of specs against a real rollout
    data = env.rollout(2 * EPISODE, break_when_any_done=False)  # episodes end and restart
    ended = data["next", "terminated"].sum(1).squeeze(-1)  # random actions: falls in ~10 steps
    assert (ended >= 5).all()  # so TorchRL reset every env by mask, again and again
    env.close()


def test_torchrl_ppo_improves_the_return(one_torch_thread):
    torch.manual_seed(0)
    env = torchrl_env(seed=0)
    obs_dim, act_dim = 4, 1
    actor_net = nn.Sequential(
        nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, 2 * act_dim), NormalParamExtractor()
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=["observation"], out_keys=["loc", "scale"]),
        spec=env.action_spec,
        in_keys=["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -3.0, "high": 3.0},
        return_log_prob=True,
    )
    critic = ValueOperator(
        nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh(), nn.Linear(32, 1)), in_keys=["observation"]
    )
    before = mean_return(actor, seed=100)
    collector = Collector(
        env,
        actor,
        frames_per_batch=NUM_ENVS * 32,
        total_frames=NUM_ENVS * 32 * 30,
        auto_register_policy_transforms=False,
    )
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
    loss_module = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.0)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=1e-3)
    for batch in collector:
        for _ in range(5):
            advantage(batch)
            flat = batch.reshape(-1)
            for idx in torch.randperm(flat.numel()).split(128):
                losses = loss_module(flat[idx])
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), 0.5)
                optimizer.step()
    collector.shutdown()
    after = mean_return(actor, seed=100)
    assert after > max(3 * before, 60.0), (before, after)  # random: ~5-10 steps upright; max 150
