"""Benchmark: the raw engine loop and unienv's backend and env, side by side in one run.

    python -m unienv.bench --task ant --backend mujoco --num-envs 1 64 256 1024

For each num_envs it times three loops on the same model, interleaved in
rounds (the best round of each counts, which damps a shared machine's noise):

  raw      the engine alone: write ctrl, step `decimation` times, read qpos/qvel
  backend  unienv's backend: step_tensor(ctrl, decimation) and its state views
  env      unienv's VectorEnv: step(actions) -> obs, reward, done, autoreset

and prints env-steps/s, the ratios to raw, and the backend's added time per call.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
import torch

import unienv
from unienv import backends
from unienv.tasks import task_class


def raw_mujoco(
    scene: str, sim_dt: float, num_envs: int, decimation: int, device: str | None
) -> Callable[[], None]:
    """mujoco.batch alone: the loop unienv's mujoco backend wraps."""
    import mujoco
    from mujoco import batch as mjbatch

    model = mujoco.MjModel.from_xml_path(scene)
    model.opt.timestep = sim_dt
    batch = mjbatch.Batch(model, nsim=num_envs, nthread=len(os.sched_getaffinity(0)))
    ctrl, qpos, qvel = batch.bind("ctrl"), batch.bind("qpos"), batch.bind("qvel")
    u = np.random.default_rng(0).uniform(-1, 1, ctrl.shape)

    def step() -> None:
        ctrl[:] = u
        batch.step(nstep=decimation)
        qpos.copy(), qvel.copy()

    return step


def raw_mjwarp(
    scene: str, sim_dt: float, num_envs: int, decimation: int, device: str | None
) -> Callable[[], None]:
    """mujoco_warp alone: write ctrl, replay `decimation` captured steps, read qpos/qvel."""
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    model = mujoco.MjModel.from_xml_path(scene)
    model.opt.timestep = sim_dt
    wp.config.quiet = True
    wp_device = wp.get_device(device or "cuda")
    with wp.ScopedDevice(wp_device):
        m = mjw.put_model(model)
        d = mjw.make_data(model, nworld=num_envs)
        ctrl, qpos, qvel = wp.to_torch(d.ctrl), wp.to_torch(d.qpos), wp.to_torch(d.qvel)
        u = torch.empty_like(ctrl).uniform_(-1, 1)
        mjw.step(m, d)  # compile before capturing
        with wp.ScopedCapture() as capture:
            for _ in range(decimation):
                mjw.step(m, d)
    # launched on torch's stream, so the ctrl write and the qpos/qvel reads are ordered with it
    stream = wp.stream_from_torch(torch.cuda.current_stream(wp_device.ordinal)) if wp_device.is_cuda else None

    def step() -> None:
        ctrl.copy_(u)
        wp.capture_launch(capture.graph, stream=stream)
        qpos.clone(), qvel.clone()
        wp.synchronize_device(wp_device)  # as the backend's finiteness check of ctrl waits once a call

    return step


RAW_LOOPS: dict[str, Callable[..., Callable[[], None]]] = {"mujoco": raw_mujoco, "mjwarp": raw_mjwarp}


def _rate(step: Callable[[], None], seconds: float) -> float:
    """Calls per second of step over at least `seconds`."""
    step()
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        step()
        calls += 1
    return calls / elapsed


def measure(task: str, backend: str, num_envs: int, device: str | None, seconds: float, rounds: int) -> dict:
    the_task = task_class(task)()
    raw = RAW_LOOPS[backend](the_task.scene, the_task.sim_dt, num_envs, the_task.decimation, device)
    sim = backends.create(backend, the_task.scene, num_envs, the_task.sim_dt, device=device)
    ctrl = torch.zeros(num_envs, sim.nu, dtype=sim.get_capabilities().dtype, device=sim.device).uniform_(
        -1, 1
    )
    views = sim.get_state_views()

    def backend_step() -> None:
        sim.step_tensor(ctrl, the_task.decimation)
        views["qpos"], views["qvel"]

    env = unienv.make(task, backend=backend, num_envs=num_envs, device=device, seed=0)
    env.reset()
    shape = (num_envs, *env.single_action_space.shape)
    actions = torch.zeros(shape, device=env.device).uniform_(-1, 1)

    def env_step() -> None:
        env.step(actions)

    best = {"raw": 0.0, "backend": 0.0, "env": 0.0}
    loops = {"raw": raw, "backend": backend_step, "env": env_step}
    for _ in range(rounds):
        for name, loop in loops.items():
            best[name] = max(best[name], _rate(loop, seconds))
    sim.close()
    env.close()
    calls = best
    return {
        "num_envs": num_envs,
        **{f"{k}_sps": v * num_envs for k, v in calls.items()},
        "backend_ratio": calls["backend"] / calls["raw"],
        "env_ratio": calls["env"] / calls["raw"],
        "backend_overhead_us": 1e6 * (1 / calls["backend"] - 1 / calls["raw"]),
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m unienv.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="ant")
    parser.add_argument("--backend", default="mujoco", choices=sorted(RAW_LOOPS))
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 256, 1024])
    parser.add_argument("--device", default=None)
    parser.add_argument("--seconds", type=float, default=1.0, help="per loop per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if min(args.num_envs) < 1:
        parser.error(f"--num-envs: expected positive counts, got {args.num_envs}")
    print(
        f"{args.task} on {args.backend}, {len(os.sched_getaffinity(0))} CPU threads, torch {torch.__version__}"
    )
    header = f"{'num_envs':>8} {'raw steps/s':>12} {'backend':>12} {'env':>12} {'backend/raw':>11} {'env/raw':>8} {'+us/call':>9}"
    print(header)
    rows = []
    for n in args.num_envs:
        r = measure(args.task, args.backend, n, args.device, args.seconds, args.rounds)
        rows.append(r)
        print(
            f"{n:>8} {r['raw_sps']:>12,.0f} {r['backend_sps']:>12,.0f} {r['env_sps']:>12,.0f} "
            f"{r['backend_ratio']:>11.1%} {r['env_ratio']:>8.1%} {r['backend_overhead_us']:>9.1f}",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
