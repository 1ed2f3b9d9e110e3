"""`python -m unienv.viewer`: what watching costs a running env, measured in one run.

The env steps under random actions (the loop that training drives) for a few seconds, headless,
then with a training watcher (unienv.viewer.live.Watch) and no page open, then with a page open
(`remote_page` in another process: what a browser on another machine costs the server, which
sends it every frame; the browser's own drawing is not on this machine); the rounds interleave,
and each setting's best round is printed as env steps/s and as a ratio to headless. On a shared
machine those ratios are noisy (other jobs take the cores in turns); beside them is the CPU time
that the viewer's threads (the watcher's and the page server's) used, as a share of one core: what
watching adds to the run whatever else the machine does.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import threading
import time

import torch

import unienv
from unienv.training.rollout import make_policy
from unienv.viewer.live import Watch
from unienv.viewer.server import Options, check


def _threads_cpu_s() -> float:
    """CPU seconds used so far by the process's Python threads other than this one (the
    watcher's and the page server's; the engine's own worker threads are not Python threads)."""
    here = threading.get_ident()
    total = 0.0
    for thread in threading.enumerate():
        if thread.ident is not None and thread.ident != here:
            with contextlib.suppress(OSError, ValueError):  # it ended since
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return total


def _steps_per_s(env, policy, seconds: float) -> tuple[float, float]:
    """Env steps per second, and the other Python threads' CPU seconds per second, both of wall time."""
    steps, start, others = 0, time.perf_counter(), _threads_cpu_s()
    while time.perf_counter() - start < seconds:
        env.step(policy(None))
        steps += 1
    wall = time.perf_counter() - start
    return steps * env.num_envs / wall, (_threads_cpu_s() - others) / wall


# the camera a page announces on connecting: viser sends it frames, and acts on its clicks, after it
PAGE_CAMERA = {"type": "ViewerCameraMessage", "wxyz": (1.0, 0.0, 0.0, 0.0), "position": (3.0, 3.0, 3.0)}
PAGE_CAMERA |= {"fov": 1.0, "near": 0.01, "far": 100.0, "image_height": 600, "image_width": 800}
PAGE_CAMERA |= {"look_at": (0.0, 0.0, 0.0), "up_direction": (0.0, 0.0, 1.0)}


def remote_page(url: str, seconds: float) -> int:
    """Be a page at url for `seconds`, as viser's client is: announce a camera, take every message.
    Returns the bytes received."""
    import msgspec
    import viser
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    received, end = 0, time.monotonic() + seconds
    with connect(url, subprotocols=[f"viser-v{viser.__version__}"], max_size=None) as ws:
        ws.send(msgspec.msgpack.encode(PAGE_CAMERA))
        while (left := end - time.monotonic()) > 0:
            try:
                received += len(ws.recv(timeout=left))
            except (TimeoutError, ConnectionClosed):
                break
    return received


def main(argv=None) -> dict[str, float]:
    parser = argparse.ArgumentParser(prog="python -m unienv.viewer", description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="quadruped")
    parser.add_argument("--backend", default="mujoco")
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=8.0, help="per round and setting")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--page", help=argparse.SUPPRESS)  # the page's process: remote_page(PAGE)
    args = parser.parse_args(argv)
    if args.page:
        return {"received": remote_page(args.page, args.seconds)}
    torch.set_num_threads(1)
    env = unienv.make(args.task, backend=args.backend, num_envs=args.num_envs, seed=0)
    env.reset(seed=0)
    policy = make_policy("random", env)
    options = Options(port=args.port)
    settings = ("headless", "watched, no page", "watched, a page open")
    best = dict.fromkeys(settings, 0.0)
    viewer_cpu = dict.fromkeys(settings, 0.0)  # the most the viewer's threads took in a round

    def measure(setting: str) -> None:
        rate, threads_cpu = _steps_per_s(env, policy, args.seconds)
        best[setting], viewer_cpu[setting] = max(best[setting], rate), max(viewer_cpu[setting], threads_cpu)

    fps = 0.0
    for _ in range(args.rounds):
        measure("headless")
        watch = Watch(env, check(options, env.num_envs))
        try:
            measure("watched, no page")
            page = subprocess.Popen(
                [sys.executable, "-m", "unienv.viewer", "--page", f"ws://127.0.0.1:{args.port}"]
                + ["--seconds", str(args.seconds + 30.0)]
            )
            deadline = time.monotonic() + 60.0
            while not watch.viewer.watched and time.monotonic() < deadline:  # it starts and connects
                time.sleep(0.1)
            frames, start = watch.frames, time.perf_counter()
            measure("watched, a page open")
            fps = max(fps, (watch.frames - frames) / (time.perf_counter() - start))
            page.terminate()
            page.wait(timeout=60)
        finally:
            watch.close()
    env.close()
    print(
        f"{args.task} on {args.backend}, {args.num_envs} envs, random actions, best of {args.rounds} rounds:"
    )
    for name, rate in best.items():
        if rate:
            ratio, cpu = rate / best["headless"], 100 * viewer_cpu[name]
            print(
                f"  {name:22s} {rate:10.0f} env steps/s  {ratio:.3f} of headless  viewer {cpu:4.1f}% of a core"
            )
    print(f"  frames sent to the page: {fps:.1f}/s of {len(options.envs) or 4} envs")
    return best | {f"{name}, viewer cpu": share for name, share in viewer_cpu.items()} | {"frames_per_s": fps}


if __name__ == "__main__":
    main()
