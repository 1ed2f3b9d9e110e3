"""unienv beside its peers on Gymnasium's eight MuJoCo v5 tasks: `python -m unienv.bench --peers`.

In one process, interleaved in rounds (each loop runs `seconds` per round, one after the
other, so that a shared machine's noise falls on all of them alike), every loop steps with
random actions from its own action space and resets its ended envs as it would in training:

  at 1 env     gymnasium  `gymnasium.make("<Task>-v5")`, reset when an episode ends
               single     `gymnasium.make("unienv/<Task>-v0")`, the same loop
               vector     `unienv.make(task, num_envs=1)` (same-step autoreset)
               envpool    EnvPool's env of that id at one env (when installed)
  DMC tasks    dm_control `suite.load(domain, task)` and `gymnasium.make("unienv/DMC-<Task>-v0")`,
               at one env, on the same MuJoCo (`dm_control_suite`)
  at N envs    unienv     `unienv.make(task, num_envs=N)` (same-step autoreset)
               next       the same with autoreset_mode="next_step": an ended env's next step is
                          its reset, without physics, as EnvPool's and SyncVectorEnv's are
               raw        mujoco.batch alone replaying unienv's transitions (`unienv.bench`'s
                          raw loop), every env stepped every call: the engines' own ratio,
                          which bounds unienv/envpool from above
               raw_next   the same loop stepping only the envs that did not restart: next's bound
               sync       Gymnasium's SyncVectorEnv of N v5 envs
               envpool    EnvPool at N envs, a thread per core, every env per call

The ratios are taken per round and summarised by their min and median over the rounds: at
1 env, the step time of each loop over Gymnasium's (below 1: faster than Gymnasium); at N envs,
each loop's env-steps/s over EnvPool's (above 1: faster) and unienv's over SyncVectorEnv's.
Beside them, the fraction of env-steps that ended an episode in unienv, next and EnvPool (after
the timing, over RESET_STEPS calls): in same-step autoreset each holds its reset, in next-step
autoreset and EnvPool each is followed by a reset step, so that fraction of their steps runs no
physics. EnvPool is optional (the `peers` extra); without it its columns print "-".
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

import unienv
from unienv import backends
from unienv.backends.scene import mujoco_warnings_to
from unienv.bench.replay import REPLAY_STEPS, Replay
from unienv.tasks import gym_id, task_class

PEER_TASKS = (
    "ant",
    "half_cheetah",
    "hopper",
    "walker2d",
    "humanoid",
    "inverted_pendulum",
    "inverted_double_pendulum",
    "reacher",
)
"""The tasks that are Gymnasium's v5 tasks (and EnvPool's), on the same models."""
DMC_PEER_TASKS = ("dmc_cheetah_run", "dmc_walker_walk", "dmc_humanoid_run")
"""DeepMind Control tasks timed at one env beside dm_control's own `suite.load` (where installed)."""

ACTION_BATCHES = 64  # random action batches each loop cycles through
RESET_STEPS = 100  # calls of each vector loop over which its fraction of ended env-steps is counted


def v5_id(task: str) -> str:
    """Gymnasium's id of a peer task: "half_cheetah" -> "HalfCheetah-v5"."""
    return gym_id(task).removeprefix("unienv/").replace("-v0", "-v5")


def _actions(space: gym.spaces.Box, shape: tuple[int, ...], seed: int) -> list[np.ndarray]:
    """ACTION_BATCHES arrays of `shape`, uniform in the space's bounds, in its dtype."""
    rng = np.random.default_rng(seed)
    low, high = space.low, space.high
    return [rng.uniform(low, high, shape).astype(space.dtype) for _ in range(ACTION_BATCHES)]


def _cycle(actions: list) -> Callable[[], object]:
    i = iter(range(1 << 62))
    return lambda: actions[next(i) % len(actions)]


def _single_loop(env: gym.Env, seed: int) -> Callable[[], None]:
    """A plain Gymnasium loop over one env: step, and reset when the episode ends."""
    env.reset(seed=seed)
    action = _cycle(_actions(env.action_space, env.action_space.shape, seed))

    def step() -> None:
        _, _, terminated, truncated, _ = env.step(action())
        if terminated or truncated:
            env.reset()

    return step


