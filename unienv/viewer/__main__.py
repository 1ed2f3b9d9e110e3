"""`python -m unienv.viewer`: what watching costs a running env, measured in one run.

The env steps under random actions (the loop that training drives) for a few seconds, headless,
then with a training watcher (unienv.viewer.live.Watch) and no page open, then with a page open
in headless Chromium where one is installed; the rounds interleave, and each setting's best
round is printed as env steps/s and as a ratio to headless. On a shared machine the ratios are
noisy: read them over several rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time

import torch

import unienv
from unienv.training.rollout import make_policy
from unienv.viewer.live import Watch
from unienv.viewer.server import Options, check


def _steps_per_s(env, policy, seconds: float) -> float:
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(policy(None))
        steps += 1
    return steps * env.num_envs / (time.perf_counter() - start)


def _page(url: str, profile: str):
    """A headless Chromium showing url, or None where none is installed."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        return None
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
    ]
    flags += [
        "--no-first-run",
        "--disable-background-networking",
        "--disable-sync",
        "--disable-component-update",
    ]
    return subprocess.Popen(
        [binary, *flags, f"--user-data-dir={profile}", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main(argv=None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m unienv.viewer", description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped")
    parser.add_argument("--backend", default="mujoco")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=8.0, help="per round and setting")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    env = unienv.make(args.task, backend=args.backend, num_envs=args.num_envs, seed=0)
    env.reset(seed=0)
    policy = make_policy("random", env)
    options = Options(port=args.port)
    best = {"headless": 0.0, "watched, no page": 0.0, "watched, a page open": 0.0}
    with tempfile.TemporaryDirectory() as profile:
        for _ in range(args.rounds):
            best["headless"] = max(best["headless"], _steps_per_s(env, policy, args.seconds))
            watch = Watch(env, check(options, env.num_envs))
            try:
                best["watched, no page"] = max(
                    best["watched, no page"], _steps_per_s(env, policy, args.seconds)
                )
                page = _page(f"http://127.0.0.1:{args.port}/", os.path.join(profile, "p"))
                if page is not None:
                    time.sleep(8.0)  # the page loads and receives the scene
                    rate = _steps_per_s(env, policy, args.seconds)
                    best["watched, a page open"] = max(best["watched, a page open"], rate)
                    page.terminate()
                    page.wait(timeout=10)
            finally:
                watch.close()
    env.close()
    print(
        f"{args.task} on {args.backend}, {args.num_envs} envs, random actions, best of {args.rounds} rounds:"
    )
    for name, rate in best.items():
        if rate:
            print(f"  {name:22s} {rate:10.0f} env steps/s  {rate / best['headless']:.3f} of headless")
    return best


if __name__ == "__main__":
    main()
