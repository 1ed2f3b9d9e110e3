"""Benchmark: the raw engine loop and unienv's backend and env, side by side in one run.

    python -m unienv.bench --task ant --backend mujoco --num-envs 1 64 256 1024
    python -m unienv.bench --task cartpole ant --backend mjwarp --num-envs 4096 16384
    python -m unienv.bench --task all --backend genesis   # every task the backend runs
    python -m unienv.bench --backend mjwarp --device cuda --json bench.json   # rows as JSON too
    python -m unienv.bench --peers   # beside Gymnasium and EnvPool on the v5 tasks (bench_peers)
    python -m unienv.bench pixels --task dmc_cheetah_run   # from pixels, beside dm_control (bench_pixels)

For each task and num_envs it times these loops on the same model, interleaved
in rounds (the best round of each counts, which damps a shared machine's noise),
each loop in each round the same number of calls from the same start, so that all
of them simulate the same transitions (see Replay below):

  raw        the engine alone: write restarted envs' states (on MuJoCo after
             resetting them, solver warm start included; on MuJoCo Warp after
             clearing their warm start), write ctrl, step `decimation` times,
             read qpos/qvel
  backend    unienv's backend: set_state_tensor of restarted envs,
             step_tensor(ctrl, decimation) and its state views
  reads      the backend loop plus the task's read of the state: the derived
             quantities it reads (body poses, contact forces, cfrc_ext) at the
             new state, which on MuJoCo cost forward stages the raw step skips,
             and its gathers; reads/raw bounds what env/raw can reach
  task       the reads loop plus the task's own math on each reading (control,
             reward, termination, memory, observation, as the env calls them):
             task/raw bounds env/raw whatever the env layer does, and env/task
             is the env layer's own share (its checks, autoreset, statistics)
  env        unienv's VectorEnv: step(actions) -> obs, reward, done, autoreset
  env eager  the same env with cuda_graph=False, where the backend can replay the
             env step as one CUDA graph (Capabilities.cuda_graph: mjwarp on CUDA);
             `env` is then the graph replay, and graph/eager compares the two

Raw, backend and reads replay the env's own transitions (`Replay`: 64 env steps of the
bench's random actions from `reset(seed=0)`, recorded before timing): each call writes
the states of the envs that restarted before that step, as a user's loop resets envs
and writes their states, and the controls the env wrote, so that the loops simulate
the same motions, envs ending and restarting among them. Each timed run starts at
the first recorded step, and the env at `reset(seed=0)` again (every 64 calls), so
that no loop is timed on a cheaper part of the episodes than another (a robot
falling from its standing pose costs up to a third more per step than the same robots
later on: timed on different parts, the ratios measured the episode, not unienv).
The number of calls is the one that takes about `seconds` at the recorded rate.

It prints, one table per task, env-steps/s, the ratios to raw, and the time the
backend and the env add to each call (one batched env step) over raw, in µs.
The raw loops do what a user's own loop would do, and no more (no extra
synchronisation); the timer waits for queued GPU work once per round. A task the
backend refuses at construction is skipped with the reason. torch runs on one
CPU thread by default: the engine's thread pool already uses every core, and
torch's own pool competing with it costs the env up to 20%. `--json PATH`
writes every row (and every skipped task) to PATH, rewritten after each row, so
a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import sys
import time
from collections.abc import Callable

import torch
import yaml

import unienv
from unienv import backends
from unienv.bench import peers as bench_peers
from unienv.bench import pixels as bench_pixels
from unienv.bench.peers import DMC_PEER_TASKS, PEER_TASKS
from unienv.bench.replay import REPLAY_STEPS, Replay
from unienv.errors import ArgumentError, CapabilityError, unknown_name
from unienv.tasks import TASKS, option_defaults
from unienv.utils.files import write_json


def _rate(start: Callable[[], object], step: Callable[[], object], calls: int, device: torch.device) -> float:
    """Calls per second of `calls` calls of step after start() (queued GPU work included)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    start()
    sync()
    begin = time.perf_counter()
    for _ in range(calls):
        step()
    sync()
    return calls / (time.perf_counter() - begin)