def _vector_loop(env, seed: int, kind: str) -> Callable[[], None]:
    """A vector env's loop (it resets its ended envs itself): kind "unienv" (torch actions),
    "gymnasium" or "envpool" (NumPy actions; EnvPool takes its seed at creation)."""
    env.reset(seed=None if kind == "envpool" else seed)
    batches = _actions(env.single_action_space, (env.num_envs, *env.single_action_space.shape), seed)
    action = _cycle([torch.from_numpy(a) for a in batches] if kind == "unienv" else batches)
    return lambda: env.step(action())


_WARNED: set[str] = set()  # MuJoCo's warnings printed so far in this process


@contextlib.contextmanager
def _each_warning_once():
    """MuJoCo's warnings printed once each in the run while the peers build their envs: Gymnasium
    compiles its XML per env, and half_cheetah.xml's `settotalmass` is deprecated in MuJoCo 4
    (unienv applies it after compiling, `compile_spec`), which would print once per env of a
    SyncVectorEnv."""
    seen = _WARNED

    def warn(message: str) -> None:
        if message not in seen:
            seen.add(message)
            print(f"MuJoCo warning, building Gymnasium's env (printed once): {message}", file=sys.stderr)

    with mujoco_warnings_to(warn):
        yield


def _envpool(task: str, num_envs: int, seed: int):
    """EnvPool's env of the task at num_envs, or None where EnvPool is not installed."""
    try:
        import envpool
    except ImportError:
        return None
    return envpool.make_gymnasium(v5_id(task), num_envs=num_envs, num_threads=_cores(), seed=seed)


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _interleaved(loops: dict[str, Callable[[], object]], seconds: float, rounds: int) -> dict[str, list]:
    """Calls per second of each loop in each round, the loops run one after the other per round."""
    rates: dict[str, list] = {name: [] for name in loops}
    for loop in loops.values():  # warm-up
        loop()
    for _ in range(rounds):
        for name, loop in loops.items():
            calls, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                loop()
                calls += 1
            rates[name].append(calls / (time.perf_counter() - start))
    return rates


def _summary(ratios: list[float]) -> dict:
    return {"min": min(ratios), "median": statistics.median(ratios)}


def measure_one(task: str, seconds: float, rounds: int, seed: int = 0) -> dict:
    """The 1-env row: each loop's median step time (µs) and its step time over Gymnasium's."""
    with _each_warning_once():
        peer = gym.make(v5_id(task))
    envs = {
        "gymnasium": peer,
        "single": gym.make(gym_id(task)),
        "vector": unienv.make(task, num_envs=1, seed=seed),
        "envpool": _envpool(task, 1, seed),
    }
    loops = {
        "gymnasium": _single_loop(envs["gymnasium"], seed),
        "single": _single_loop(envs["single"], seed),
        "vector": _vector_loop(envs["vector"], seed, "unienv"),
    }
    if envs["envpool"] is not None:
        loops["envpool"] = _vector_loop(envs["envpool"], seed, "envpool")
    rates = _interleaved(loops, seconds, rounds)
    base = rates["gymnasium"]
    row = {"task": task, "num_envs": 1, "rounds": rounds}
    for name, r in rates.items():
        row[f"{name}_us"] = 1e6 / statistics.median(r)
        if name != "gymnasium":
            row[f"{name}_time_ratio"] = _summary([b / x for b, x in zip(base, r, strict=True)])
    for env in envs.values():
        if env is not None:
            env.close()
    return row


def _sync(task: str, num_envs: int):
    with _each_warning_once():
        return gym.make_vec(v5_id(task), num_envs=num_envs, vectorization_mode="sync")


def _ended_fraction(loop: Callable[[], tuple]) -> float:
    """The fraction of env-steps of RESET_STEPS calls of a vector loop that end an episode."""
    ended = total = 0
    for _ in range(RESET_STEPS):
        _, _, terminated, truncated, _ = loop()
        done = np.asarray(terminated) | np.asarray(truncated)
        ended, total = ended + int(np.count_nonzero(done)), total + done.size
    return ended / total


