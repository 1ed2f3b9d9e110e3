"""SAC in one file, CleanRL-style, on unienv's torch VectorEnv: many envs, one replay buffer on the device.

    python examples/sac.py                                   # reacher (Reacher-v5) on the CPU, 20k env steps
    python examples/sac.py --task inverted_pendulum --num-envs 8 --updates-per-step 8
    python examples/sac.py --backend mjwarp --device cuda --num-envs 1024 --batch-size 4096 --total-steps 2000000

Soft actor-critic (Haarnoja et al. 2018, with the learned temperature of their second paper), fed
as FastTD3 and FastSAC feed it: every env step of the vector env adds num_envs transitions to one
replay buffer, a ring of torch tensors on the env's device, and is followed by --updates-per-step
gradient updates on minibatches drawn from it. Nothing leaves the device in the loop: the returns
of ended episodes are summed there and read once per progress line.

- Actor: a tanh-squashed Gaussian, rescaled to the action space's bounds; its log-probability
  carries the tanh's change of variables. Critics: two Q networks and their Polyak-averaged
  targets; the target is the smaller of the two, minus the entropy term.
- Time limits: the env resets itself (SAME_STEP autoreset), so the observation it returns after a
  done step is the next episode's first. The transition stores the episode's real last
  observation (info["final_obs"]) as next_obs, and only `terminated` stops the bootstrap: an
  episode cut by its time limit is not taken for a failure.
- The first --learning-starts env steps (all envs together) take uniform random actions.

At the end the deterministic policy (the squashed mean) and a uniform random policy are each
evaluated on --eval-envs fresh envs for one full episode, and the figures printed on one line:
mean returns and, for a task with a goal (`info["is_success"]`), the share of episodes that
ended in it.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.nn import functional as F

import unienv


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="reacher")
    p.add_argument("--backend", default="mujoco")
    p.add_argument("--device", default=None, help="default: the backend's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--total-steps", type=int, default=20_000, help="env steps in all (every env's)")
    p.add_argument("--max-seconds", type=float, default=None, help="stop training after this many seconds")
    p.add_argument("--save", default=None, help="write the trained actor's state_dict there (torch.save)")
    p.add_argument("--buffer-size", type=int, default=1_000_000, help="transitions the replay buffer keeps")
    p.add_argument("--learning-starts", type=int, default=2_000, help="env steps of random actions first")
    p.add_argument("--updates-per-step", type=int, default=4, help="gradient updates per vector env step")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=128, help="width of the two hidden layers")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--tau", type=float, default=0.005, help="Polyak step of the target critics")
    p.add_argument("--policy-lr", type=float, default=3e-4)
    p.add_argument("--q-lr", type=float, default=1e-3)
    p.add_argument(
        "--init-alpha", type=float, default=0.1, help="the entropy temperature's start (then learned)"
    )
    p.add_argument("--log-every", type=int, default=2_000, help="env steps between progress lines")
    p.add_argument("--eval-envs", type=int, default=16, help="0: no final evaluation")
    return p.parse_args(argv)


def mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_out)
    )


class Actor(nn.Module):
    """A tanh-squashed Gaussian policy, scaled to the action bounds [low, high]."""

    LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0

    def __init__(self, obs_dim: int, act_dim: int, hidden: int, low: torch.Tensor, high: torch.Tensor):
        super().__init__()
        self.net = mlp(obs_dim, 2 * act_dim, hidden)
        self.register_buffer("scale", (high - low) / 2)
        self.register_buffer("centre", (high + low) / 2)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(a sampled action, its log-probability) for each observation."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = self.LOG_STD_MIN + 0.5 * (self.LOG_STD_MAX - self.LOG_STD_MIN) * (torch.tanh(log_std) + 1)
        normal = torch.distributions.Normal(mean, log_std.exp())
        u = normal.rsample()
        squashed = torch.tanh(u)
        log_prob = normal.log_prob(u) - torch.log(self.scale * (1 - squashed.square()) + 1e-6)
        return self.centre + self.scale * squashed, log_prob.sum(-1)

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        mean, _ = self.net(obs).chunk(2, dim=-1)
        return self.centre + self.scale * torch.tanh(mean)


class ReplayBuffer:
    """A ring of transitions (obs, action, reward, next_obs, terminated) on one device."""

    def __init__(self, size: int, obs_dim: int, act_dim: int, device: torch.device):
        self.size, self.count, self.head = size, 0, 0
        self.obs = torch.zeros(size, obs_dim, device=device)
        self.next_obs = torch.zeros(size, obs_dim, device=device)
        self.actions = torch.zeros(size, act_dim, device=device)
        self.rewards = torch.zeros(size, device=device)
        self.terminated = torch.zeros(size, device=device)

    def add(self, obs, actions, rewards, next_obs, terminated) -> None:
        """Add a batch of transitions (one per env), overwriting the oldest when full."""
        rows = (self.head + torch.arange(len(obs), device=obs.device)) % self.size
        self.obs[rows], self.actions[rows], self.rewards[rows] = obs, actions, rewards
        self.next_obs[rows], self.terminated[rows] = next_obs, terminated
        self.head = (self.head + len(obs)) % self.size
        self.count = min(self.count + len(obs), self.size)

    def sample(self, n: int) -> tuple[torch.Tensor, ...]:
        i = torch.randint(self.count, (n,), device=self.obs.device)
        return self.obs[i], self.actions[i], self.rewards[i], self.next_obs[i], self.terminated[i]


def train(args: argparse.Namespace) -> dict:
    """Train, then evaluate; returns the figures printed at the end."""
    torch.manual_seed(args.seed)
    # one thread: more contend with the engine's; on 2 busy cores torch's default made a SAC step
    # 5-25x slower (examples/torch_threads.py, docs/libraries.md)
    torch.set_num_threads(1)
    env = unienv.make(
        args.task, backend=args.backend, num_envs=args.num_envs, device=args.device, seed=args.seed
    )
    device, n = env.device, args.num_envs
    obs_dim, act_dim = env.single_observation_space.shape[0], env.single_action_space.shape[0]
    low = torch.as_tensor(env.single_action_space.low, dtype=torch.float32, device=device)
    high = torch.as_tensor(env.single_action_space.high, dtype=torch.float32, device=device)

    actor = Actor(obs_dim, act_dim, args.hidden, low, high).to(device)
    critics = nn.ModuleList([mlp(obs_dim + act_dim, 1, args.hidden) for _ in range(2)]).to(device)
    targets = nn.ModuleList([mlp(obs_dim + act_dim, 1, args.hidden) for _ in range(2)]).to(device)
    targets.load_state_dict(critics.state_dict())
    log_alpha = torch.tensor(args.init_alpha, device=device).log().requires_grad_()
    target_entropy = -float(act_dim)
    q_optimizer = torch.optim.Adam(critics.parameters(), lr=args.q_lr)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=args.policy_lr)
    alpha_optimizer = torch.optim.Adam([log_alpha], lr=args.q_lr)
    buffer = ReplayBuffer(args.buffer_size, obs_dim, act_dim, device)

    def q_values(nets, obs, actions) -> torch.Tensor:
        x = torch.cat((obs, actions), dim=-1)
        return torch.stack([net(x).squeeze(-1) for net in nets])  # (2, batch)

    def update() -> None:
        obs, actions, rewards, next_obs, terminated = buffer.sample(args.batch_size)
        alpha = log_alpha.exp().detach()
        with torch.no_grad():
            next_actions, next_log_prob = actor(next_obs)
            next_q = q_values(targets, next_obs, next_actions).min(0).values - alpha * next_log_prob
            target = rewards + args.gamma * (1.0 - terminated) * next_q
        q_loss = F.mse_loss(q_values(critics, obs, actions), target.expand(2, -1))
        q_optimizer.zero_grad()
        q_loss.backward()
        q_optimizer.step()

        new_actions, log_prob = actor(obs)
        actor_loss = (alpha * log_prob - q_values(critics, obs, new_actions).min(0).values).mean()
        actor_optimizer.zero_grad()
        actor_loss.backward()
        actor_optimizer.step()
        alpha_loss = -(log_alpha * (log_prob.detach() + target_entropy)).mean()
        alpha_optimizer.zero_grad()
        alpha_loss.backward()
        alpha_optimizer.step()
        with torch.no_grad():  # Polyak averaging of the target critics
            for p, p_target in zip(critics.parameters(), targets.parameters(), strict=True):
                p_target.lerp_(p, args.tau)

    obs, _ = env.reset(seed=args.seed)
    obs = obs.float()
    ended_return = torch.zeros((), dtype=torch.float64, device=device)  # since the last progress line
    ended_count = torch.zeros((), dtype=torch.int64, device=device)
    vector_steps = max(1, args.total_steps // n)
    start, logged, mean = time.perf_counter(), 0, float("nan")
    for step in range(1, vector_steps + 1):
        if args.max_seconds is not None and time.perf_counter() - start > args.max_seconds:
            vector_steps = step - 1
            break
        if step * n <= args.learning_starts:
            actions = low + (high - low) * torch.rand(n, act_dim, device=device)
        else:
            with torch.no_grad():
                actions, _ = actor(obs)
        next_obs, reward, terminated, truncated, info = env.step(actions)
        next_obs = next_obs.float()
        real_next = next_obs
        if "final_obs" in info:  # the ended episodes' last observations, not their successors' first
            real_next = torch.where(info["_final_obs"][:, None], info["final_obs"].float(), next_obs)
            stats, ended = info["final_info"]["episode_stats"], info["final_info"]["_episode_stats"]
            ended_return += torch.where(ended, stats["r"], 0.0).sum()
            ended_count += ended.sum()
        buffer.add(obs, actions, reward.float(), real_next, terminated.float())
        obs = next_obs
        if step * n > args.learning_starts:
            for _ in range(args.updates_per_step):
                update()
        if step * n - logged >= args.log_every or step == vector_steps:
            logged = step * n
            count = int(ended_count)  # the loop's one read of the device, once per line
            mean = float(ended_return) / count if count else float("nan")
            ended_return.zero_()
            ended_count.zero_()
            episodes = f"return ({count} episodes) {mean:.1f}" if count else "no episode finished"
            print(
                f"steps {step * n}  {episodes}  "
                f"alpha {float(log_alpha.detach().exp()):.3f}  {time.perf_counter() - start:.0f} s",
                flush=True,
            )
    seconds = time.perf_counter() - start
    result = {"env_steps": vector_steps * n, "seconds": seconds, "train_return": mean}
    if args.save:
        torch.save(actor.state_dict(), args.save)
    if args.eval_envs:
        for name, policy in (
            ("eval", actor.deterministic),
            ("random", lambda o: low + (high - low) * torch.rand(len(o), act_dim, device=o.device)),
        ):
            returns, success = evaluate(args, policy)
            result[f"{name}_return"] = returns
            if success is not None:
                result[f"{name}_success"] = success
    print(", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
    env.close()
    return result


def evaluate(args: argparse.Namespace, policy) -> tuple[float, float | None]:
    """Mean return of policy over one full episode of each of --eval-envs fresh envs, and the
    share of those episodes that ended in the task's goal (None: a task without one)."""
    env = unienv.make(args.task, backend=args.backend, num_envs=args.eval_envs, device=args.device)
    obs, _ = env.reset(seed=args.seed + 10_000)
    returns = torch.full((args.eval_envs,), float("nan"), dtype=torch.float64)
    success = torch.zeros(args.eval_envs, dtype=torch.bool)
    goal = False
    for _ in range(env.max_episode_steps):
        with torch.no_grad():
            obs, _, _, _, info = env.step(policy(obs.float()))
        if "final_info" in info:
            ended = info["final_info"]["_episode_stats"].cpu() & returns.isnan()
            stats = info["final_info"]["episode_stats"]
            returns[ended] = stats["r"].cpu().double()[ended]
            if "is_success" in stats:
                goal, success[ended] = True, stats["is_success"].cpu()[ended]
    env.close()
    # every env's first episode ends within max_episode_steps
    return float(returns.mean()), float(success.double().mean()) if goal else None


if __name__ == "__main__":
    train(parse_args())