def measure(
    task: str,
    backend: str,
    num_envs: int,
    device: str | None,
    seconds: float,
    rounds: int,
    task_options: dict,
) -> dict:
    """One row: env-steps/s of each loop (best round), the ratios to raw and the µs added per call."""

    def make_env(**options):
        return unienv.make(
            task,
            backend=backend,
            num_envs=num_envs,
            device=device,
            seed=0,
            task_options=task_options,
            **options,
        )

    # the env first: a backend that refuses the task does so here, before anything is built
    env = make_env()
    graph = env.backend.get_capabilities().cuda_graph  # the env step is replayed as one CUDA graph
    eager = make_env(cuda_graph=False) if graph else None
    shape = (num_envs, *env.single_action_space.shape)
    actions = torch.zeros(shape, device=env.device).uniform_(-1, 1)
    env.reset(seed=0)
    begin = time.perf_counter()
    replay = Replay(env, actions, REPLAY_STEPS)
    n_calls = max(1, round(seconds * REPLAY_STEPS / (time.perf_counter() - begin)))
    the_task = env.task  # its scene: a terrain task writes its own
    sim = backends.create(
        backend,
        env.backend.scene,
        num_envs,
        the_task.sim_dt,
        device=device,
        substep_reads=the_task.substep_reads,
    )  # reads as the env's task reads them
    sim.materialize()
    raw = backends.raw_loop(backend)(sim, the_task.decimation, replay)
    writes, controls = replay.on(sim.device, sim.get_capabilities().dtype)
    views = sim.get_state_views()
    reader = sim.host_reads() if the_task.xp.name == "numpy" else sim  # as the env's task reads

    def backend_step() -> None:
        i = replay.next()
        if writes[i] is not None:  # the envs that restarted
            sim.set_state_tensor(*writes[i])
        sim.step_tensor(controls[i], the_task.decimation)
        views["qpos"], views["qvel"]

    def reads_step() -> None:
        backend_step()
        the_task.read(reader)  # set up on the env's backend: the same scene, the same ids

    # the task's math on the env's memory after its reset and the bench's actions, in its namespace
    memory, task_actions = env._memory, env._path.array(actions)
    before = the_task.read(env.backend)

    def task_step() -> None:
        nonlocal before
        backend_step()
        s = the_task.read(reader)
        the_task.control(task_actions, before, memory)
        the_task.reward(s, before, task_actions, memory)
        the_task.terminated(s, memory)
        the_task.remember(s, task_actions, memory)
        the_task.observe(s, memory)
        before = s

    def env_loop(e) -> tuple[Callable[[], object], Callable[[], object]]:
        """(start, step) of e's loop: from reset(seed=0), the replay's start (untimed at the
        start, timed every REPLAY_STEPS calls after it)."""
        count = itertools.count()

        def start() -> None:
            nonlocal count
            e.reset(seed=0)
            count = itertools.count()

        def step() -> None:
            i = next(count)
            if i and i % REPLAY_STEPS == 0:
                e.reset(seed=0)
            e.step(actions)

        return start, step

    loops = {name: (replay.restart, loop) for name, loop in (("raw", raw), ("backend", backend_step))}
    loops["reads"] = (replay.restart, reads_step)
    loops["task"] = (replay.restart, task_step)
    for name, e in (("env", env), ("env_eager", eager)):
        if e is not None:
            e.reset()
            for _ in range(3):  # warm-up: the graph is captured after two eager steps
                e.step(actions)
            loops[name] = env_loop(e)

    best = dict.fromkeys(loops, 0.0)
    for _ in range(rounds):
        for name, (start, loop) in loops.items():
            best[name] = max(best[name], _rate(start, loop, n_calls, sim.device))
    captured = graph and getattr(env, "_graph", None) is not None  # False if the capture failed
    for e in (sim, env, eager):
        if e is not None:
            e.close()
    calls = best
    row = {
        "task": task,
        "backend": backend,
        "device": str(sim.device),
        "num_envs": num_envs,
        "task_options": task_options,
        **{f"{k}_sps": v * num_envs for k, v in calls.items()},
        "backend_ratio": calls["backend"] / calls["raw"],
        "reads_ratio": calls["reads"] / calls["raw"],
        "task_ratio": calls["task"] / calls["raw"],
        "env_ratio": calls["env"] / calls["raw"],
        "backend_overhead_us": 1e6 * (1 / calls["backend"] - 1 / calls["raw"]),
        "env_overhead_us": 1e6 * (1 / calls["env"] - 1 / calls["raw"]),
        "cuda_graph": captured,  # whether `env` ran as a graph replay
    }
    if eager is not None:
        row["env_eager_ratio"] = calls["env_eager"] / calls["raw"]
        row["env_eager_overhead_us"] = 1e6 * (1 / calls["env_eager"] - 1 / calls["raw"])
        row["graph_eager_ratio"] = calls["env"] / calls["env_eager"]
    return row


