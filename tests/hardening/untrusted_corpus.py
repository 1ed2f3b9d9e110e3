"""Replays the hostile files in a folder (argv[1]) against a fresh cartpole env, under the memory
limit argv[2] (bytes of address space): prints one JSON line per file, its refusal or "accepted",
whether the env changed, and the peak RSS growth. Run by test_untrusted_files.py."""

import json
import os
import resource
import sys

import torch

import unienv
from unienv.errors import ArgumentError
from unienv.training.checkpoint import env_state, load_checkpoint, load_env_state
from unienv.training.export import load_onnx_policy


def snapshot(env):
    s = env_state(env)
    return [s["physics"], *s["arrays"].values()]


def main(folder: str, limit: int) -> None:
    env = unienv.make("cartpole", num_envs=4, seed=0, dr="default")
    env.reset(seed=0)
    space = env.single_action_space.high.copy()
    before = snapshot(env)
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        try:
            if name.endswith(".onnx"):
                load_onnx_policy(path)
            else:
                _, state = load_checkpoint(path)
                load_env_state(env, state["env"])
            outcome = "accepted"
        except ArgumentError as e:
            outcome = str(e)
        except Exception as e:  # noqa: BLE001 (what the test reports as a bug)
            outcome = f"BUG {type(e).__name__}: {e}"
        after = snapshot(env)
        changed = any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
        changed |= not (env.single_action_space.high == space).all()
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - start
        print(
            json.dumps({"file": name, "outcome": outcome, "changed": bool(changed), "grown": grown}),
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
