"""`python -m unienv sim2sim --task T [--policy P]`: how far each backend is from MuJoCo, measured.

On every installed backend that runs the task, against the mujoco backend:

  state      from identical initial states (the task's reset states, seed 0, copied from the
             mujoco env), the actions the policy takes on the mujoco env replayed open loop,
             the largest |qpos| and |qvel| differences after 1, 10, 100 and 1000 env steps.
             The "float32 floor" row is mujoco itself started from the float32-rounded state:
             the difference a float32 engine cannot help.
  returns    the policy closed loop on each backend (num_envs envs, SAME_STEP autoreset):
             episode return mean, std and the 2.5-97.5 % interval, with DR off and on (a
             generic set: masses, friction, actuator gains x U(0.9, 1.1)); a PNG of them with
             --plot (needs matplotlib: the plot extra).
  declared   each backend's declared differences (Capabilities.differences).

Nothing here changes a backend: it is a report. The engines' own output (Genesis's and Warp's log
lines, compile messages, warnings) goes to a log file (`--log`, by default unienv_sim2sim.log in
the system's temporary directory), so that only the tables reach the terminal.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from typing import Any, TextIO

import numpy as np
import torch

import unienv
from unienv.backends import BACKENDS as REGISTRY
from unienv.errors import ArgumentError, CapabilityError, install_command
from unienv.tasks import task_class
from unienv.tools import cli
from unienv.training.rollout import make_policy, rollout
from unienv.utils import plots

CHECKPOINTS = (1, 10, 100, 1000)
BACKENDS = tuple(REGISTRY)  # the registry's, mujoco (the reference) first
GENERIC_DR = {
    name: {"param": param, "range": [0.9, 1.1], "operation": "scale", **extra}
    for name, param, extra in (
        ("mass", "body_mass", {}),
        ("friction", "geom_friction", {"axes": [0]}),
        ("kp", "actuator_kp", {}),
    )
}


def _make(task: str, backend: str, num_envs: int, device: str | None, **kwargs: Any):
    """The task's env on `backend`, on `device` where the backend runs on more than the CPU."""
    cpu_only = REGISTRY[backend].devices == ("cpu",)
    options = {"device": device} if device and not cpu_only else {}
    return unienv.make(task, backend=backend, num_envs=num_envs, seed=0, **options, **kwargs)


def available(task: str, device: str | None) -> dict[str, str | None]:
    """Backend -> None if it runs the task here, else why not."""
    out = {}
    for name in BACKENDS:
        if not REGISTRY[name].installed():
            out[name] = f"not installed: {install_command(REGISTRY[name].extra)}"
            continue
        try:
            _make(task, name, 1, device).close()
            out[name] = None
        except (ModuleNotFoundError, CapabilityError, ArgumentError) as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


def state_divergence(
    task: str, backends: list[str], policy_spec: str, num_envs: int, device: str | None
) -> dict:
    """Backend -> {steps: (max |dqpos|, max |dqvel|)} against mujoco, plus the float32 floor."""
    reference = _make(task, "mujoco", num_envs, None, autoreset_mode="disabled")
    obs, _ = reference.reset(seed=0)
    views = reference.backend.get_state_views()
    start = views["qpos"].clone(), views["qvel"].clone()
    policy = make_policy(policy_spec, reference)
    actions, states = [], {}
    for step in range(1, max(CHECKPOINTS) + 1):
        actions.append(policy(obs).detach().cpu())
        obs, *_ = reference.step(actions[-1])
        if step in CHECKPOINTS:
            states[step] = views["qpos"].clone(), views["qvel"].clone()
    reference.close()

    def replay(backend: str, qpos: torch.Tensor, qvel: torch.Tensor) -> dict:
        env = _make(task, backend, num_envs, device, autoreset_mode="disabled")
        env.reset(seed=0)
        dtype = env.backend.get_capabilities().dtype
        env.backend.set_state_tensor(
            torch.arange(num_envs), qpos.to(env.device, dtype), qvel.to(env.device, dtype)
        )
        env.observe()
        out, sim = {}, env.backend.get_state_views()
        for step, a in enumerate(actions, start=1):
            env.step(a.to(env.device))
            if step in CHECKPOINTS:
                q, v = states[step]
                out[step] = tuple(
                    float((x.cpu().double() - y).abs().nan_to_num(math.inf).max())
                    for x, y in ((sim["qpos"], q), (sim["qvel"], v))
                )
        env.close()
        return out

    rows = {b: replay(b, *start) for b in backends if b != "mujoco"}
    rows["float32 floor"] = replay("mujoco", *(x.float().double() for x in start))
    return rows


def return_distribution(
    task: str, backend: str, policy_spec: str, num_envs: int, steps: int, device: str | None, dr: Any
) -> np.ndarray:
    """The returns of the episodes that ended within `steps` env steps."""
    env = _make(task, backend, num_envs, device, dr=dr)
    try:
        stats = rollout(env, make_policy(policy_spec, env), steps, seed=0, progress=False)
    finally:
        env.close()
    return np.asarray(stats.returns, dtype=np.float64)


