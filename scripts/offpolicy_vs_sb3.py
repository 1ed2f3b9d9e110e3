"""The off-policy learner against Stable-Baselines3's SAC at equal env steps: a sanity check of
the implementation (docs/laptop.md).

    python scripts/offpolicy_vs_sb3.py --task hopper --env-steps 50000 --seeds 0 1 2 --json hopper_vs_sb3.json

For each seed: train.py's run with the preset (`train=crossq_hopper`: CrossQ, one env, one
update per env step) and SB3's SAC with its defaults (one env through unienv's SB3 adapter,
256x256 networks, batch 256, lr 3e-4, one update per env step, 100 random steps first) on the
same unienv task for the same env steps; then each final policy, deterministic, on 10 episodes of
fresh envs (`--eval-episodes`). Prints each run's training curve (mean return of the episodes ended in each tenth of
the run) and the final returns, their medians over the seeds, and writes them all as JSON.
Timings are given but are not the point: run the pairs one after the other on a quiet machine
if you want them to mean something.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import unienv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def evaluate(task: str, act, episodes: int, seed: int) -> float:
    """Mean return of `act` (NumPy obs -> action) over the first episode of `episodes` fresh envs."""
    env = unienv.make(task, num_envs=episodes, seed=seed)
    obs, _ = env.reset(seed=seed)
    returns = torch.full((episodes,), float("nan"), dtype=torch.float64)
    for _ in range(env.max_episode_steps):
        obs, _, _, _, info = env.step(torch.as_tensor(act(obs.float().numpy())))
        if "final_info" in info:
            ended = info["final_info"]["_episode_stats"] & returns.isnan()
            returns[ended] = info["final_info"]["episode_stats"]["r"].double()[ended]
        if not returns.isnan().any():
            break
    env.close()
    return float(returns.nanmean())


def binned(steps: list[int], returns: list[float], total: int, bins: int = 10) -> list[float | None]:
    """Mean return of the episodes that ended in each of `bins` equal parts of the run."""
    out = []
    for b in range(bins):
        sel = [
            r for s, r in zip(steps, returns, strict=True) if b * total / bins < s <= (b + 1) * total / bins
        ]
        out.append(float(np.mean(sel)) if sel else None)
    return out


def ours(task: str, env_steps: int, seed: int, preset: str, episodes: int) -> dict:
    """train.py's run; its curve rows give the returns of the episodes ended in each."""
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        command = [sys.executable, os.path.join(ROOT, "train.py"), f"train={preset}", f"task={task}",
                   f"seed={seed}", f"train.loop.env_steps={env_steps}", f"train.loop.log_every={env_steps // 10}",
                   "train.eval_steps=0", f"hydra.run.dir={run_dir}"]  # fmt: skip
        subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        with open(os.path.join(run_dir, "metrics.json")) as f:
            curve = json.load(f)["curve"]
        from unienv.training.policy import load_policy

        policy, _ = load_policy(os.path.join(run_dir, "policy.safetensors"))
    final = evaluate(task, lambda o: policy(torch.as_tensor(o)).detach().numpy(), episodes, 10_000 + seed)
    return {"curve": [row["mean_return"] for row in curve], "final_return": final, "seconds": seconds}


def sb3(task: str, env_steps: int, seed: int, episodes: int) -> dict:
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    from unienv.wrappers.sb3 import Sb3VecEnv

    steps, returns = [], []

    class Episodes(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    steps.append(self.num_timesteps)
                    returns.append(info["episode"]["r"])
            return True

    torch.set_num_threads(1)
    venv = Sb3VecEnv(unienv.make(task, num_envs=1, seed=seed))
    model = SAC("MlpPolicy", venv, seed=seed, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(env_steps, callback=Episodes())
    seconds = time.perf_counter() - start
    venv.close()
    final = evaluate(task, lambda o: model.predict(o, deterministic=True)[0], episodes, 10_000 + seed)
    return {"curve": binned(steps, returns, env_steps), "final_return": final, "seconds": seconds}


def plot(results: dict, path: str) -> None:
    """Each learner's curve per seed (thin) and their mean (thick) over env steps, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = results["env_steps"]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    for name, color in (("unienv", "tab:blue"), ("sb3_sac", "tab:orange")):
        curves = [r["curve"] for r in results["runs"] if r["learner"] == name]
        x = [steps * (i + 1) / len(curves[0]) for i in range(len(curves[0]))]
        for curve in curves:
            ax.plot(x, [np.nan if r is None else r for r in curve], color=color, alpha=0.3, lw=1)
        mean = np.nanmean([[np.nan if r is None else r for r in c] for c in curves], 0)
        label = {"unienv": f"unienv ({results['preset']})", "sb3_sac": "Stable-Baselines3 SAC"}[name]
        ax.plot(x, mean, color=color, lw=2.5, label=label)
    ax.set_xlabel("env steps")
    ax.set_ylabel("mean episode return")
    ax.set_title(f"{results['task']}: {len(curves)} seeds, equal env steps")
    ax.legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="hopper")
    p.add_argument("--preset", default="crossq_hopper", help="train.py's off-policy preset")
    p.add_argument("--env-steps", type=int, default=50_000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--eval-episodes", type=int, default=10, help="fresh episodes each final policy plays")
    p.add_argument("--json", default=None, help="write the results there")
    p.add_argument("--plot", default=None, help="draw the curves there (PNG; the plot extra)")
    args = p.parse_args(argv)
    results = {"task": args.task, "preset": args.preset, "env_steps": args.env_steps, "runs": []}
    for seed in args.seeds:
        for name in ("unienv", "sb3_sac"):
            run = (
                ours(args.task, args.env_steps, seed, args.preset, args.eval_episodes)
                if name == "unienv"
                else sb3(args.task, args.env_steps, seed, args.eval_episodes)
            )
            result = {"learner": name, "seed": seed, **run}
            results["runs"].append(result)
            curve = " ".join("-" if r is None else f"{r:.0f}" for r in result["curve"])
            print(
                f"{name:8s} seed {seed}: final {result['final_return']:.1f} ({result['seconds']:.0f} s); curve {curve}",
                flush=True,
            )
    for name in ("unienv", "sb3_sac"):
        finals = [r["final_return"] for r in results["runs"] if r["learner"] == name]
        results[f"{name}_median"] = float(np.median(finals))
        print(f"{name}: median final return {np.median(finals):.1f} over {len(finals)} seeds")
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        plot(results, args.plot)
    return results


if __name__ == "__main__":
    main()
