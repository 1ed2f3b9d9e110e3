"""`python -m unienv.bench pixels`: a DMC task from pixels beside dm_control's own, in one run.

    python -m unienv.bench pixels --task dmc_cheetah_run --num-envs 1 16 64 [--look scene learning]
                                  [--memory] [--json PATH]

For each num_envs it times, interleaved in rounds (the best round of each counts):

  dm_control  one `suite.load` env per env, stepped in a Python loop as DrQ-v2 drives it:
              `action_repeat` env steps, then `physics.render(84, 84, camera_id=0)`, then
              the stack of the last `frame_stack` frames (a concatenation, as DrQ-v2's)
  unienv      `unienv.make(task, obs="pixels", num_envs=N, pixels={"look": look})`: one
              batched step, once per look asked for ("scene": dm_control's pixels, and
              "learning": without shadows, reflections and multisampling; both by default)

and prints, per look, pixel env-steps/s (agent steps: one action, its repeats and one
observation), unienv/dm_control, the render's share of unienv's step (the time its steps spent
in the camera's renderer calls, over all its calls) and the render's milliseconds per frame
(that time over the frames drawn: at 1 env, one frame on one render thread). `--memory` also
measures the resident memory that each env adds (N = 4 and 4 + 64 envs, after 5 steps) beside
the bytes its stack of frames holds; `--json PATH` writes the rows, the memory and the machine (the
performance page's tables, scripts/perf_table.py). dm_control is driven on MuJoCo 4 through the test suite's
shim (its index names struct fields MuJoCo 4 removed).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import torch

import unienv
from unienv.render.cameras import LOOKS
from unienv.tasks import task_class
from unienv.utils.files import write_json

SIZE, FRAMES, REPEAT = 84, 3, 2  # DrQ-v2's


def dm_control_suite():
    """dm_control.suite, loadable on MuJoCo 4 (its index names 9 fields MuJoCo 4 removed),
    rendering headless: dm_control picks its GL platform from MUJOCO_GL when it is imported,
    and where that is unset with no display it would take GLFW, which needs one."""
    if not os.environ.get("MUJOCO_GL") and not os.environ.get("DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"  # for dm_control's import alone: unienv's pool chose already
    from dm_control.mujoco.index import sizes

    gone = {
        "mjmodel": ("flex_vertedge", "flex_vertedgeadr", "flex_vertedgenum", "flex_vertmetric"),
        "mjdata": ("flexvert_J", "flexvert_length"),
    }
    gone["mjmodel"] += ("flexvert_J_colind", "flexvert_J_rowadr", "flexvert_J_rownnz")
    for struct, names in gone.items():
        for name in names:
            sizes.array_sizes[struct].pop(name, None)
    from dm_control import suite

    return suite


def _dm_control_loop(task: str, num_envs: int) -> Callable[[], None]:
    suite = dm_control_suite()
    domain = task_class(task).domain
    name = task.removeprefix(f"dmc_{domain}_")
    envs = [suite.load(domain, name, task_kwargs={"random": i}) for i in range(num_envs)]
    stacks = []
    for env in envs:
        env.reset()
        frame = env.physics.render(SIZE, SIZE, camera_id=0)
        stacks.append([frame] * FRAMES)
    spec = envs[0].action_spec()
    actions = np.random.default_rng(0).uniform(spec.minimum, spec.maximum, (64, num_envs, spec.shape[0]))
    step = [0]

    def loop() -> None:
        a = actions[step[0] % 64]
        step[0] += 1
        for i, env in enumerate(envs):
            for _ in range(REPEAT):
                if env.step(a[i]).last():
                    env.reset()
            stacks[i] = [*stacks[i][1:], env.physics.render(SIZE, SIZE, camera_id=0)]
            np.concatenate([f.transpose(2, 0, 1) for f in stacks[i]], 0)

    return loop


def _unienv_loop(task: str, num_envs: int, look: str) -> tuple[Callable, dict, Callable]:
    """unienv's step loop in `look`; the seconds it spends in steps and, within them, in
    rendering, and the frames it draws."""
    env = unienv.make(task, obs="pixels", num_envs=num_envs, seed=0, pixels={"look": look})
    env.reset(seed=0)
    actions = torch.rand((64, *env.action_space.shape), generator=torch.Generator().manual_seed(0)) * 2 - 1
    sensor, step = env.unwrapped._observer.sensor, [0]
    spent = {"step": 0.0, "render": 0.0, "frames": 0}
    draw = sensor.render

    def timed_render(out, *args, **kwargs) -> None:
        start = time.perf_counter()
        draw(out, *args, **kwargs)
        spent["render"] += time.perf_counter() - start
        spent["frames"] += len(out["rgb"])

    sensor.render = timed_render

    def loop() -> None:
        start = time.perf_counter()
        env.step(actions[step[0] % 64])
        spent["step"] += time.perf_counter() - start
        step[0] += 1

    return loop, spent, env.close


def _best(loops: dict[str, Callable], seconds: float, rounds: int) -> dict[str, float]:
    """Best calls per second of each loop over interleaved rounds."""
    best = dict.fromkeys(loops, 0.0)
    for loop in loops.values():
        loop()  # warm: contexts, shaders, textures
    for _ in range(rounds):
        for name, loop in loops.items():
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < seconds or calls < 2:
                loop()
                calls += 1
            best[name] = max(best[name], calls / elapsed)
    return best


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_per_env(task: str, base: int = 4, more: int = 64) -> dict[str, float]:
    """Resident bytes each env adds to a pixel env (after 5 steps), and its frames' bytes."""
    sizes = {}
    for n in (base, base + more):
        gc.collect()
        before = _rss()
        env = unienv.make(task, obs="pixels", num_envs=n, seed=0)
        env.reset(seed=0)
        for _ in range(5):
            obs = env.step(torch.zeros(env.action_space.shape))[0]
        sizes[n] = _rss() - before
        del obs
        env.close()
    return {"rss_per_env": (sizes[base + more] - sizes[base]) / more, "frame_bytes": SIZE * SIZE * 3 * FRAMES}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m unienv.bench pixels", description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="dmc_cheetah_run")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument(
        "--look",
        nargs="+",
        choices=LOOKS,
        default=list(LOOKS),
        help="the camera looks to time unienv in: scene (dm_control's pixels, the default look), "
        "learning (no shadows, reflections or multisampling); default: both",
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="per loop per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="also measure resident memory per env")
    parser.add_argument("--json", metavar="PATH", help="also write the rows to PATH as JSON")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cores = len(os.sched_getaffinity(0))
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "task": args.task,
        "cpu_threads": cores,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "load_average": os.getloadavg()[0],
        "rounds": args.rounds,
        "command": " ".join(["python -m unienv.bench pixels", *(sys.argv[2:] if argv is None else argv)]),
    }
    print(
        f"{args.task} from pixels ({SIZE}x{SIZE}, {FRAMES} frames, action repeat {REPEAT}), "
        f"{meta['date'][:10]}, {cores} cores, MUJOCO_GL={meta['mujoco_gl']}, "
        f"load average {meta['load_average']:.1f}"
    )
    print(
        f"{'envs':>5} {'look':<9} {'dm_control':>11} {'unienv':>9} {'ratio':>6} {'render share':>13} "
        f"{'render ms/frame':>16}   (env-steps/s)"
    )
    rows = []
    for n in args.num_envs:
        unienv_loops = {look: _unienv_loop(args.task, n, look) for look in args.look}
        loops = {"dm_control": _dm_control_loop(args.task, n)} | {k: v[0] for k, v in unienv_loops.items()}
        rates = _best(loops, args.seconds, args.rounds)
        for look, (_, spent, close) in unienv_loops.items():
            close()
            row = {
                "num_envs": n,
                "look": look,
                "dm_control": rates["dm_control"] * n,
                "unienv": rates[look] * n,
                "render_share": spent["render"] / spent["step"],
                "render_ms_per_frame": 1000 * spent["render"] / spent["frames"],
            }
            rows.append(row)
            print(
                f"{n:>5} {look:<9} {row['dm_control']:>11.1f} {row['unienv']:>9.1f} "
                f"{row['unienv'] / row['dm_control']:>5.2f}x {100 * row['render_share']:>12.0f}% "
                f"{row['render_ms_per_frame']:>16.1f}"
            )
    memory = None
    if args.memory:
        memory = memory_per_env(args.task)
        print(
            f"resident memory per env: {memory['rss_per_env'] / 1e3:.0f} kB, its frames "
            f"{memory['frame_bytes'] / 1e3:.1f} kB ({memory['rss_per_env'] / memory['frame_bytes']:.2f}x)"
        )
    if args.json:
        write_json(args.json, {"meta": meta, "rows": rows, "memory": memory}, indent=1)
    return rows if memory is None else [*rows, memory]