def _refusal(error: Exception) -> bool:
    """Whether `error` is a backend refusing a task at construction (a missing capability or
    an MJCF feature it cannot simulate), rather than a mistake in the arguments."""
    return isinstance(error, CapabilityError) or (
        isinstance(error, ArgumentError) and str(error).startswith("scene:")
    )


HEADER = (
    f"{'num_envs':>8} {'raw steps/s':>12} {'backend':>12} {'env':>12} {'backend/raw':>11} {'reads/raw':>9} "
    f"{'task/raw':>8} {'env/raw':>8} {'backend +us':>11} {'env +us':>9}"
)
EAGER_HEADER = f" {'env eager':>12} {'eager/raw':>9} {'graph/eager':>11}"


def _line(r: dict) -> str:
    """A row of the table: the eager columns where the env step runs as a CUDA graph."""
    line = (
        f"{r['num_envs']:>8} {r['raw_sps']:>12,.0f} {r['backend_sps']:>12,.0f} {r['env_sps']:>12,.0f} "
        f"{r['backend_ratio']:>11.1%} {r['reads_ratio']:>9.1%} {r['task_ratio']:>8.1%} {r['env_ratio']:>8.1%} "
        f"{r['backend_overhead_us']:>11.1f} {r['env_overhead_us']:>9.1f}"
    )
    if "env_eager_sps" in r:
        line += f" {r['env_eager_sps']:>12,.0f} {r['env_eager_ratio']:>9.1%} {r['graph_eager_ratio']:>11.2f}"
    return line


def _write_json(path: str, meta: dict, rows: list[dict], skipped: list[dict]) -> None:
    """The run's rows as JSON, replaced whole (a reader never sees half a file)."""
    write_json(path, {"meta": meta, "rows": rows, "skipped": skipped}, indent=1)