def dm_control_suite():
    """dm_control.suite, loadable on MuJoCo 4: dm_control 1.0.50's table of struct fields names
    flex fields that MuJoCo 4 removed, which its physics would fail to index; they are dropped
    first (its trajectories are unchanged: tests/tasks/test_dmc.py steps it beside unienv)."""
    from dm_control.mujoco.index import sizes

    for struct, names in _DMC_GONE.items():
        for name in names:
            sizes.array_sizes[struct].pop(name, None)
    from dm_control import suite

    return suite


_DMC_GONE = {
    "mjmodel": ("flex_vertedge", "flex_vertedgeadr", "flex_vertedgenum", "flex_vertmetric")
    + ("flexvert_J_colind", "flexvert_J_rowadr", "flexvert_J_rownnz"),
    "mjdata": ("flexvert_J", "flexvert_length"),
}


def measure_dmc(task: str, seconds: float, rounds: int, seed: int = 0) -> dict:
    """A DeepMind Control row at one env: `gymnasium.make("unienv/DMC-...-v0")` beside
    dm_control's `suite.load(domain, task)` on the same MuJoCo, each stepped with random actions
    and reset at its episode's end; each one's step time (µs, median) and unienv's over dm_control's."""
    domain = task_class(task).domain
    ref = dm_control_suite().load(domain, task.removeprefix(f"dmc_{domain}_"), task_kwargs={"random": seed})
    spec = ref.action_spec()
    actions = _cycle(_actions(gym.spaces.Box(spec.minimum, spec.maximum, dtype=np.float64), spec.shape, seed))
    ref.reset()

    def dm_control_step() -> None:
        if ref.step(actions()).last():
            ref.reset()

    single = gym.make(gym_id(task))
    rates = _interleaved(
        {"dm_control": dm_control_step, "single": _single_loop(single, seed)}, seconds, rounds
    )
    single.close()
    ratios = [d / u for d, u in zip(rates["dm_control"], rates["single"], strict=True)]
    return {
        "task": task,
        "num_envs": 1,
        "rounds": rounds,
        "dmc": True,
        "dm_control_us": 1e6 / statistics.median(rates["dm_control"]),
        "single_us": 1e6 / statistics.median(rates["single"]),
        "single_time_ratio": _summary(ratios),
    }


def measure_many(task: str, num_envs: int, seconds: float, rounds: int, seed: int = 0) -> dict:
    """The N-env row: env-steps/s (median), each loop's speed over EnvPool's, unienv's over
    SyncVectorEnv's, and the fraction of ended env-steps of unienv, next and EnvPool."""
    envs = {
        "unienv": unienv.make(task, num_envs=num_envs, seed=seed),
        "next": unienv.make(task, num_envs=num_envs, seed=seed, autoreset_mode="next_step"),
        "sync": _sync(task, num_envs),
        "envpool": _envpool(task, num_envs, seed),
    }
    env = envs["unienv"]
    loops = {"unienv": _vector_loop(env, seed, "unienv"), "next": _vector_loop(envs["next"], seed, "unienv")}
    replay = Replay(
        env,
        torch.from_numpy(
            _actions(env.single_action_space, (num_envs, *env.single_action_space.shape), seed)[0]
        ),
        REPLAY_STEPS,
    )
    raw = backends.raw_loop("mujoco")
    loops["raw"] = raw(env.backend, env.task.decimation, replay)
    loops["raw_next"] = raw(env.backend, env.task.decimation, replay, restarts_step=False)
    loops["sync"] = _vector_loop(envs["sync"], seed, "gymnasium")
    if envs["envpool"] is not None:
        loops["envpool"] = _vector_loop(envs["envpool"], seed, "envpool")
    rates = _interleaved(loops, seconds, rounds)
    row = {"task": task, "num_envs": num_envs, "rounds": rounds}
    for name, r in rates.items():
        row[f"{name}_sps"] = statistics.median(r) * num_envs
    row["unienv_over_sync"] = _summary([u / x for u, x in zip(rates["unienv"], rates["sync"], strict=True)])
    if "envpool" in rates:
        for name in ("unienv", "next", "raw", "raw_next"):
            ratios = [a / b for a, b in zip(rates[name], rates["envpool"], strict=True)]
            row[f"{name}_over_envpool"] = _summary(ratios)
    row["ended"] = {
        name: _ended_fraction(loops[name]) for name in ("unienv", "next", "envpool") if name in loops
    }
    for e in envs.values():
        if e is not None:
            e.close()
    return row