def _interval(x: np.ndarray) -> str:
    if not len(x):
        return "no episode ended"
    lo, hi = np.percentile(x, [2.5, 97.5])
    return f"{x.mean():9.2f} {x.std():8.2f}   [{lo:.2f}, {hi:.2f}]  n={len(x)}"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="unienv sim2sim", description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True)
    parser.add_argument("--policy", default="zero", help="zero, random, or a policy file (train.py's)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--episode-steps", type=int, default=1000, help="env steps of the return rollouts")
    parser.add_argument("--device", default=None, help="for mjwarp and genesis (mujoco is on the CPU)")
    parser.add_argument("--plot", default=None, metavar="PNG", help="write the return distributions there")
    parser.add_argument(
        "--log",
        default=os.path.join(tempfile.gettempdir(), "unienv_sim2sim.log"),
        metavar="PATH",
        help="where the engines' own output goes (default: unienv_sim2sim.log in the temp directory)",
    )
    args = parser.parse_args(argv)
    task_class(args.task)  # an unknown task name says which exist
    if args.num_envs < 1 or args.episode_steps < 1:
        parser.error("--num-envs and --episode-steps: expected positive counts")
    others = [entry for name, entry in REGISTRY.items() if name != "mujoco"]
    if not any(entry.installed() for entry in others):
        print(
            "sim2sim: no engine but mujoco is installed, so there is nothing to compare it with; install "
            + " or ".join(install_command(entry.extra) for entry in others)
        )
    with cli.engine_output_to(args.log) as out:
        result = _report(args, out)
    print(f"engine log: {args.log}")
    return result


def _header() -> str:
    """Two title lines over the state table: a checkpoint over each pair of qpos, qvel columns."""
    steps = "".join(f"{f'after {n} step' + ('s' if n > 1 else ''):>24}" for n in CHECKPOINTS)
    pairs = "".join(f"{'|qpos|':>12}{'|qvel|':>12}" for _ in CHECKPOINTS)
    return f"{'':>14}{steps}\n{'backend':>14}{pairs}"


def _report(args: argparse.Namespace, out: TextIO) -> dict:
    """Measure and print the report's tables to `out`."""
    reasons = available(args.task, args.device)
    backends = [b for b, why in reasons.items() if why is None]
    print(f"sim2sim: {args.task}, policy {args.policy}, {args.num_envs} envs", file=out)
    for b, why in reasons.items():
        if why:
            print(f"  {b}: skipped ({why.splitlines()[0]})", file=out)
    for b in backends:
        env = _make(args.task, b, 1, args.device)
        caps = env.backend.get_capabilities()
        env.close()
        print(
            f"  {b}: {caps.device}, {str(caps.dtype).replace('torch.', '')}; declared differences: "
            + ("; ".join(caps.differences) or "none"),
            file=out,
        )

    print("\nstate difference to mujoco, max |qpos| and max |qvel| after n env steps", file=out)
    print(_header(), file=out)
    divergence = state_divergence(args.task, backends, args.policy, args.num_envs, args.device)
    for b, row in divergence.items():
        print(f"{b:>14}" + "".join(f"{row[n][0]:>12.2e}{row[n][1]:>12.2e}" for n in CHECKPOINTS), file=out)

    print(f"\nepisode returns over {args.episode_steps} env steps", file=out)
    print(f"{'backend':>10} {'DR':>7} {'mean':>9} {'std':>8}   [2.5 %, 97.5 %]  episodes", file=out)
    returns = {}
    for label, dr in (("DR off", None), ("DR on", GENERIC_DR)):
        for b in backends:
            returns[(b, label)] = x = return_distribution(
                args.task, b, args.policy, args.num_envs, args.episode_steps, args.device, dr
            )
            print(f"{b:>10} {label:>7} {_interval(x)}", file=out)
    if args.plot:
        _plot(args.task, args.policy, returns, args.plot, out)
    return {"divergence": divergence, "returns": {f"{b} {d}": r.tolist() for (b, d), r in returns.items()}}


def _plot(task: str, policy: str, returns: dict, path: str, out: TextIO) -> None:
    labels = [f"{b}\n{d}" for b, d in returns]
    fig = plots.new_figure(path, figsize=(1.6 * len(labels) + 2, 4))
    if fig is None:
        return
    ax = fig.subplots()
    ax.boxplot([r if len(r) else [np.nan] for r in returns.values()], whis=(2.5, 97.5))
    ax.set_xticks(range(1, len(labels) + 1), labels)
    ax.set_ylabel("episode return")
    ax.set_title(f"{task}, policy {policy}: returns per backend (whiskers 2.5-97.5 %)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=out)
