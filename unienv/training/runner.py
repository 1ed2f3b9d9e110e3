"""rsl_rl's PPO runner as train.py drives it: a curve row per iteration, checkpoints on a timer
and on SIGTERM/SIGINT (after the iteration under way), a time budget, resume and data-parallel
ranks. Imports rsl_rl (the `rsl-rl` extra) at module level: `unienv.training` does not import it.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import torch
from rsl_rl.runners import OnPolicyRunner

from unienv.errors import ArgumentError
from unienv.training.checkpoint import check_env_state, env_state, load_env_state, save_checkpoint
from unienv.training.untrusted import conform
from unienv.utils.numbers import finite_or_none as _number
from unienv.utils.numbers import mean_or_none as _mean


class OutOfTime(Exception):
    """Raised after the iteration that passes the time budget, to leave rsl_rl's learn loop."""


class Interrupted(Exception):
    """Raised after the iteration under way when SIGTERM or SIGINT arrived, to leave the learn loop."""


class StopSignal:
    """SIGTERM and SIGINT noted, not acted on at once: the runner stops after the iteration under way
    (its checkpoint needs the state between two iterations). A second SIGINT (Ctrl-C) acts as usual;
    a repeated SIGTERM is noted again (torchrun forwards one more than once; a scheduler's next
    step is SIGKILL)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        self.received: int | None = None
        self._previous = {s: signal.signal(s, self._note) for s in self.SIGNALS}

    def _note(self, signum, frame) -> None:
        if self.received is None:
            print(
                f"{signal.Signals(signum).name}: stopping after this iteration", file=sys.stderr, flush=True
            )
        self.received = signum
        if signum == signal.SIGINT:
            signal.signal(signum, self._previous[signum])

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)


class Runner(OnPolicyRunner):
    """rsl_rl's OnPolicyRunner that records each iteration's metrics (`curve`), writes complete,
    atomic checkpoints and restores them, stops at a time budget or a signal, and whose
    multi-process mode also runs CPU processes (gloo).

    rsl_rl's learn loop has no hook per iteration, so the runner wraps its logger's `log` call,
    made once per iteration, to read the iteration's figures before the logger clears them.
    rsl_rl's own multi-GPU set-up insists on nccl and cuda:<LOCAL_RANK>; on CUDA devices this
    defers to it, on the CPU it does the same with gloo (how the mechanism is tested without GPUs).
    """

    def __init__(
        self,
        env,
        train_cfg,
        log_dir=None,
        device="cpu",
        max_seconds=None,
        on_iteration=None,
        checkpoint_seconds=None,
        stop=None,
    ):
        """max_seconds: stop after the iteration that passes it; on_iteration: called after each;
        checkpoint_seconds: write a checkpoint after the iteration that passes this many seconds
        since the last; stop: a StopSignal, checked after each iteration."""
        super().__init__(env, train_cfg, log_dir=log_dir, device=device)
        self.curve: list[dict] = []
        self.max_seconds, self.on_iteration = max_seconds, on_iteration
        self.checkpoint_seconds, self.stop = checkpoint_seconds, stop
        self.stopped_by = "iterations"
        self.run_identity: dict = {}  # what a checkpoint must match to be resumed here
        self._start = self._saved_at = time.perf_counter()
        self._seconds_before = 0.0  # of the run this one resumes
        log = self.logger.log

        def log_and_record(**kwargs) -> None:
            row = self._iteration_metrics(kwargs["it"], kwargs["collect_time"], kwargs["learn_time"])
            row["losses"] = {k: _number(v) for k, v in kwargs["loss_dict"].items()}
            log(**kwargs)
            self.curve.append(row)
            if self.on_iteration is not None:
                self.on_iteration()
            if self._signalled():
                self.stopped_by = signal.Signals(self.stop.received).name
                self._save_now(kwargs["it"])
                raise Interrupted
            if (
                self.checkpoint_seconds is not None
                and time.perf_counter() - self._saved_at >= self.checkpoint_seconds
            ):
                self._save_now(kwargs["it"])
            if self.max_seconds is not None and row["seconds"] >= self.max_seconds:
                raise OutOfTime

        self.logger.log = log_and_record

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        self._start = self._saved_at = time.perf_counter()
        try:
            super().learn(num_learning_iterations, init_at_random_ep_len=init_at_random_ep_len)
        except (OutOfTime, Interrupted) as e:
            if isinstance(e, OutOfTime):
                self.stopped_by = "max_seconds"
                self._save_now(self.current_learning_iteration)
            if self.logger.writer is not None:  # what rsl_rl does after its last iteration
                self.logger.stop_logging_writer()

    def _signalled(self) -> bool:
        """Whether a stop signal arrived (on any process: all stop after the same iteration)."""
        if self.stop is None:
            return False
        if not self.is_distributed:
            return self.stop.received is not None
        flag = torch.tensor([self.stop.received or 0], device=self.device)
        torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
        received = int(flag.item())  # one read per iteration
        if received:
            self.stop.received = received
        return received != 0

    def _save_now(self, it: int) -> None:
        if self.logger.writer is not None:  # process 0 logs and saves
            self.save(os.path.join(self.logger.log_dir, f"model_{it}.pt"))

    def save(self, path: str, infos: dict | None = None) -> None:
        """Write the run's whole state after the last iteration to path, atomically (rsl_rl's learn
        loop calls this every save_interval iterations and at the end)."""
        logger = self.logger
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
        state = {
            "run": self.run_identity,
            "iterations": len(self.curve),
            "seconds": self.curve[-1]["seconds"] if self.curve else 0.0,
            "algorithm": self.alg.save(),
            "env": env_state(self.env.env),
            "adapter": {
                "obs": self.env.get_observations()["policy"].cpu(),
                "term_sums": {k: v.cpu() for k, v in self.env._term_sums.items()},
            },
            "logger": {
                "rewbuffer": list(logger.rewbuffer),
                "lenbuffer": list(logger.lenbuffer),
                "cur_reward_sum": logger.cur_reward_sum.cpu(),
                "cur_episode_length": logger.cur_episode_length.cpu(),
                "tot_timesteps": logger.tot_timesteps,
                "tot_time": logger.tot_time,
            },
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": cuda,
            "curve": self.curve,
            "infos": infos,
        }
        save_checkpoint(path, state)
        self._saved_at = time.perf_counter()
        logger.save_model(path, self.current_learning_iteration)

    def restore(self, path: str, state: dict) -> None:
        """Continue the run a checkpoint (see save) was written from; refuses one of another run."""
        theirs, ours = state["run"], self.run_identity
        differences = [
            f"{key}: the checkpoint has {theirs.get(key)!r}, this run {ours.get(key)!r}"
            for key in sorted(set(theirs) | set(ours))
            if theirs.get(key) != ours.get(key)
        ]
        if differences:
            raise ArgumentError(
                f"train.resume: {path} is a checkpoint of another run; resume it with its options:\n  "
                + "\n  ".join(differences)
            )
        self._check(path, state)  # every check before the first write
        self.alg.load(state["algorithm"], None, strict=True)  # also the adaptive learning rate
        load_env_state(self.env.env, state["env"])
        adapter = self.env
        adapter._obs["policy"].copy_(state["adapter"]["obs"].to(adapter.device))
        adapter._term_sums = {k: v.to(adapter.device) for k, v in state["adapter"]["term_sums"].items()}
        logger, saved = self.logger, state["logger"]
        logger.rewbuffer.extend(saved["rewbuffer"])
        logger.lenbuffer.extend(saved["lenbuffer"])
        logger.cur_reward_sum.copy_(saved["cur_reward_sum"])
        logger.cur_episode_length.copy_(saved["cur_episode_length"])
        logger.tot_timesteps, logger.tot_time = saved["tot_timesteps"], saved["tot_time"]
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.curve[:] = state["curve"]
        self.current_learning_iteration = state["iterations"]  # the next iteration's index
        self._seconds_before = state["seconds"]

    def _check(self, path: str, state: dict) -> None:
        """Refuse a checkpoint whose learner, adapter, logger or random state is not what this run
        would write (names, dtypes, shapes), and whose env state does not fit this env."""
        where = f"train.resume: {path}"
        saved, ours = state["algorithm"], self.alg.save()
        optimizer = ours.pop("optimizer_state_dict")
        conform({k: saved.get(k) for k in ours}, ours, f"{where}: algorithm")
        theirs = saved.get("optimizer_state_dict")
        params = [p for group in self.alg.optimizer.param_groups for p in group["params"]]
        moments = {
            i: {"step": torch.zeros(()), "exp_avg": p.detach().cpu(), "exp_avg_sq": p.detach().cpu()}
            for i, p in enumerate(params)
        }
        if not isinstance(theirs, dict) or not isinstance(theirs.get("state"), dict):
            raise ArgumentError(f"{where}: algorithm.optimizer_state_dict: expected a dict with 'state'")
        conform(theirs, {"state": {i: moments[i] for i in theirs["state"] if i in moments}} | {
            "param_groups": optimizer["param_groups"]}, f"{where}: algorithm.optimizer_state_dict")  # fmt: skip
        if set(theirs["state"]) - set(moments):
            raise ArgumentError(
                f"{where}: algorithm.optimizer_state_dict: state of parameters this learner lacks"
            )
        obs = self.env.get_observations()["policy"].cpu()
        sums = state["adapter"].get("term_sums")  # one (num_envs,) float64 sum per reward term seen
        names = list(sums) if isinstance(sums, dict) and all(isinstance(k, str) for k in sums) else []
        template = {"obs": obs, "term_sums": {k: torch.zeros(len(obs), dtype=torch.float64) for k in names}}
        conform(state["adapter"], template, f"{where}: adapter")
        logger = self.logger
        expected = {
            "rewbuffer": state["logger"].get("rewbuffer"), "lenbuffer": state["logger"].get("lenbuffer"),
            "cur_reward_sum": logger.cur_reward_sum.cpu(), "cur_episode_length": logger.cur_episode_length.cpu(),
            "tot_timesteps": 0, "tot_time": 0.0,
        }  # fmt: skip
        conform(state["logger"], expected, f"{where}: logger")
        for name in ("rewbuffer", "lenbuffer"):
            values = state["logger"][name]
            if (
                not isinstance(values, list)
                or len(values) > logger.rewbuffer.maxlen
                or not all(type(v) in (int, float) and np.isfinite(v) for v in values)
            ):
                raise ArgumentError(
                    f"{where}: logger.{name}: expected at most {logger.rewbuffer.maxlen} finite numbers"
                )
        conform(state["torch_rng"], torch.get_rng_state(), f"{where}: torch_rng")
        check_env_state(self.env.env.unwrapped, state["env"])

    def _iteration_metrics(self, it: int, collect_time: float, learn_time: float) -> dict:
        """This iteration's figures (rsl_rl's, as its report prints them; process 0's episodes)."""
        logger, size = self.logger, self.cfg["num_steps_per_env"] * self.env.num_envs * self.gpu_world_size
        episode = {}
        for key in dict.fromkeys(k for extras in logger.ep_extras for k in extras):
            values = [
                torch.as_tensor(e[key], device=logger.device).float().flatten()
                for e in logger.ep_extras
                if key in e
            ]
            episode[key] = _number(torch.cat(values).mean())  # one device read per key
        return {
            "iteration": it + 1,  # iterations done
            "env_steps": (it + 1) * size,
            "seconds": self._seconds_before + time.perf_counter() - self._start,
            "steps_per_s": size / (collect_time + learn_time),  # collection + learning, rsl_rl's figure
            "collect_steps_per_s": size / collect_time,  # env steps and policy inference only
            "mean_return": _mean(logger.rewbuffer),  # of the last 100 episodes, as rsl_rl prints it
            "mean_episode_length": _mean(logger.lenbuffer),
            "episode": episode,  # means over this iteration's ended episodes: return, length, reward terms
        }

    def _configure_multi_gpu(self) -> None:
        if torch.device(self.device).type != "cpu" or int(os.getenv("WORLD_SIZE", "1")) == 1:
            return super()._configure_multi_gpu()
        self.gpu_world_size = int(os.environ["WORLD_SIZE"])
        self.gpu_global_rank = int(os.environ["RANK"])
        self.gpu_local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.is_distributed = True
        self.cfg["multi_gpu"] = {
            "global_rank": self.gpu_global_rank,
            "local_rank": self.gpu_local_rank,
            "world_size": self.gpu_world_size,
        }
        torch.distributed.init_process_group(
            "gloo", rank=self.gpu_global_rank, world_size=self.gpu_world_size
        )