def _pair(summary: dict | None) -> str:
    return "-" if summary is None else f"{summary['min']:.2f} / {summary['median']:.2f}"


ONE_HEADER = (
    f"{'task':<26} {'gym us':>7} {'single us':>9} {'vector us':>9} {'envpool us':>10} "
    f"{'single/gym':>13} {'vector/gym':>13} {'envpool/gym':>13}"
)
MANY_HEADER = (
    f"{'task':<26} {'num_envs':>8} {'unienv sps':>11} {'next sps':>11} {'ended %':>16} "
    f"{'unienv/envpool':>14} {'next/envpool':>13} {'raw/envpool':>13} {'raw_next/envpool':>16} "
    f"{'unienv/sync':>13}"
)


def one_line(r: dict) -> str:
    pool = f"{r['envpool_us']:>10.1f}" if "envpool_us" in r else f"{'-':>10}"
    return (
        f"{r['task']:<26} {r['gymnasium_us']:>7.1f} {r['single_us']:>9.1f} {r['vector_us']:>9.1f} {pool} "
        f"{_pair(r['single_time_ratio']):>13} {_pair(r['vector_time_ratio']):>13} "
        f"{_pair(r.get('envpool_time_ratio')):>13}"
    )


def ended_cell(r: dict) -> str:
    """The ended fractions of unienv / next / EnvPool, in %."""
    return " / ".join(
        f"{100 * r['ended'][k]:.1f}" if k in r["ended"] else "-" for k in ("unienv", "next", "envpool")
    )


def many_line(r: dict) -> str:
    return (
        f"{r['task']:<26} {r['num_envs']:>8} {r['unienv_sps']:>11,.0f} {r['next_sps']:>11,.0f} "
        f"{ended_cell(r):>16} {_pair(r.get('unienv_over_envpool')):>14} "
        f"{_pair(r.get('next_over_envpool')):>13} {_pair(r.get('raw_over_envpool')):>13} "
        f"{_pair(r.get('raw_next_over_envpool')):>16} {_pair(r['unienv_over_sync']):>13}"
    )


DMC_HEADER = f"{'task':<26} {'dm_control us':>13} {'single us':>9} {'single/dm_control':>17}"


def dmc_line(r: dict) -> str:
    return (
        f"{r['task']:<26} {r['dm_control_us']:>13.1f} {r['single_us']:>9.1f} "
        f"{_pair(r['single_time_ratio']):>17}"
    )


def run(tasks: list[str], num_envs: list[int], seconds: float, rounds: int, emit: Callable) -> list[dict]:
    """Every row: at 1 env (if 1 is in num_envs), then at each other count; `emit(rows)` after each.
    The DeepMind Control tasks among `tasks` run at one env beside dm_control, after the others."""
    rows: list[dict] = []
    dmc = [t for t in tasks if t.startswith("dmc_")]
    tasks = [t for t in tasks if t not in dmc]
    if 1 in num_envs and tasks:
        print("\none env: step time (us, median) and its ratio to Gymnasium v5's (min / median of rounds)")
        print(ONE_HEADER)
        for task in tasks:
            rows.append(measure_one(task, seconds, rounds))
            print(one_line(rows[-1]), flush=True)
            emit(rows)
    for n in (n for n in num_envs if n > 1):
        print(
            f"\n{n} envs: env-steps/s over EnvPool's and SyncVectorEnv's (min / median of rounds); "
            "ended %: of env-steps, unienv / next / envpool"
        )
        print(MANY_HEADER)
        for task in tasks:
            rows.append(measure_many(task, n, seconds, rounds))
            print(many_line(rows[-1]), flush=True)
            emit(rows)
    if dmc:
        print(
            "\nDeepMind Control, one env: step time (us, median), unienv's over dm_control's (min / median)"
        )
        print(DMC_HEADER)
        for task in dmc:
            rows.append(measure_dmc(task, seconds, rounds))
            print(dmc_line(rows[-1]), flush=True)
            emit(rows)
    return rows
