"""Golden trajectories: a hash of what every task gives on every installed CPU backend.

Each case is one task (the DeepMind Control tasks aside: they are held to dm_control itself)
on one backend in one autoreset mode, with no DR or with
`dr="default"`: 4 envs, seed 0, episodes cut at 60 steps (so that every mode
resets within the run), 200 steps of actions drawn uniformly from the action
space by a NumPy generator seeded 0. The hash covers the observations, rewards,
terminated and truncated flags, every info array (the episodes' wall-clock
seconds `t` excepted) and `env.dr_params()` after every step. A case the backend
refuses at construction records the error's type.

A case's record is a fingerprint of those outputs at a stated tolerance, and a sha256 of their
bytes. The last bits of a result depend on the machine: NumPy's AVX-512 kernels (transcendental
functions), OpenBLAS's kernel for the CPU (the tasks' small matrix products), MuJoCo Warp's and
Genesis's CPU code compiled by LLVM for the host. Measured, those differences stay below 1e-9
relative over a case (episodes are cut at 60 steps) where they do not reach the start states:
half_cheetah turned one last bit of its Gaussian start velocities into a 0.3 % different return,
so NumPy's normal draws take the C library's log1p and cos (unienv.utils.random), the same on
every x86-64 machine. The test compares the fingerprint: per
family of outputs (`step.obs`, `step.info.reward_terms.x`, `dr.body_mass`, ... with their
dtype), the count of values, exact weighted sums of the integer and boolean ones, and for the
floating ones a weighted sum (the weights depend on the step and the element, so a shift in time
or in layout shows) and the sum of magnitudes, which must agree within `RTOL` of the dtype
(relative to the sum of magnitudes). The sha256 says whether the outputs are bit for bit those
recorded, which holds on one machine with the same libraries; `python -m tests.golden` prints it
and the test does not require it. Run each backend's cases in
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
import re
import sys

import numpy as np
import torch

import unienv
from tests.contract.conftest import AVAILABLE, backend_options
from unienv.errors import CapabilityError
from unienv.tasks import DMC_TASKS, TASKS

HASHES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden_hashes.json")
# the fingerprint's tolerance per float dtype, relative to a family's sum of magnitudes: far above
# the last-bit differences between machines (< 1e-9 over a case in float64), far below a change of
# behaviour
RTOL = {"<f8": 1e-6, "<f4": 1e-3}
# the DeepMind Control tasks are held to dm_control itself, step for step (tests/tasks/test_dmc.py)
GOLDEN_TASKS = [name for name in TASKS if name not in DMC_TASKS]
MODES = ("same_step", "next_step", "disabled")
DRS = ("none", "default")
NUM_ENVS, STEPS, EPISODE_STEPS = 4, 200, 60


class Fingerprint:
    """The sha256 of every output's bytes and, per family of outputs, [count, weighted sum, sum of
    magnitudes] (see the module docstring)."""

    def __init__(self):
        self.sha = hashlib.sha256()
        self.families: dict[str, list] = {}

    def update(self, name: str, x) -> None:
        """Feed `x` (a tensor, array, number or nested dict of them), keys sorted."""
        if isinstance(x, dict):
            for k in sorted(x):
                if name.endswith("episode_stats") and k == "t":  # wall-clock seconds
                    continue
                self.update(f"{name}.{k}", x[k])
            return
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        if isinstance(x, np.ndarray) and x.dtype == object:  # Gymnasium-style object rows
            for i, v in enumerate(x):
                self.update(f"{name}[{i}]", v)
            return
        a = np.ascontiguousarray(np.asarray(x))
        self.sha.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        self.sha.update(a.tobytes())
        when = re.match(r"^(step|reset|dr)(\d*)", name)
        step = int(when.group(2) or -1) + 2
        family = f"{when.group(1)}{name[when.end() :]}:{a.dtype.str}"
        flat = a.ravel()
        weights = 1 + (step * 31 + np.arange(flat.size)) % 13
        row = self.families.setdefault(family, [0, 0, 0])
        row[0] += flat.size
        if a.dtype.kind in "biu":
            row[1] += int((weights * flat.astype(np.int64)).sum())
            row[2] += int(np.abs(flat.astype(np.int64)).sum())
        elif a.dtype.kind == "f":
            row[1] += float((weights * flat.astype(np.float64)).sum())
            row[2] += float(np.abs(flat.astype(np.float64)).sum())

    def record(self) -> dict:
        return {"sha256": self.sha.hexdigest(), "families": self.families}


def difference(record, stored) -> str | None:
    """Why `record` does not match `stored` within the tolerance, or None."""
    if isinstance(record, str) or isinstance(stored, str):
        return None if record == stored else f"{record!r} != {stored!r}"
    got, want = record["families"], stored["families"]
    if got.keys() != want.keys():
        return f"other outputs: {sorted(got.keys() ^ want.keys())[:5]}"
    for family, (count, weighted, magnitude) in want.items():
        n, w, m = got[family]
        dtype = family.rsplit(":", 1)[1]
        if n != count:
            return f"{family}: {n} values, recorded {count}"
        if dtype not in RTOL:  # integers and booleans: exact
            if (w, m) != (weighted, magnitude):
                return f"{family}: sums {w}, {m}, recorded {weighted}, {magnitude}"
            continue
        bound = RTOL[dtype] * magnitude + 1e-12
        if not (abs(w - weighted) <= bound and abs(m - magnitude) <= bound):
            return (
                f"{family}: sums {w!r}, {m!r}, recorded {weighted!r}, {magnitude!r} (tolerance {bound:.2e})"
            )
    return None


def trajectory_record(task: str, backend: str, mode: str, dr: str) -> dict | str:
    """One case's fingerprint and sha256, or the refusal (see the module docstring)."""
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
    h = Fingerprint()
    rng = np.random.default_rng(0)
    low, high = env.single_action_space.low, env.single_action_space.high
    try:
        obs, info = env.reset(seed=0)
        h.update("reset", {"obs": obs, "info": info, "dr": env.dr_params()})
        for step in range(STEPS):
            actions = torch.from_numpy(rng.uniform(low, high, (NUM_ENVS, len(low))))
            mask = None
            if mode == "disabled" and step % 40 == 39:  # DISABLED: the caller resets, here half the envs
                mask = torch.arange(NUM_ENVS) % 2 == (step // 40) % 2
                obs, info = env.reset(options={"reset_mask": mask})
                h.update(f"reset{step}", {"obs": obs, "info": info})
            out = env.step(actions)
            h.update(f"step{step}", dict(zip(("obs", "r", "term", "trunc", "info"), out, strict=True)))
            h.update(f"dr{step}", env.dr_params())
    finally:
        env.close()
    return h.record()


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
    parser.add_argument("--write", action="store_true", help="record the cases into golden_hashes.json")
    parser.add_argument("--backend", nargs="*", help="only these backends")
    parser.add_argument("--task", nargs="*", help="only these tasks")
    parser.add_argument("--json", action="store_true", help="print the records as one JSON line instead")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps({key(*case): trajectory_record(*case) for case in cases(args.backend, args.task)}))
        return 0
    stored = load() if os.path.exists(HASHES) else {}
    changed = 0
    for case in cases(args.backend, args.task):
        k = key(*case)
        record = trajectory_record(*case)
        why = difference(record, stored[k]) if k in stored else "not recorded"
        changed += why is not None
        before = stored.get(k)
        bits = record == before or (isinstance(before, dict) and record["sha256"] == before["sha256"])
        print(
            f"{'same' if why is None else 'DIFF'}  {'bit for bit' if bits else 'within tolerance'}  {k}  {why or ''}",
            flush=True,
        )
        stored[k] = record
    if args.write:
        with open(HASHES, "w") as f:
            json.dump(dict(sorted(stored.items())), f, indent=1)
            f.write("\n")
    print(f"{changed} differ from {HASHES}" + (" (written)" if args.write else ""))
    return 0 if args.write or not changed else 1


if __name__ == "__main__":
    sys.exit(main())
