"""rsl_rl's PPO runner as train.py drives it: a curve row per iteration, checkpoints on a timer
and on SIGTERM/SIGINT (after the iteration under way), a time budget, resume and data-parallel
ranks. Imports rsl_rl (the `rsl-rl` extra) at module level: `unienv.training` does not import it.

Under torchrun every decision to stop or to checkpoint is taken by all ranks together, after the
same iteration (one all-reduce of the signal, timer and budget flags per iteration); a checkpoint
is written by rank 0 and holds every rank's own state (its envs, random state, episode sums), so
that the same number of ranks continues it bit for bit on the CPU (see `restore`).
"""

from __future__ import annotations

import math
import os
import signal
import time

import numpy as np
import torch
from rsl_rl.runners import OnPolicyRunner

from unienv.errors import ArgumentError
from unienv.training.checkpoint import (
    check_env_state,
    env_state,
    load_env_state,
    run_differences,
    save_checkpoint,
)
from unienv.training.distributed import ProcessGroup, broadcast_flags, gather_states
from unienv.training.untrusted import conform
from unienv.utils.numbers import finite_or_none as _number
from unienv.utils.numbers import mean_or_none as _mean


class OutOfTime(Exception):
    """Raised after the iteration that passes the time budget, to leave rsl_rl's learn loop."""


