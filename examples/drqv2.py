"""DrQ-v2 in one file, CleanRL-style: DDPG from pixels with random shifts, on unienv's pixel envs.

    python examples/drqv2.py --run-dir runs/cartpole --eval-every 2000
        # dmc_cartpole_swingup from 48x48 pixels on one CPU core: above 500 in about 20 minutes
    python examples/drqv2.py --task dmc_walker_walk --action-repeat 2 --std-steps 50000 \
        --buffer-size 100000 --eval-every 5000 --run-dir runs/walker
        # dmc_walker_walk, the same on one core: above 300 in about 26 minutes
    python examples/drqv2.py --task dmc_walker_walk --size 84 --action-repeat 2 --total-steps 500000 \\
        --backend mjwarp --device cuda --num-envs 16 --batch-size 256 --hidden 1024 --look scene
        # (not yet run on a GPU)

DrQ-v2 (Yarats et al. 2021) learns a deterministic policy and two Q functions on features of a
convolutional encoder, from a stack of the last --frame-stack RGB frames. What makes it work from
pixels, all of it here:
- Augmentation: every image of a minibatch is shifted by a random whole number of pixels (up to
  size/21, 4 at 84x84) after padding its border by replication; the encoder learns from the
  critic's loss only, on the shifted images.
- Returns over --n-step steps: the target is r_t + g r_t+1 + g^2 r_t+2 + g^3 min Q'(o_t+3, a'),
  cut where an episode ends, with a clipped Gaussian on the target action a' (TD3's smoothing).
- Exploration: the action is the policy's plus a Gaussian whose std falls linearly from
  --std-start to --std-end over the first --std-steps env steps; the first --learning-starts take
  uniform random actions.
- One addition to DrQ-v2: the actor's loss also pays --pre-tanh-penalty times its mean squared
  pre-tanh output (see actor_loss). Without it, on dmc_walker_walk the actor's tanh sat at its
  bound for every image within 500 updates, where no gradient brings it back.
- Replay buffer: a ring of the env's own uint8 observations on the env's device, (steps, num_envs,
  3 * frame_stack, size, size), converted to float only for the minibatch. The env resets an
  ended episode on the step after it (NEXT_STEP autoreset), so the slot after an episode's last
  step holds its real last observation and n-step returns read consecutive slots of one env.

The defaults fit a CPU (small images, the "learning" camera look, a small encoder, one network
thread, one update of batch 64 per env step); DrQ-v2's own settings (84x84, action repeat 2,
batch 256, 1024 hidden units, and --look scene for dm_control's images) are the flags above. Its
learning rate, 1e-4, is DrQ-v2's: at 5e-4 (before the penalty) the actor's tanh saturated (the same
+1 for every image) within the first thousand updates and never came back. At the end the policy
(without noise) and a uniform random policy are each run on --eval-envs fresh envs for one full
episode and the figures printed on one line.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import time

import torch
from gymnasium.vector import AutoresetMode
from torch import nn
from torch.nn import functional as F

import unienv
from unienv.utils.files import write_json, written


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="dmc_cartpole_swingup")
    p.add_argument("--backend", default="mujoco")
    p.add_argument("--device", default=None, help="default: the backend's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--size", type=int, default=48, help="image height and width (DrQ-v2: 84)")
    p.add_argument("--frame-stack", type=int, default=3)
    p.add_argument(
        "--look",
        default="learning",
        help='camera look: "learning" (no shadows, reflections or multisampling: a frame 15-30x cheaper '
        'on a CPU) or "scene" (dm_control\'s images, which DrQ-v2 learned from)',
    )
    p.add_argument("--action-repeat", type=int, default=8, help="physics steps per action (DrQ-v2: 2)")
    p.add_argument("--total-steps", type=int, default=40_000, help="env steps in all (every env's)")
    p.add_argument("--buffer-size", type=int, default=40_000, help="transitions the replay buffer keeps")
    p.add_argument("--learning-starts", type=int, default=1_000, help="env steps of random actions first")
    p.add_argument("--updates-per-step", type=int, default=4, help="gradient updates per vector env step")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--channels", type=int, default=32, help="of each conv layer")
    p.add_argument("--feature-dim", type=int, default=50, help="the trunk's output")
    p.add_argument("--hidden", type=int, default=256, help="width of the actor's and critics' MLPs")
    p.add_argument("--lr", type=float, default=1e-4, help="DrQ-v2's; 5e-4 saturated the actor here")
    p.add_argument(
        "--pre-tanh-penalty",
        type=float,
        default=1e-3,
        help="weight of the actor's mean squared pre-tanh output in its loss (SAC's original code: 5e-4)",
    )
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--n-step", type=int, default=3)
    p.add_argument("--tau", type=float, default=0.01, help="Polyak step of the target critics")
    p.add_argument("--std-start", type=float, default=1.0)
    p.add_argument("--std-end", type=float, default=0.1)
    p.add_argument("--std-steps", type=int, default=12_000, help="env steps over which the std falls")
    p.add_argument("--std-clip", type=float, default=0.3, help="of the noise on target actions")
    p.add_argument("--log-every", type=int, default=500, help="env steps between progress lines")
    p.add_argument("--eval-envs", type=int, default=8, help="0: no evaluation")
    p.add_argument("--eval-every", type=int, default=0, help="env steps between evaluations (0: at the end)")
    p.add_argument("--run-dir", help="where metrics.json and checkpoint.pt go (default: write nothing)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir, same options")
    p.add_argument("--max-seconds", type=float, help="stop after this much wall time, resumes included")
    p.add_argument("--checkpoint-minutes", type=float, default=10.0, help="between checkpoints")
    args = p.parse_args(argv)
    if args.resume and not args.run_dir:
        p.error("--resume: expected --run-dir, the run to continue")
    for name in ("total_steps", "num_envs", "batch_size", "log_every", "eval_every", "eval_envs"):
        if getattr(args, name) < (0 if name in ("eval_every", "eval_envs") else 1):
            p.error(f"--{name.replace('_', '-')}: expected a positive count, got {getattr(args, name)}")
    return args


RUN_OPTIONS = (
    "resume",
    "max_seconds",
    "checkpoint_minutes",
    "log_every",
    "eval_every",
    "eval_envs",
    "run_dir",
)
"""Options a resumed run may change: when and where it stops, logs, evaluates and saves."""


def make_env(args: argparse.Namespace, num_envs: int, **kwargs):
    return unienv.make(
        args.task,
        backend=args.backend,
        num_envs=num_envs,
        device=args.device,
        obs="pixels",
        pixels={"width": args.size, "height": args.size, "frame_stack": args.frame_stack, "look": args.look},
        action_repeat=args.action_repeat,
        **kwargs,
    )


def random_shift(images: torch.Tensor, pad: int) -> torch.Tensor:
    """Each image (B, C, H, W) shifted by its own random (dy, dx) in [-pad, pad], edges replicated."""
    b, _, h, w = images.shape
    padded = F.pad(images, (pad, pad, pad, pad), mode="replicate")
    dy, dx = torch.randint(0, 2 * pad + 1, (2, b, 1), device=images.device)
    rows = (torch.arange(h, device=images.device) + dy)[:, :, None]  # (B, H, 1)
    cols = (torch.arange(w, device=images.device) + dx)[:, None, :]  # (B, 1, W)
    return padded[torch.arange(b, device=images.device)[:, None, None], :, rows, cols].permute(0, 3, 1, 2)


class Encoder(nn.Module):
    """Convolutions over the stacked frames, scaled from uint8 to [-0.5, 0.5]; a flat feature vector."""

    def __init__(self, in_channels: int, size: int, channels: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, stride=2), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=1), nn.ReLU(),
            nn.Flatten(),
        )  # fmt: skip
        self.repr_dim = self.net(torch.zeros(1, in_channels, size, size)).shape[1]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images / 255.0 - 0.5)


def trunk(repr_dim: int, feature_dim: int) -> nn.Sequential:
    """The encoder's features down to feature_dim, layer-normalised and squashed (DrQ-v2's trunk)."""
    return nn.Sequential(nn.Linear(repr_dim, feature_dim), nn.LayerNorm(feature_dim), nn.Tanh())


def mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_out)
    )


class Actor(nn.Module):
    """A deterministic policy in [-1, 1] on the encoder's (detached) features."""

    def __init__(self, repr_dim: int, act_dim: int, feature_dim: int, hidden: int):
        super().__init__()
        self.trunk, self.policy = trunk(repr_dim, feature_dim), mlp(feature_dim, act_dim, hidden)

    def pre_tanh(self, features: torch.Tensor) -> torch.Tensor:
        return self.policy(self.trunk(features))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.pre_tanh(features))


