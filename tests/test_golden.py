"""Every task's outputs match the recorded golden hashes bit for bit (tests/golden.py says what
a case is and how to record them anew).

Every case runs on mujoco and mjwarp; genesis builds a scene per case (seconds each on 2 cores),
so there it runs the cases it refuses at construction and two tasks in every mode. Each backend's
cases run in a fresh process (`python -m tests.golden --json`): a test that initialized Genesis
earlier in this process has turned on flush-to-zero, which changes MuJoCo's results in their last
bits (tests/golden.py)."""

import functools
import json
import os
import subprocess
import sys

import pytest

from tests.golden import cases, key, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORED = load()
GENESIS_TASKS = ("cartpole", "hopper")


def _selected():
    """The cases this test runs, each with the pytest marks it needs."""
    for case in cases():
        task, backend = case[:2]
        k = key(*case)
        if k not in STORED:
            continue
        if backend == "genesis" and task not in GENESIS_TASKS and not STORED[k].startswith("refused"):
            continue
        marks = [pytest.mark.slow] if backend == "genesis" and task in GENESIS_TASKS else []
        yield case, marks


SELECTED = list(_selected())


@functools.cache
def computed(backend: str) -> dict[str, str]:
    """The hashes of the backend's selected cases, from a fresh process."""
    tasks = sorted({case[0] for case, _ in SELECTED if case[1] == backend})
    done = subprocess.run(
        [sys.executable, "-m", "tests.golden", "--json", "--backend", backend, "--task", *tasks],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", [pytest.param(c, id=key(*c), marks=m) for c, m in SELECTED])
def test_outputs_match_the_golden_hashes(case):
    assert computed(case[1])[key(*case)] == STORED[key(*case)], (
        f"{key(*case)}: the outputs changed; if on purpose, record anew with "
        "`python -m tests.golden --write` in the commit that changes them, saying why"
    )


def test_every_installed_case_is_recorded():
    missing = [key(*c) for c in cases() if key(*c) not in STORED]
    assert not missing, f"record them with `python -m tests.golden --write`: {missing[:5]}"
