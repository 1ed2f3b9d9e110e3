"""Time a SAC step of a third-party loop with torch's default threads and with one, interleaved.

    python examples/torch_threads.py                  # hopper, 8 rounds of 20 steps per setting
    python examples/torch_threads.py --rounds 2 --steps 5

A step is what CleanRL's and Stable-Baselines3's SAC do per env step: one step of a one-env
unienv env (`gymnasium.make`, NumPy) and one gradient update of CleanRL's networks (256-256 MLPs,
an actor and two critics, batch 256). Rounds alternate between `torch.set_num_threads(default)`
and `torch.set_num_threads(1)` in one process, so both see the same load on the machine; the
script prints the median milliseconds per step of each, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import gymnasium
import torch
from torch import nn
from torch.nn import functional as F

import unienv  # noqa: F401  (registers unienv/<Task>-v0)


def mlp(n_in: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, n_out)
    )


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env-id", default="unienv/Hopper-v0")
    p.add_argument("--rounds", type=int, default=8, help="rounds per setting, alternating")
    p.add_argument("--steps", type=int, default=20, help="env steps (each with one update) per round")
    args = p.parse_args(argv)
    default = torch.get_num_threads()
    env = gymnasium.make(args.env_id)
    obs_dim, act_dim = env.observation_space.shape[0], env.action_space.shape[0]
    actor, critics = mlp(obs_dim, 2 * act_dim), nn.ModuleList([mlp(obs_dim + act_dim, 1) for _ in range(2)])
    optimizer = torch.optim.Adam([*actor.parameters(), *critics.parameters()], lr=3e-4)
    obs_batch, act_batch = torch.randn(256, obs_dim), torch.rand(256, act_dim) * 2 - 1

    def step() -> None:
        env.step(env.action_space.sample())
        mean, log_std = actor(obs_batch).chunk(2, -1)
        actions = torch.tanh(mean + log_std.clamp(-5, 2).exp() * torch.randn_like(mean))
        q = torch.stack([c(torch.cat((obs_batch, a), -1)) for c in critics for a in (act_batch, actions)])
        loss = F.mse_loss(q, torch.zeros_like(q))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    env.reset(seed=0)
    times = {default: [], 1: []}
    for _ in range(args.rounds):
        for threads in times:
            torch.set_num_threads(threads)
            step()  # the first step after a change resizes torch's pool: not timed
            for _ in range(args.steps):
                start = time.perf_counter()
                step()
                times[threads].append(time.perf_counter() - start)
    env.close()
    torch.set_num_threads(default)
    ms = {threads: 1000 * statistics.median(t) for threads, t in times.items()}
    ratio = ms[default] / ms[1]
    print(
        f"{args.env_id}: SAC step (env step + 256-256 update) {ms[default]:.1f} ms with torch's default "
        f"{default} threads, {ms[1]:.1f} ms with 1 thread ({ratio:.1f}x); load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    return {"default_threads": default, "ms": ms, "ratio": ratio}


if __name__ == "__main__":
    main()