class Critic(nn.Module):
    """Two Q functions on one trunk: (2, batch)."""

    def __init__(self, repr_dim: int, act_dim: int, feature_dim: int, hidden: int):
        super().__init__()
        self.trunk = trunk(repr_dim, feature_dim)
        self.qs = nn.ModuleList([mlp(feature_dim + act_dim, 1, hidden) for _ in range(2)])

    def forward(self, features: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        x = torch.cat((self.trunk(features), actions), dim=-1)
        return torch.stack([q(x).squeeze(-1) for q in self.qs])


def noisy(actions: torch.Tensor, std: float, clip: float | None = None) -> torch.Tensor:
    """actions plus a Gaussian of std (clipped to +-clip where given), kept in [-1, 1].

    The bound is applied straight through (DrQ-v2's truncated normal): the gradient reaches a
    policy whose action sits at the bound, which a plain clamp would cut off and leave stuck there.
    """
    noise = std * torch.randn_like(actions)
    if clip is not None:
        noise = noise.clamp(-clip, clip)
    x = actions + noise
    return x + (x.clamp(-1.0, 1.0) - x).detach()


def actor_loss(
    actor: Actor, critic: Critic, features, std: float, clip: float, penalty: float
) -> torch.Tensor:
    """-min Q of the actor's noisy actions, plus penalty times its mean squared pre-tanh output.

    With Adam, an actor follows even a tiny gradient that points the same way for every image (a
    young critic's) and its tanh runs to the bound, where its gradient vanishes for good. The
    penalty holds the pre-tanh output where tanh still passes a gradient until the critic's pull
    outweighs it (SAC's original code penalised its Gaussian's mean the same way).
    """
    pre_tanh = actor.pre_tanh(features)
    q = critic(features, noisy(torch.tanh(pre_tanh), std, clip)).min(0).values
    return -q.mean() + penalty * pre_tanh.square().mean()


class ReplayBuffer:
    """A ring of env steps (steps, num_envs, ...) on one device; samples n-step transitions.

    Slot t of env e holds the observation an action was taken in, that action, its reward and
    whether the episode terminated or ended there. With NEXT_STEP autoreset the slot after an
    episode's end holds its last observation and a reset step (not a transition: `valid` False).
    """

    def __init__(self, size: int, num_envs: int, obs_shape, act_dim: int, device: torch.device):
        self.steps, self.num_envs, self.written = max(1, size // num_envs), num_envs, 0
        shape = (self.steps, num_envs)
        self.obs = torch.zeros(*shape, *obs_shape, dtype=torch.uint8, device=device)
        self.actions = torch.zeros(*shape, act_dim, device=device)
        self.rewards = torch.zeros(shape, device=device)
        self.terminated = torch.zeros(shape, dtype=torch.bool, device=device)
        self.done = torch.zeros(shape, dtype=torch.bool, device=device)
        self.valid = torch.zeros(shape, dtype=torch.bool, device=device)

    def add(self, obs, actions, rewards, terminated, done, valid) -> None:
        """One env step of every env, overwriting the oldest when full."""
        t = self.written % self.steps
        self.obs[t], self.actions[t], self.rewards[t] = obs, actions, rewards
        self.terminated[t], self.done[t], self.valid[t] = terminated, done, valid
        self.written += 1

    def sample(self, batch: int, n_step: int, gamma: float) -> tuple[torch.Tensor, ...]:
        """(obs, action, n-step return, discount, next obs, valid) of batch random transitions.

        The return sums n_step rewards or up to the episode's end; next obs is the observation
        after the last of them; discount is gamma to the steps summed, 0 where it terminated.
        """
        oldest = max(0, self.written - self.steps)
        device = self.obs.device
        start = torch.randint(oldest, self.written - n_step, (batch,), device=device)  # room for n + 1 slots
        env = torch.randint(self.num_envs, (batch,), device=device)
        steps = (start[:, None] + torch.arange(n_step, device=device)) % self.steps  # (B, n)
        done = self.done[steps, env[:, None]]
        alive = torch.cat((torch.ones_like(done[:, :1]), ~done[:, :-1]), 1).cumprod(1).bool()  # (B, n)
        powers = gamma ** torch.arange(n_step, device=device, dtype=torch.float32)
        reward = (self.rewards[steps, env[:, None]] * powers * alive).sum(1)
        last = alive.sum(1) - 1  # the step the return stops at: n_step - 1 or the episode's end
        ended = self.terminated[steps, env[:, None]].gather(1, last[:, None]).squeeze(1)
        discount = gamma ** (last + 1).float() * ~ended
        t = start % self.steps
        next_t = (start + last + 1) % self.steps
        return (
            self.obs[t, env],
            self.actions[t, env],
            reward,
            discount,
            self.obs[next_t, env],
            self.valid[t, env],
        )


def train(args: argparse.Namespace) -> dict:
    """Train, evaluating every --eval-every env steps and at the end; returns the last figures.

    With --run-dir the curve goes to metrics.json after each evaluation, and the run's whole state
    (networks, optimizers, replay buffer, random state, curve) to checkpoint.pt every
    --checkpoint-minutes, on SIGTERM or Ctrl-C, at --max-seconds and at the end. --resume continues
    it: the envs start fresh episodes, and the buffer ends the interrupted ones where the run
    stopped, as a time limit would (the step after holds their last observation)."""
    if args.run_dir:
        if not args.resume and os.path.exists(os.path.join(args.run_dir, "checkpoint.pt")):
            raise SystemExit(f"error: --run-dir: {args.run_dir} holds a run; add --resume to continue it")
        os.makedirs(args.run_dir, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the small convolutions run fastest on one thread beside the renderer
    env = make_env(args, args.num_envs, seed=args.seed, autoreset_mode=AutoresetMode.NEXT_STEP)
    eval_env = make_env(args, args.eval_envs) if args.eval_envs else None
    device, n = env.device, args.num_envs
    obs_shape, act_dim = env.single_observation_space.shape, env.single_action_space.shape[0]
    pad = max(1, args.size // 21)

    encoder = Encoder(obs_shape[0], args.size, args.channels).to(device)
    actor = Actor(encoder.repr_dim, act_dim, args.feature_dim, args.hidden).to(device)
    critic = Critic(encoder.repr_dim, act_dim, args.feature_dim, args.hidden).to(device)
    target = Critic(encoder.repr_dim, act_dim, args.feature_dim, args.hidden).to(device)
    target.load_state_dict(critic.state_dict())
    critic_optimizer = torch.optim.Adam([*encoder.parameters(), *critic.parameters()], lr=args.lr)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=args.lr)
    buffer = ReplayBuffer(args.buffer_size, n, obs_shape, act_dim, device)
    nets = {"encoder": encoder, "actor": actor, "critic": critic, "target": target}
    nets |= {"critic_optimizer": critic_optimizer, "actor_optimizer": actor_optimizer}
    run = {"step": 0, "seconds": 0.0, "curve": [], "random_return": None}  # what a checkpoint adds

    def std_at(env_steps: int) -> float:
        fraction = min(1.0, env_steps / args.std_steps)
        return args.std_start + fraction * (args.std_end - args.std_start)

    def update(std: float) -> None:
        obs, actions, reward, discount, next_obs, valid = buffer.sample(
            args.batch_size, args.n_step, args.gamma
        )
        features = encoder(random_shift(obs.float(), pad))
        with torch.no_grad():
            next_features = encoder(random_shift(next_obs.float(), pad))
            next_actions = noisy(actor(next_features), std, args.std_clip)
            q_target = reward + discount * target(next_features, next_actions).min(0).values
        weight = valid.float()  # reset steps are not transitions
        critic_loss = ((critic(features, actions) - q_target).square() * weight).sum() / weight.sum().clamp(
            min=1
        )
        critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_optimizer.step()

        features = features.detach()  # the actor does not train the encoder
        actor_optimizer.zero_grad()
        actor_loss(actor, critic, features, std, args.std_clip, args.pre_tanh_penalty).backward()
        actor_optimizer.step()
        with torch.no_grad():  # Polyak averaging of the target critics
            for p, p_target in zip(critic.parameters(), target.parameters(), strict=True):
                p_target.lerp_(p, args.tau)

    def policy(o: torch.Tensor) -> torch.Tensor:
        return actor(encoder(o.float()))

    def random_policy(o: torch.Tensor) -> torch.Tensor:
        return 2 * torch.rand(len(o), act_dim, device=o.device) - 1

    last_obs = restore(args, nets, buffer, run) if args.resume else None
    obs, _ = env.reset(
        seed=args.seed + run["step"]
    )  # a resumed run: fresh episodes, seeded by where it stopped
    if args.resume:
        if buffer.written:  # the interrupted episodes end at the last step stored (module docstring)
            buffer.done[(buffer.written - 1) % buffer.steps] = True
            none = torch.zeros(n, dtype=torch.bool, device=device)
            buffer.add(last_obs.to(device), torch.zeros(n, act_dim, device=device), torch.zeros(n, device=device),
                       none, none, none)  # fmt: skip
        print(
            f"resumed {args.run_dir}: {run['step'] * n} of {args.total_steps} env steps, {run['seconds']:.0f} s"
        )
    resetting = torch.zeros(n, dtype=torch.bool, device=device)  # this step resets the env (NEXT_STEP)
    ended_return = torch.zeros((), dtype=torch.float64, device=device)  # since the last progress line
    ended_count = torch.zeros((), dtype=torch.int64, device=device)
    vector_steps = max(1, args.total_steps // n)
    stops: list[int] = []
    for number in (signal.SIGTERM, signal.SIGINT):  # finish the step, save, then stop
        signal.signal(number, lambda received, _: stops.append(received))
    seconds_before, start, saved_at = run["seconds"], time.perf_counter(), time.perf_counter()
    logged, mean, stopped = run["step"] * n, float("nan"), None

    def save() -> None:
        run["seconds"] = seconds_before + time.perf_counter() - start
        if args.run_dir:
            save_checkpoint(args, nets, buffer, run, obs)

    def evaluate_now(step: int) -> None:
        if eval_env is None:
            return
        if run["random_return"] is None:
            run["random_return"] = evaluate(eval_env, args.seed, random_policy)
        row = {
            "env_steps": step * n,
            "updates": max(0, step * n - args.learning_starts) // n * args.updates_per_step,
        }
        row["eval_return"] = evaluate(eval_env, args.seed, policy)
        row["train_return"] = None if math.isnan(mean) else mean  # no episode ended since the last line
        row["seconds"] = seconds_before + time.perf_counter() - start
        run["curve"].append(row)
        print(f"eval at {row['env_steps']} env steps, {row['seconds']:.0f} s: return {row['eval_return']:.1f} "
              f"(random {run['random_return']:.1f})", flush=True)  # fmt: skip
        if args.run_dir:
            write_metrics(args, run)

    for step in range(run["step"] + 1, vector_steps + 1):
        std = std_at(step * n)
        if step * n <= args.learning_starts:
            actions = random_policy(obs)
        else:
            with torch.no_grad():
                actions = noisy(policy(obs), std)
        next_obs, reward, terminated, truncated, info = env.step(actions)
        done = terminated | truncated
        buffer.add(obs, actions, reward.float(), terminated, done, ~resetting)
        if "episode_stats" in info:
            ended = info["_episode_stats"]
            ended_return += torch.where(ended, info["episode_stats"]["r"], 0.0).sum()
            ended_count += ended.sum()
        obs, resetting = next_obs, done
        if step * n > args.learning_starts:
            for _ in range(args.updates_per_step):
                update(std)
        run["step"] = step
        if step * n - logged >= args.log_every or step == vector_steps:
            logged = step * n
            count = int(ended_count)  # the loop's one read of the device, once per line
            mean = float(ended_return) / count if count else float("nan")  # the curve's train_return
            ended = f"return ({count} episodes) {mean:.1f}" if count else "no episode ended"
            ended_return.zero_()
            ended_count.zero_()
            print(f"steps {step * n}  {ended}  std {std:.2f}  "
                  f"{seconds_before + time.perf_counter() - start:.0f} s", flush=True)  # fmt: skip
        if args.eval_every and step * n // args.eval_every != (step - 1) * n // args.eval_every:
            evaluate_now(step)
        if stops:
            stopped = f"signal {signal.Signals(stops[0]).name}"
        elif (
            args.max_seconds is not None and seconds_before + time.perf_counter() - start >= args.max_seconds
        ):
            stopped = f"--max-seconds {args.max_seconds:g}"
        if stopped:
            break
        if args.run_dir and time.perf_counter() - saved_at >= 60 * args.checkpoint_minutes:
            save()
            saved_at = time.perf_counter()
    if stopped is None and (not run["curve"] or run["curve"][-1]["env_steps"] != run["step"] * n):
        evaluate_now(run["step"])
    save()
    result = {"env_steps": run["step"] * n, "seconds": run["seconds"]}
    if not math.isnan(mean):  # an episode ended since the last progress line
        result["train_return"] = mean
    if run["curve"]:
        result |= {"eval_return": run["curve"][-1]["eval_return"], "random_return": run["random_return"]}
    print(", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
    if stopped:
        print(f"stopped by {stopped}; continue with the same options and --resume --run-dir {args.run_dir}"
              if args.run_dir else f"stopped by {stopped}")  # fmt: skip
    env.close()
    if eval_env is not None:
        eval_env.close()
    return result


def evaluate(env, seed: int, policy) -> float:
    """Mean return of policy over the first full episode of each of env's envs, from the same
    starts each time (reset with seed + 10000)."""
    obs, _ = env.reset(seed=seed + 10_000)
    returns = torch.full((env.num_envs,), float("nan"), dtype=torch.float64)
    for _ in range(env.max_episode_steps):
        with torch.no_grad():
            obs, _, _, _, info = env.step(policy(obs))
        if "final_info" in info:
            ended = info["final_info"]["_episode_stats"].cpu() & returns.isnan()
            returns[ended] = info["final_info"]["episode_stats"]["r"].cpu().double()[ended]
    return float(returns.mean())  # every env's first episode ends within max_episode_steps


def write_metrics(args: argparse.Namespace, run: dict) -> None:
    """metrics.json in --run-dir: the options, the random policy's return and the curve."""
    data = {"options": vars(args), "random_return": run["random_return"], "curve": run["curve"]}
    write_json(os.path.join(args.run_dir, "metrics.json"), data, indent=1)


def save_checkpoint(args: argparse.Namespace, nets: dict, buffer: ReplayBuffer, run: dict, obs) -> None:
    """checkpoint.pt in --run-dir, written whole (unienv.utils.files.written)."""
    state = {"options": vars(args), "run": run, "obs": obs.cpu(), "torch_rng": torch.get_rng_state()}
    state["nets"] = {name: part.state_dict() for name, part in nets.items()}
    state["buffer"] = {name: getattr(buffer, name).cpu() for name in BUFFER_FIELDS} | {
        "written": buffer.written
    }
    with written(os.path.join(args.run_dir, "checkpoint.pt")) as temporary:
        torch.save(state, temporary)


def restore(args: argparse.Namespace, nets: dict, buffer: ReplayBuffer, run: dict) -> torch.Tensor:
    """Load checkpoint.pt of --run-dir into this run (refused, changing nothing, if it was made
    with other options); returns the observation the run stopped at."""
    path = os.path.join(args.run_dir, "checkpoint.pt")
    if not os.path.isfile(path):
        raise SystemExit(f"error: --resume: {path} not found")
    state = torch.load(path, weights_only=True)  # tensors, numbers and text only: no code is run
    differ = [f"--{k.replace('_', '-')}: the run has {v!r}, this one {getattr(args, k, None)!r}"
              for k, v in state["options"].items() if k not in RUN_OPTIONS and getattr(args, k, None) != v]  # fmt: skip
    if differ:
        raise SystemExit(
            "error: --resume: " + path + " is a run with other options:\n  " + "\n  ".join(differ)
        )
    for name, part in nets.items():
        part.load_state_dict(state["nets"][name])
    for name in BUFFER_FIELDS:
        getattr(buffer, name).copy_(state["buffer"][name])
    buffer.written = state["buffer"]["written"]
    torch.set_rng_state(state["torch_rng"])
    run.update(state["run"])
    return state["obs"]


BUFFER_FIELDS = ("obs", "actions", "rewards", "terminated", "done", "valid")


if __name__ == "__main__":
    train(parse_args())
