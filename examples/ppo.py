"""PPO in one file, CleanRL-style, on unienv's torch VectorEnv: no NumPy round trip, CPU or CUDA.

    python examples/ppo.py                                   # inverted_pendulum on the CPU
    python examples/ppo.py --task cartpole --total-steps 200000 --gamma 0.995
    python examples/ppo.py --backend mjwarp --device cuda --num-envs 1024   # (not yet run on a GPU)

Everything stays a torch tensor on the env's device: observations, actions, rewards, the rollout
buffer and the networks. The env resets itself (SAME_STEP autoreset); where an episode ends by its
time limit the value of its last observation (info["final_obs"]) is added to the reward, so that
truncation is not taken for failure. Observations and rewards are normalised on the device
(unienv.wrappers.normalize); episode returns are reported in the env's own units
(info["final_info"]["episode_stats"]). At the end the deterministic policy (the Gaussian's mean) is
evaluated on fresh envs for one full episode each and the mean return printed.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

import unienv
from unienv.wrappers.normalize import NormalizeObservation, NormalizeReward


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="inverted_pendulum")
    p.add_argument("--backend", default="mujoco")
    p.add_argument("--device", default=None, help="default: the backend's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=int, default=32)
    p.add_argument("--num-steps", type=int, default=64, help="env steps per env per rollout")
    p.add_argument("--total-steps", type=int, default=100_000, help="env steps in all")
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--update-epochs", type=int, default=10)
    p.add_argument("--num-minibatches", type=int, default=32)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--eval-envs", type=int, default=16, help="0: no final evaluation")
    return p.parse_args(argv)


def layer(n_in: int, n_out: int, std: float = 2**0.5) -> nn.Linear:
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.zeros_(linear.bias)
    return linear


class Agent(nn.Module):
    """A tanh MLP critic and a Gaussian actor with a state-independent log std."""

    def __init__(self, obs_dim: int, act_dim: int):
        super().__init__()
        self.critic = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, std=1.0)
        )
        self.actor_mean = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, act_dim, std=0.01)
        )
        self.actor_logstd = nn.Parameter(torch.zeros(act_dim))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None):
        """(action, log prob, entropy, value); samples the action unless given."""
        mean = self.actor_mean(obs)
        dist = torch.distributions.Normal(mean, self.actor_logstd.exp().expand_as(mean))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(-1), dist.entropy().sum(-1), self.value(obs)


def train(args: argparse.Namespace) -> dict:
    """Train, then evaluate; returns the figures printed at the end."""
    torch.manual_seed(args.seed)
    # one thread: more contend with the engine's; on 2 busy cores torch's default made a SAC step
    # 5-25x slower (examples/torch_threads.py, docs/libraries.md)
    torch.set_num_threads(1)
    base = unienv.make(
        args.task, backend=args.backend, num_envs=args.num_envs, device=args.device, seed=args.seed
    )
    obs_norm = NormalizeObservation(base)
    env = NormalizeReward(obs_norm, gamma=args.gamma)
    device = base.device
    n, obs_dim = args.num_envs, env.single_observation_space.shape[0]
    act_dim = env.single_action_space.shape[0]
    low = torch.as_tensor(env.single_action_space.low, device=device)
    high = torch.as_tensor(env.single_action_space.high, device=device)
    agent = Agent(obs_dim, act_dim).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    T = args.num_steps
    obs_buf = torch.zeros(T, n, obs_dim, device=device)
    act_buf = torch.zeros(T, n, act_dim, device=device)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(T, n, device=device) for _ in range(4))
    iterations = max(1, args.total_steps // (n * T))
    batch = n * T
    minibatch = max(1, batch // args.num_minibatches)

    obs, _ = env.reset(seed=args.seed)
    obs = obs.float()
    done = torch.zeros(n, device=device)
    returns: list[float] = []  # finished episodes' returns, env units
    start = time.perf_counter()
    for iteration in range(1, iterations + 1):
        for param_group in optimizer.param_groups:  # linear learning-rate annealing
            param_group["lr"] = args.learning_rate * (1.0 - (iteration - 1) / iterations)
        for t in range(T):
            obs_buf[t], done_buf[t] = obs, done
            with torch.no_grad():
                action, logp, _, value = agent.act(obs)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            obs, reward, terminated, truncated, info = env.step(torch.clamp(action, low, high))
            obs, reward = obs.float(), reward.float()
            if "final_obs" in info:
                time_out = info["_final_obs"] & truncated & ~terminated
                with torch.no_grad():  # bootstrap where the time limit, not a failure, ended it
                    reward = reward + args.gamma * agent.value(info["final_obs"].float()) * time_out
                stats, ended = info["final_info"]["episode_stats"], info["final_info"]["_episode_stats"]
                returns += stats["r"][ended].tolist()
            rew_buf[t], done = reward, (terminated | truncated).float()

        with torch.no_grad():  # generalised advantage estimation
            next_value = agent.value(obs)
            advantages = torch.zeros_like(rew_buf)
            gae = torch.zeros(n, device=device)
            for t in reversed(range(T)):
                not_done = 1.0 - (done if t == T - 1 else done_buf[t + 1])
                following = next_value if t == T - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * following * not_done - val_buf[t]
                gae = delta + args.gamma * args.gae_lambda * not_done * gae
                advantages[t] = gae
            targets = advantages + val_buf

        b_obs, b_act = obs_buf.reshape(batch, obs_dim), act_buf.reshape(batch, act_dim)
        b_logp, b_adv = logp_buf.reshape(batch), advantages.reshape(batch)
        b_targets, b_val = targets.reshape(batch), val_buf.reshape(batch)
        for _ in range(args.update_epochs):
            for idx in torch.randperm(batch, device=device).split(minibatch):
                _, logp, entropy, value = agent.act(b_obs[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                policy_loss = torch.max(
                    -adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)
                ).mean()
                value_clipped = b_val[idx] + (value - b_val[idx]).clamp(-args.clip_coef, args.clip_coef)
                value_loss = (
                    0.5
                    * torch.max(
                        (value - b_targets[idx]).square(), (value_clipped - b_targets[idx]).square()
                    ).mean()
                )
                loss = policy_loss - args.ent_coef * entropy.mean() + args.vf_coef * value_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        recent = returns[-20:]
        mean = sum(recent) / len(recent) if recent else float("nan")
        episodes = f"return (last {len(recent)} episodes) {mean:.1f}" if recent else "no episode finished yet"
        print(
            f"iter {iteration}/{iterations}  steps {iteration * batch}  {episodes}  "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )
    seconds = time.perf_counter() - start
    result = {"env_steps": iterations * batch, "seconds": seconds, "train_return": mean}
    if args.eval_envs:
        result["eval_return"] = evaluate(args, agent, obs_norm.obs_rms)
    print(", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
    env.close()
    return result


def evaluate(args: argparse.Namespace, agent: Agent, obs_rms) -> float:
    """Mean return of the deterministic policy over one full episode of each of --eval-envs fresh envs."""
    env = NormalizeObservation(
        unienv.make(args.task, backend=args.backend, num_envs=args.eval_envs, device=args.device)
    )
    env.obs_rms.load_state_dict(obs_rms.state_dict())
    env.update_running_mean = False
    low = torch.as_tensor(env.single_action_space.low, device=env.unwrapped.device)
    high = torch.as_tensor(env.single_action_space.high, device=env.unwrapped.device)
    obs, _ = env.reset(seed=args.seed + 10_000)
    returns = torch.full((args.eval_envs,), float("nan"), dtype=torch.float64)
    for _ in range(env.unwrapped.max_episode_steps):
        with torch.no_grad():
            action = torch.clamp(agent.actor_mean(obs.float()), low, high)
        obs, _, _, _, info = env.step(action)
        if "final_info" in info:
            ended = (info["final_info"]["_episode_stats"] & returns.isnan().to(obs.device)).cpu()
            returns[ended] = info["final_info"]["episode_stats"]["r"].cpu().double()[ended]
    env.close()
    return float(returns.mean())  # every env's first episode ends within max_episode_steps


if __name__ == "__main__":
    train(parse_args())