class Interrupted(Exception):
    """Raised after the iteration under way when SIGTERM or SIGINT arrived, to leave the learn loop."""


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
        timeout_s=60.0,
    ):
        """max_seconds: stop after the iteration that passes it; on_iteration: called after each;
        checkpoint_seconds: write a checkpoint after the iteration that passes this many seconds
        since the last; stop: a StopSignal, checked after each iteration; timeout_s: under
        torchrun, how long a rank may stop answering before the job ends (unienv.training.distributed)."""
        self.timeout_s, self.group = timeout_s, None  # the process group, under torchrun
        self._rank_states: list[dict] | None = None  # every rank's own state, gathered on rank 0
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
            if self.max_seconds is not None:  # rsl_rl's ETA and "iteration i/N": the budget's, not N's
                kwargs["total_it"] = self._last_iteration(
                    kwargs["it"], kwargs["start_it"], kwargs["total_it"], row["seconds"]
                )
            log(**kwargs)
            self.curve.append(row)
            if self.on_iteration is not None:
                self.on_iteration()
            signalled, timer, out_of_time = self._decide(row["seconds"])
            if self.is_distributed and (
                signalled
                or timer
                or out_of_time
                or kwargs["it"] % self.cfg["save_interval"] == 0
                or kwargs["it"] == kwargs["total_it"] - 1
            ):  # a checkpoint is due on rank 0 after this iteration: every rank's own state
                self._rank_states = gather_states(
                    self._rank_state(), self.gpu_global_rank, self.gpu_world_size, self.device
                )
            if signalled:
                self.stopped_by = signal.Signals(self.stop.received).name
                self._save_now(kwargs["it"])
                raise Interrupted
            if timer:
                self._save_now(kwargs["it"])
            if out_of_time:
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

    def _last_iteration(self, it: int, start_it: int, total_it: int, seconds: float) -> int:
        """The iteration count at which train.max_seconds will end this run, at this process's
        pace so far (iteration `it` done, `seconds` of the whole run spent), or total_it if sooner."""
        pace = (time.perf_counter() - self._start) / (it + 1 - start_it)
        left = math.ceil(max(self.max_seconds - seconds, 0.0) / pace) if pace > 0 else 0
        return min(total_it, it + 1 + left)

    def _decide(self, seconds: float) -> tuple[int, bool, bool]:
        """(the stop signal received, or 0; whether the checkpoint timer has passed; whether the
        time budget has): on every rank the same, any rank's signal or budget deciding for all."""
        flags = [
            self.stop.received or 0 if self.stop is not None else 0,
            self.checkpoint_seconds is not None  # rank 0's clock: rank 0 saves and restarts it
            and self.gpu_global_rank == 0
            and time.perf_counter() - self._saved_at >= self.checkpoint_seconds,
            self.max_seconds is not None and seconds >= self.max_seconds,
        ]
        if self.is_distributed:
            flags = broadcast_flags([int(f) for f in flags], self.device)
        if flags[0] and self.stop is not None:
            self.stop.received = flags[0]
        return flags[0], bool(flags[1]), bool(flags[2])

    def _save_now(self, it: int) -> None:
        if self.logger.writer is not None:  # process 0 logs and saves
            self.save(os.path.join(self.logger.log_dir, f"model_{it}.pt"))

    def save(self, path: str, infos: dict | None = None) -> None:
        """Write the run's whole state after the last iteration to path, atomically (rsl_rl's learn
        loop calls this every save_interval iterations and at the end, on rank 0). Rank 0's own
        state is at the top level, as in a one-process run; other_ranks holds ranks 1..K-1's."""
        state = {
            "run": self.run_identity,
            "iterations": len(self.curve),
            "seconds": self.curve[-1]["seconds"] if self.curve else 0.0,
            "algorithm": self.alg.save(),
            **self._rank_state(),
            "curve": self.curve,
            "infos": infos,
        }
        if self.is_distributed:
            state["other_ranks"] = self._rank_states[1:]
        save_checkpoint(path, state)
        self._saved_at = time.perf_counter()
        self.logger.save_model(path, self.current_learning_iteration)

    def _rank_state(self) -> dict:
        """What this rank alone carries between iterations: its envs, its adapter's last
        observation, its logger's episode sums, its random state."""
        logger = self.logger
        return {
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
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def restore(self, path: str, state: dict) -> str:
        """Continue the run a checkpoint (see save) was written from; refuses one of another run.

        On as many ranks as wrote it, rank r restores its own state: the run continues bit for bit
        on the CPU. On another number of ranks, the learner (policy, critic, normalizers, optimizer,
        learning rate), the iteration count, the curve and rank 0's episode buffers carry over;
        each rank keeps the envs and random state this run built for it (fresh envs seeded for
        rank r, torch seeded seed + r). Returns which of the two ("exact" or "re-seeded").
        """
        differences = run_differences(state["run"], self.run_identity)
        if differences:
            raise ArgumentError(
                f"train.resume: {path} is a checkpoint of another run; resume it with its options:\n  "
                + "\n  ".join(differences)
            )
        rank, world = self.gpu_global_rank, self.gpu_world_size
        ranks = [state, *state.get("other_ranks", [])]
        exact = state["run"].get("processes", 1) == world == len(ranks)
        self._check(path, state, ranks[rank] if exact else None)  # every check before the first write
        self.alg.load(state["algorithm"], None, strict=True)  # also the adaptive learning rate
        logger = self.logger
        if exact:
            mine = ranks[rank]
            load_env_state(self.env.env, mine["env"])
            adapter = self.env
            adapter._obs["policy"].copy_(mine["adapter"]["obs"].to(adapter.device))
            adapter._term_sums = {k: v.to(adapter.device) for k, v in mine["adapter"]["term_sums"].items()}
            saved = mine["logger"]
            logger.cur_reward_sum.copy_(saved["cur_reward_sum"])
            logger.cur_episode_length.copy_(saved["cur_episode_length"])
            torch.set_rng_state(mine["torch_rng"])
            if mine["cuda_rng"] and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(mine["cuda_rng"])
        else:
            saved = state["logger"]  # rank 0's: the curve's mean return continues from it
        logger.rewbuffer.extend(saved["rewbuffer"])
        logger.lenbuffer.extend(saved["lenbuffer"])
        logger.tot_timesteps, logger.tot_time = saved["tot_timesteps"], saved["tot_time"]
        self.curve[:] = state["curve"]
        self.current_learning_iteration = state["iterations"]  # the next iteration's index
        self._seconds_before = state["seconds"]
        return "exact" if exact else "re-seeded"

    def _check(self, path: str, state: dict, mine: dict | None) -> None:
        """Refuse a checkpoint whose learner, adapter, logger or random state is not what this run
        would write (names, dtypes, shapes), and whose env state does not fit this env. `mine`: this
        rank's part where it is restored (the same number of ranks), else None (re-seeded envs)."""
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
        logger = self.logger
        if not isinstance(state.get("logger"), dict):
            raise ArgumentError(f"{where}: logger: expected a dict")
        for name in ("rewbuffer", "lenbuffer"):
            values = state["logger"].get(name)
            if (
                not isinstance(values, list)
                or len(values) > logger.rewbuffer.maxlen
                or not all(type(v) in (int, float) and np.isfinite(v) for v in values)
            ):
                raise ArgumentError(
                    f"{where}: logger.{name}: expected at most {logger.rewbuffer.maxlen} finite numbers"
                )
        if mine is None:  # re-seeded envs: nothing of the ranks' own state is restored
            return
        obs = self.env.get_observations()["policy"].cpu()
        sums = mine["adapter"].get("term_sums")  # one (num_envs,) float64 sum per reward term seen
        names = list(sums) if isinstance(sums, dict) and all(isinstance(k, str) for k in sums) else []
        template = {"obs": obs, "term_sums": {k: torch.zeros(len(obs), dtype=torch.float64) for k in names}}
        conform(mine["adapter"], template, f"{where}: adapter")
        expected = {
            "rewbuffer": mine["logger"].get("rewbuffer"), "lenbuffer": mine["logger"].get("lenbuffer"),
            "cur_reward_sum": logger.cur_reward_sum.cpu(), "cur_episode_length": logger.cur_episode_length.cpu(),
            "tot_timesteps": 0, "tot_time": 0.0,
        }  # fmt: skip
        conform(mine["logger"], expected, f"{where}: logger")
        conform(mine["torch_rng"], torch.get_rng_state(), f"{where}: torch_rng")
        check_env_state(self.env.env.unwrapped, mine["env"])

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
            "env_steps": (self.curve[-1]["env_steps"] if self.curve else 0) + size,  # any rank count before
            "seconds": self._seconds_before + time.perf_counter() - self._start,
            "steps_per_s": size / (collect_time + learn_time),  # collection + learning, rsl_rl's figure
            "collect_steps_per_s": size / collect_time,  # env steps and policy inference only
            "mean_return": _mean(logger.rewbuffer),  # of the last 100 episodes, as rsl_rl prints it
            "mean_episode_length": _mean(logger.lenbuffer),
            "episode": episode,  # means over this iteration's ended episodes: return, length, reward terms
        }

    def _configure_multi_gpu(self) -> None:
        """rsl_rl's multi-GPU set-up (nccl, cuda:<LOCAL_RANK>), and the same with gloo on the CPU,
        through a ProcessGroup: collectives with a timeout and a watchdog (rsl_rl sets none)."""
        world = int(os.getenv("WORLD_SIZE", "1"))
        if world == 1:
            return super()._configure_multi_gpu()
        self.gpu_world_size, self.gpu_global_rank = world, int(os.environ["RANK"])
        self.gpu_local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.is_distributed = True
        self.cfg["multi_gpu"] = {
            "global_rank": self.gpu_global_rank,
            "local_rank": self.gpu_local_rank,
            "world_size": self.gpu_world_size,
        }
        backend = "gloo"
        if torch.device(self.device).type == "cuda":
            if torch.device(self.device) != torch.device(f"cuda:{self.gpu_local_rank}"):
                raise ArgumentError(
                    f"device: under torchrun local rank {self.gpu_local_rank} runs on "
                    f"cuda:{self.gpu_local_rank}, got {self.device!r}"
                )
            torch.cuda.set_device(self.gpu_local_rank)
            backend = "nccl"
        self.group = ProcessGroup.start(backend, self.gpu_global_rank, world, self.timeout_s)
