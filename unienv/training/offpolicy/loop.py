"""train.py's off-policy run: collect with the actor, learn from a replay buffer, record the
curve, checkpoint, resume.

    run = OffPolicyRun(env, LoopConfig(env_steps=300_000), LearnerConfig(), seed=0, run_dir="runs/x")
    run.learn()                  # until env_steps, max_seconds or a signal; checkpoints on the way
    run.restore(path, state)     # a checkpoint of this run (load_checkpoint): continue bit for bit

Each vector env step: act (uniform random actions for the first `learning_starts` env steps,
then a sample of the actor), step the env, store one transition per env (an ended episode's real
last observation as its next observation; only `terminated` stops the bootstrap, so a time limit
is not taken for a failure), then `updates_per_step` learner updates on batches from the buffer.
The loop reads the device once per curve row (every `log_every` env steps): episode returns,
lengths and the task's metrics are summed there meanwhile.

A checkpoint is the run's whole state between two vector steps: the learner (networks,
optimizers, temperature), the replay buffer's rows and its generator, the env (physics, random
streams, task memory: unienv.training.checkpoint.env_state), the last observation, the episode
sums, torch's random state, the curve. It is written atomically as model_<env steps>.pt every
`checkpoint_minutes`, at the end, and on SIGTERM or SIGINT (after the step under way); the one
before is removed (a buffer of 10^6 transitions is hundreds of MB). Restored into a run built
with the same options, the run continues exactly as if it had never stopped, on the CPU.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

import torch

from unienv.errors import ArgumentError
from unienv.training.checkpoint import (
    OFFPOLICY_FORMAT,
    check_env_state,
    env_state,
    load_env_state,
    run_differences,
    save_checkpoint,
)
from unienv.training.offpolicy.learner import Learner, LearnerConfig
from unienv.training.offpolicy.replay import FIELDS, ReplayBuffer
from unienv.training.signals import StopSignal
from unienv.training.untrusted import conform
from unienv.utils.numbers import finite_or_none as _number


@dataclasses.dataclass
class LoopConfig:
    """How the run collects and learns (train.yaml's train.loop)."""

    env_steps: int = 300_000  # the run's total, every env's steps together
    updates_per_step: int = 4  # learner updates per vector env step
    batch_size: int = 256
    learning_starts: int = 5_000  # env steps of uniform random actions before the first update
    buffer_size: int = 1_000_000  # transitions kept
    log_every: int = 10_000  # env steps between curve rows

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            low = 0 if f.name in ("updates_per_step", "learning_starts") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ArgumentError(f"train.loop.{f.name}: expected an integer >= {low}, got {value!r}")


class OffPolicyRun:
    """The env, the learner and the buffer, and the loop between them (see the module docstring)."""

    def __init__(
        self,
        env,
        loop: LoopConfig,
        learner: LearnerConfig,
        seed: int,
        run_dir: str | None,
        max_seconds: float | None = None,
        checkpoint_seconds: float | None = None,
        on_row: Callable[[], None] | None = None,
        stop: StopSignal | None = None,
    ):
        self.env, self.cfg, self.run_dir = env, loop, run_dir
        self.max_seconds, self.checkpoint_seconds = max_seconds, checkpoint_seconds
        self.on_row, self.stop = on_row, stop
        space = env.single_action_space
        self.device = torch.device(env.device)
        low = torch.as_tensor(space.low, dtype=torch.float32, device=self.device)
        high = torch.as_tensor(space.high, dtype=torch.float32, device=self.device)
        self.low, self.high = low, high
        obs_dim, act_dim = env.single_observation_space.shape[0], space.shape[0]
        self.learner = Learner(obs_dim, act_dim, low, high, learner, self.device)
        self.buffer = ReplayBuffer(loop.buffer_size, obs_dim, act_dim, self.device, seed)
        self.obs = env.reset(seed=seed)[0].float()
        self.sums = self._zero_sums()
        self.env_steps, self.curve, self.stopped_by = 0, [], "env_steps"
        self.run_identity: dict = {}  # what a checkpoint must match to be resumed here (train.py sets it)
        self._seconds_before = 0.0
        self._start, self._end = time.perf_counter(), None
        self._last_checkpoint: str | None = None

    def _zero_sums(self) -> dict[str, torch.Tensor]:
        zero = torch.zeros((), dtype=torch.float64, device=self.device)
        return {"return": zero.clone(), "length": zero.clone(), "episodes": zero.clone()}

    @property
    def seconds(self) -> float:
        """The run's training time so far, its earlier processes' included (frozen once learn ends)."""
        end = self._end if self._end is not None else time.perf_counter()
        return self._seconds_before + end - self._start

    def learn(self) -> None:
        """Collect and learn until env_steps, max_seconds or a stop signal; a checkpoint at the end."""
        cfg, n = self.cfg, self.env.num_envs
        self._start = self._saved_at = time.perf_counter()
        self._end = None
        losses: dict[str, torch.Tensor] = {}
        while self.env_steps < cfg.env_steps:
            self._step()
            if self.env_steps >= cfg.learning_starts:
                for _ in range(cfg.updates_per_step):
                    losses = self.learner.update(self.buffer.sample(cfg.batch_size))
            if self.env_steps // cfg.log_every != (self.env_steps - n) // cfg.log_every:
                self._row(losses)
            if self.stop is not None and self.stop.received is not None:
                self.stopped_by = "signal"
                break
            if self.max_seconds is not None and self.seconds >= self.max_seconds:
                self.stopped_by = "max_seconds"
                break
            if (
                self.checkpoint_seconds is not None
                and time.perf_counter() - self._saved_at >= self.checkpoint_seconds
            ):
                self.save()
        if self.stopped_by == "env_steps" and (
            not self.curve or self.curve[-1]["env_steps"] != self.env_steps
        ):
            self._row(losses)  # the run's last; a stopped run's sums carry on into its resumption
        elif self.stopped_by != "env_steps":
            print(self._line(self._current(losses)) + f"  (stopped: {self.stopped_by})", flush=True)
        self._end = time.perf_counter()
        self.save()

    def _step(self) -> None:
        env, n = self.env, self.env.num_envs
        if self.env_steps < self.cfg.learning_starts:
            actions = self.low + (self.high - self.low) * torch.rand(n, len(self.low), device=self.device)
        else:
            actions = self.learner.act(self.obs)
        next_obs, reward, terminated, _, info = env.step(actions)
        next_obs = next_obs.float()
        real_next = next_obs
        if "final_obs" in info:  # the ended episodes' last observations, not their successors' first
            real_next = torch.where(info["_final_obs"][:, None], info["final_obs"].float(), next_obs)
            ended, stats = info["final_info"]["_episode_stats"], info["final_info"]["episode_stats"]
            for name, value in stats.items():
                if name == "t":
                    continue
                key = {"r": "return", "l": "length"}.get(name, name)
                if key not in self.sums:
                    self.sums[key] = torch.zeros((), dtype=torch.float64, device=self.device)
                self.sums[key] += torch.where(ended, value.double(), 0.0).sum()
            self.sums["episodes"] += ended.sum()
        self.buffer.add(
            obs=self.obs,
            action=actions,
            reward=reward.float(),
            next_obs=real_next,
            terminated=terminated.float(),
        )
        self.obs = next_obs
        self.env_steps += n

    def _row(self, losses: dict[str, torch.Tensor]) -> None:
        """A curve row from the sums since the last (one read of the device), printed as a line."""
        row = self._current(losses)
        self.sums = self._zero_sums()
        self.curve.append(row)
        print(self._line(row), flush=True)
        if self.on_row is not None:
            self.on_row()

    def _current(self, losses: dict[str, torch.Tensor]) -> dict:
        """The row the sums since the last one make (reads the device; changes nothing)."""
        sums = {k: float(v) for k, v in self.sums.items()}
        episodes = sums.pop("episodes")
        means = {k: v / episodes if episodes else float("nan") for k, v in sums.items()}
        previous = self.curve[-1] if self.curve else {"env_steps": 0, "seconds": self._seconds_before}
        seconds = self.seconds
        row = {
            "iteration": len(self.curve) + 1,
            "env_steps": self.env_steps,
            "updates": self.learner.updates,
            "seconds": seconds,
            "steps_per_s": (self.env_steps - previous["env_steps"])
            / max(seconds - previous["seconds"], 1e-9),
            "episodes": int(episodes),
            "mean_return": _number(means.pop("return")),
            "mean_episode_length": _number(means.pop("length")),
            "episode": {k: _number(v) for k, v in means.items()},
            "losses": {k: _number(v) for k, v in losses.items()},
        }
        return row

    def _line(self, row: dict) -> str:
        """The progress line: steps, time, rate, what remains, the episodes' return and length."""
        total = self.cfg.env_steps
        left = (total - row["env_steps"]) / max(row["steps_per_s"], 1e-9)
        if self.max_seconds is not None:
            left = min(left, max(self.max_seconds - row["seconds"], 0.0))
        episodes = (
            f"return {row['mean_return']:.2f}, length {row['mean_episode_length']:.0f} ({row['episodes']} episodes)"
            if row["episodes"]
            else "no episode ended"
        )
        return (
            f"{row['env_steps']:>9,}/{total:,} steps  {_clock(row['seconds'])}  {row['steps_per_s']:,.0f} steps/s  "
            f"{_clock(left)} left  {episodes}"
        )

    def save(self) -> str | None:
        """Write the run's state to <run_dir>/model_<env steps>.pt (atomically) and remove the one
        written before; no run dir, no checkpoint."""
        self._saved_at = time.perf_counter()
        if self.run_dir is None:
            return None
        path = os.path.join(self.run_dir, f"model_{self.env_steps}.pt")
        save_checkpoint(path, self.state(), fmt=OFFPOLICY_FORMAT)
        if self._last_checkpoint not in (None, path) and os.path.exists(self._last_checkpoint):
            os.remove(self._last_checkpoint)
        self._last_checkpoint = path
        return path

    def state(self) -> dict:
        return {
            "run": self.run_identity,
            "iterations": len(self.curve),
            "seconds": self.seconds,
            "env_steps": self.env_steps,
            "learner": self.learner.state_dict(),
            "replay": self.buffer.state_dict(),
            "env": env_state(self.env),
            "obs": self.obs.cpu(),
            "sums": {k: v.cpu() for k, v in self.sums.items()},
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "curve": self.curve,
        }

    def restore(self, path: str, state: dict) -> None:
        """Continue the run a checkpoint of `state()` was written from: every part is checked
        against what this run would write before anything is changed."""
        where = f"train.resume: {path}"
        found = run_differences(state["run"], self.run_identity)
        if found:
            raise ArgumentError(
                f"{where} is a checkpoint of another run; resume it with its options:\n  "
                + "\n  ".join(found)
            )
        self._check(where, state)
        self.learner.load_state_dict(state["learner"])
        self.buffer.load_state_dict(
            {
                k: v.to(self.device) if isinstance(v, torch.Tensor) and k in FIELDS else v
                for k, v in state["replay"].items()
            }
        )
        load_env_state(self.env, state["env"])
        self.obs = state["obs"].to(self.device)
        self.sums = {k: v.to(self.device) for k, v in state["sums"].items()}
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.env_steps, self.curve[:] = state["env_steps"], state["curve"]
        self._seconds_before = state["seconds"]
        self._last_checkpoint = (
            path
            if self.run_dir and os.path.dirname(os.path.abspath(path)) == os.path.abspath(self.run_dir)
            else None
        )

    def _check(self, where: str, state: dict) -> None:
        """Refuse a checkpoint whose parts are not what this run would write (keys, dtypes, shapes)."""
        ours = self.state()
        conform(state["learner"], self._learner_template(state["learner"]), f"{where}: learner")
        replay = state["replay"]
        count = replay.get("count") if isinstance(replay, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= self.buffer.capacity:
            raise ArgumentError(f"{where}: replay.count: expected an integer in [0, {self.buffer.capacity}]")
        template = dict(ours["replay"])
        for k in FIELDS:
            template[k] = self.buffer.data[k][:1].expand(count, *self.buffer.data[k].shape[1:]).cpu()
        conform(replay, template, f"{where}: replay")
        if not 0 <= replay["head"] < self.buffer.capacity:
            raise ArgumentError(f"{where}: replay.head: expected an integer in [0, {self.buffer.capacity})")
        conform(state["obs"], ours["obs"], f"{where}: obs")
        sums = state["sums"]  # the three counts, and each episode statistic the task reports (gait, speed)
        names = [k for k in sums if isinstance(k, str)] if isinstance(sums, dict) else []
        zero = torch.zeros((), dtype=torch.float64)
        conform(sums, {**self._zero_sums(), **{k: zero for k in names}}, f"{where}: sums")
        conform(state["torch_rng"], ours["torch_rng"], f"{where}: torch_rng")
        env_steps = state["env_steps"]
        if (
            isinstance(env_steps, bool)
            or not isinstance(env_steps, int)
            or not 0 <= env_steps < self.cfg.env_steps
        ):
            raise ArgumentError(
                f"{where}: has done {env_steps} of the run's {self.cfg.env_steps} env steps; "
                "raise train.loop.env_steps to train on"
            )
        check_env_state(self.env.unwrapped, state["env"])

    def _learner_template(self, saved) -> dict:
        """What this run's learner would write, its optimizers' moments present where the saved
        ones have them (a checkpoint written before the first update has none)."""
        ours = self.learner.state_dict()
        optimizers = {
            "actor_optimizer": self.learner.actor_optimizer,
            "critic_optimizer": self.learner.critic_optimizer,
            "alpha_optimizer": self.learner.alpha_optimizer,
        }
        for name, optimizer in optimizers.items():
            theirs = saved.get(name) if isinstance(saved, dict) else None
            stored = theirs.get("state") if isinstance(theirs, dict) else None
            params = [p for group in optimizer.param_groups for p in group["params"]]
            if isinstance(stored, dict) and stored:
                ours[name]["state"] = {
                    i: {"step": torch.zeros(()), "exp_avg": p.detach().cpu(), "exp_avg_sq": p.detach().cpu()}
                    for i, p in enumerate(params)
                }
        return ours


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
