"""Golden trajectories: a hash of what every task gives on every installed CPU backend.

Each case is one task (the DeepMind Control tasks aside: they are held to dm_control itself)
on one backend in one autoreset mode, with no DR or with
`dr="default"`: 4 envs, seed 0, episodes cut at 60 steps (so that every mode
resets within the run), 200 steps of actions drawn uniformly from the action
space by a NumPy generator seeded 0. The hash covers the observations, rewards,
terminated and truncated flags, every info array (the episodes' wall-clock
seconds `t` excepted) and `env.dr_params()` after every step. A case the backend
refuses at construction hashes the error's type.

A refactor that keeps these hashes keeps every output bit for bit, on the machine and libraries
that recorded them (NumPy, torch and Warp pick vectorized kernels by CPU; task math uses no BLAS
product, so OPENBLAS_CORETYPE does not matter: tests/test_golden_blas.py). Run each backend's cases in
a process of their own, before anything initializes Genesis: its initialization turns on
flush-to-zero for the whole process, which changes later MuJoCo results in their last bits
(reach's, on mujoco and mjwarp). Backends run in registry order, genesis last. Record anew
(only in the commit that must change them, saying why) with

    python -m tests.golden --write [--backend mujoco] [--task ant]

`tests/test_golden.py` recomputes them and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch

import unienv
from tests.contract.conftest import AVAILABLE, backend_options
from unienv.errors import CapabilityError
from unienv.tasks import DMC_TASKS, TASKS

HASHES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_hashes.json")
# the DeepMind Control tasks are held to dm_control itself, step for step (tests/tasks/test_dmc.py)
GOLDEN_TASKS = [name for name in TASKS if name not in DMC_TASKS]
MODES = ("same_step", "next_step", "disabled")
DRS = ("none", "default")
NUM_ENVS, STEPS, EPISODE_STEPS = 4, 200, 60


def _update(h, name: str, x) -> None:
    """Feed `x` (a tensor, array, number or nested dict of them) to the hash, keys sorted."""
    if isinstance(x, dict):
        for k in sorted(x):
            if name.endswith("episode_stats") and k == "t":  # wall-clock seconds
                continue
            _update(h, f"{name}.{k}", x[k])
        return
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    if isinstance(x, np.ndarray) and x.dtype == object:  # Gymnasium-style object rows
        for i, v in enumerate(x):
            _update(h, f"{name}[{i}]", v)
        return
    a = np.ascontiguousarray(np.asarray(x))
    h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
    h.update(a.tobytes())


def trajectory_hash(task: str, backend: str, mode: str, dr: str) -> str:
    """The sha256 of one case's whole output (see the module docstring)."""
    options = backend_options(backend)
    try:
        env = unienv.make(
            task,
            backend=backend,
            num_envs=NUM_ENVS,
            device=options.pop("device", None),
            backend_options=options,
            seed=0,
            dr=None if dr == "none" else dr,
            autoreset_mode=mode,
            max_episode_steps=EPISODE_STEPS,
        )
    except CapabilityError as e:
        return f"refused: {type(e).__name__}"
    h = hashlib.sha256()
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    try:
        obs, info = env.reset(seed=0)
        _update(h, "reset", {"obs": obs, "info": info, "dr": env.dr_params()})
        for step in range(STEPS):
            actions = torch.from_numpy(rng.uniform(low, high, (NUM_ENVS, len(low))))
            mask = None
            if mode == "disabled" and step % 40 == 39:  # DISABLED: the caller resets, here half the envs
                mask = torch.arange(NUM_ENVS) % 2 == (step // 40) % 2
                obs, info = env.reset(options={"reset_mask": mask})
                _update(h, f"reset{step}", {"obs": obs, "info": info})
            out = env.step(actions)
            _update(h, f"step{step}", dict(zip(("obs", "r", "term", "trunc", "info"), out, strict=True)))
            _update(h, f"dr{step}", env.dr_params())
    finally:
        env.close()
    return h.hexdigest()


def cases(backends=None, tasks=None):
    """(task, backend, mode, dr) of every case whose backend is installed (on the CPU)."""
    for backend in backends or AVAILABLE:
        for task in tasks or GOLDEN_TASKS:
            for mode in MODES:
                for dr in DRS:
                    yield task, backend, mode, dr


def key(task: str, backend: str, mode: str, dr: str) -> str:
    return f"{task}/{backend}/{mode}/{dr}"


def load() -> dict[str, str]:
    with open(HASHES) as f:
        return json.load(f)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record the hashes into golden_hashes.json")
    parser.add_argument("--backend", nargs="*", help="only these backends")
    parser.add_argument("--task", nargs="*", help="only these tasks")
    parser.add_argument("--json", action="store_true", help="print the hashes as one JSON line instead")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps({key(*case): trajectory_hash(*case) for case in cases(args.backend, args.task)}))
        return 0
    stored = load() if os.path.exists(HASHES) else {}
    changed = 0
    for case in cases(args.backend, args.task):
        k = key(*case)
        digest = trajectory_hash(*case)
        same = stored.get(k) == digest
        changed += not same
        print(f"{'same' if same else 'DIFF'}  {k}  {digest[:16]}", flush=True)
        stored[k] = digest
    if args.write:
        with open(HASHES, "w") as f:
            json.dump(dict(sorted(stored.items())), f, indent=1)
            f.write("\n")
    print(f"{changed} differ from {HASHES}" + (" (written)" if args.write else ""))
    return 0 if args.write or not changed else 1


if __name__ == "__main__":
    sys.exit(main())
