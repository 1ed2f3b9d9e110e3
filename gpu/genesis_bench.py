"""Raw Genesis against unienv's genesis backend and env, on one model, in one run.

    python gpu/genesis_bench.py --num-envs 1024 4096 16384 [--device cuda] [--seconds 2]

For each num_envs, on the ant task (Gymnasium's ant.xml, dt 0.01, decimation 5):

  raw      Genesis alone, built with the backend's own options: write the 8 motor
           controls (control_dofs_position on Genesis's MJCF actuators), step 5
           times, read qpos and qvel (get_qpos, get_dofs_velocity)
  backend  unienv's backend: step_tensor(ctrl, 5), then its qpos/qvel views
  env      unienv.make("ant", backend="genesis"): step(actions) -> obs, reward,
           terminated, truncated, info, with autoreset

It prints env-steps/s for each loop and the ratios to raw, and writes them as
JSON to $OUT/genesis_bench.json (or ./genesis_bench.json). The loops are timed
in interleaved rounds (best round counts) after a warm-up, with a device sync
before every clock read.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _rate(step, seconds: float, num_envs: int, device: torch.device) -> float:
    step()
    _sync(device)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        calls += 1
        if calls % 10 == 0:
            _sync(device)
    _sync(device)
    return calls * num_envs / (time.perf_counter() - start)


def raw_loop(backend, decimation: int):
    """Genesis's own API on a second scene built exactly as the backend builds its own."""
    import genesis as gs

    scene = gs.Scene(
        sim_options=gs.options.SimOptions(
            dt=backend.dt, gravity=tuple(float(g) for g in backend.info.gravity)
        ),
        rigid_options=gs.options.RigidOptions(**backend._rigid_options),
        profiling_options=gs.options.ProfilingOptions(show_FPS=False),
        show_viewer=False,
    )
    robot = scene.add_entity(gs.morphs.MJCF(file=backend.scene, default_armature=None, align=False))
    scene.build(n_envs=backend.num_envs)
    dofs = [int(backend.info.joint_dof_adr[j]) for j in backend.info.actuator_joint]
    ctrl = torch.rand(backend.num_envs, len(dofs), device=gs.device, dtype=gs.tc_float) * 2 - 1

    def step() -> None:
        robot.control_dofs_position(ctrl, dofs)
        for _ in range(decimation):
            scene.step(update_visualizer=False)
        robot.get_qpos()
        robot.get_dofs_velocity()

    return step, scene


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1024, 4096, 16384])
    parser.add_argument("--device", default=None)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from unienv.tasks import task_class

    import unienv
    from unienv.backends import create

    task = task_class("ant")()
    rows = []
    for n in args.num_envs:
        t0 = time.perf_counter()
        backend = create("genesis", task.scene, n, task.sim_dt, device=args.device)
        backend.materialize()
        build_s = time.perf_counter() - t0
        device = backend.device
        raw, raw_scene = raw_loop(backend, task.decimation)
        ctrl = torch.rand(n, backend.nu, device=device, dtype=backend.get_capabilities().dtype) * 2 - 1

        def backend_step(backend=backend, ctrl=ctrl) -> None:
            backend.step_tensor(ctrl, task.decimation)
            views = backend.get_state_views()
            views["qpos"], views["qvel"]

        env = unienv.make("ant", backend="genesis", num_envs=n, device=args.device, seed=0)
        env.reset(seed=0)
        actions = torch.rand(n, 8, device=device) * 2 - 1

        def env_step(env=env, actions=actions) -> None:
            env.step(actions)

        best = {"raw": 0.0, "backend": 0.0, "env": 0.0}
        for _ in range(args.rounds):
            for name, fn in (("raw", raw), ("backend", backend_step), ("env", env_step)):
                best[name] = max(best[name], _rate(fn, args.seconds, n, device))
        row = {
            "num_envs": n,
            "device": str(device),
            "build_s": round(build_s, 1),
            **{f"{k}_env_steps_per_s": round(v) for k, v in best.items()},
            "backend_vs_raw": round(best["backend"] / best["raw"], 3),
            "env_vs_raw": round(best["env"] / best["raw"], 3),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
        env.close()
        backend.close()
        raw_scene.destroy()
    if torch.cuda.is_available():
        for row in rows:
            row["card"] = torch.cuda.get_device_name()
    out = os.environ.get("OUT", ".")
    with open(os.path.join(out, "genesis_bench.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"{'num_envs':>9} {'raw':>12} {'backend':>12} {'env':>12} {'backend/raw':>12} {'env/raw':>8}")
    for r in rows:
        print(
            f"{r['num_envs']:>9} {r['raw_env_steps_per_s']:>12,} {r['backend_env_steps_per_s']:>12,} "
            f"{r['env_env_steps_per_s']:>12,} {r['backend_vs_raw']:>12.3f} {r['env_vs_raw']:>8.3f}"
        )


if __name__ == "__main__":
    main()