def main(argv: list[str] | None = None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pixels"]:  # python -m unienv.bench pixels: a DMC task from pixels, beside dm_control
        return bench_pixels.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m unienv.bench", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--task",
        nargs="+",
        default=None,
        help="task names, or `all` (every task the backend runs); default ant, with --peers all 8 v5 tasks "
        "and 3 DeepMind Control tasks",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="time unienv beside Gymnasium v5 and EnvPool (mujoco backend; unienv.bench.peers)",
    )
    parser.add_argument("--backend", default="mujoco", choices=sorted(backends.BACKENDS))
    parser.add_argument(
        "--num-envs", type=int, nargs="+", default=None, help="default 1 64 256 1024; with --peers 1 256"
    )
    parser.add_argument("--device", default=None)
    parser.add_argument(
        "--seconds", type=float, default=None, help="per loop per round (default 1; with --peers 0.3)"
    )
    parser.add_argument("--rounds", type=int, default=None, help="default 3; with --peers 10")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch's CPU threads (default 1: on the CPU the engine's threads already use the cores)",
    )
    parser.add_argument(
        "--task-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a task constructor option, YAML-typed (e.g. include_cfrc_ext_in_observation=false); "
        "it goes to every selected task whose constructor takes it",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every row to PATH as JSON")
    args = parser.parse_args(argv)
    dmc_peers = [t for t in DMC_PEER_TASKS if t in TASKS]  # where dm-control is installed
    everything = [*PEER_TASKS, *dmc_peers] if args.peers else list(TASKS)
    if args.task in (None, ["all"]):
        tasks = everything if args.peers or args.task else ["ant"]
    else:
        tasks = args.task
    for task in tasks:
        if task not in everything:  # one line with "did you mean", as the other commands say it
            raise unknown_name("--task", task, ["all", *everything])
    defaults = ([1, 256], 0.3, 10) if args.peers else ([1, 64, 256, 1024], 1.0, 3)
    args.num_envs = args.num_envs or defaults[0]
    args.seconds = args.seconds if args.seconds is not None else defaults[1]
    args.rounds = args.rounds or defaults[2]
    if args.peers and (args.backend != "mujoco" or args.task_option):
        parser.error("--peers: compares the mujoco backend with default task options")
    task_options = {}
    for option in args.task_option:
        key, sep, value = option.partition("=")
        if not sep:
            parser.error(f"--task-option: expected KEY=VALUE, got {option!r}")
        task_options[key] = yaml.safe_load(value)
    takes = {t: option_defaults(t) for t in tasks}
    unused = [k for k in task_options if not any(k in takes[t] for t in tasks)]
    if unused:
        parser.error(f"--task-option: no selected task takes {unused}")
    if min(args.num_envs) < 1:
        parser.error(f"--num-envs: expected positive counts, got {args.num_envs}")
    torch.set_num_threads(args.torch_threads)
    card = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": args.backend,
        "device": args.device,
        "gpu": card,
        "cpu_threads": len(os.sched_getaffinity(0)),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "command": " ".join(["python -m unienv.bench", *(sys.argv[1:] if argv is None else argv)]),
    }
    print(
        f"{args.backend}: {meta['cpu_threads']} CPU threads{f', {card}' if card else ''}, "
        f"torch {torch.__version__} on {meta['torch_threads']} thread(s)"
    )
    if args.peers:
        meta["peers"] = True
        emit = (lambda rows: _write_json(args.json, meta, rows, [])) if args.json else (lambda rows: None)
        return bench_peers.run(tasks, args.num_envs, args.seconds, args.rounds, emit)
    rows, skipped = [], []
    for task in tasks:
        options = {k: v for k, v in task_options.items() if k in takes[task]}
        print(f"\n{task}" + "".join(f" {k}={v}" for k, v in options.items()), flush=True)
        try:
            for n in args.num_envs:
                r = measure(task, args.backend, n, args.device, args.seconds, args.rounds, options)
                if n == args.num_envs[0]:
                    if "env_eager_sps" not in r:
                        print(
                            f"(one-graph env step: does not apply, {args.backend} on {r['device']} "
                            "cannot replay a CUDA graph; env is the eager step)"
                        )
                    print(HEADER + (EAGER_HEADER if "env_eager_sps" in r else ""))
                rows.append(r)
                print(_line(r), flush=True)
                if "env_eager_sps" in r and not r["cuda_graph"]:
                    print("  (the CUDA graph capture failed, see the warning: env ran eagerly)", flush=True)
                if args.json:
                    _write_json(args.json, meta, rows, skipped)
        except Exception as e:
            if not _refusal(e):
                raise
            print(f"skipped: the {args.backend} backend refuses {task}: {e}", flush=True)
            skipped.append({"task": task, "reason": str(e)})
    if args.json:
        _write_json(args.json, meta, rows, skipped)
    return rows
