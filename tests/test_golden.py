"""Every task's outputs match the recorded golden trajectories within the stated tolerance
(tests/golden.py says what a case is, what the tolerance is and why, and how to record them anew).

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

import numpy as np
import pytest

from tests.golden import cases, difference, key, load

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
        if backend == "genesis" and task not in GENESIS_TASKS and not isinstance(STORED[k], str):
            continue
        marks = [pytest.mark.slow] if backend == "genesis" and task in GENESIS_TASKS else []
        yield case, marks


SELECTED = list(_selected())


@functools.cache
def computed(backend: str, environment: tuple = ()) -> dict:
    """The records of the backend's selected cases, from a fresh process (`environment`: extra
    variables for it)."""
    tasks = sorted({case[0] for case, _ in SELECTED if case[1] == backend})
    done = subprocess.run(
        [sys.executable, "-m", "tests.golden", "--json", "--backend", backend, "--task", *tasks],
        cwd=ROOT,
        env={**os.environ, **dict(environment)},
        capture_output=True,
        text=True,
        timeout=3000,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", [pytest.param(c, id=key(*c), marks=m) for c, m in SELECTED])
def test_outputs_match_the_golden_hashes(case):
    why = difference(computed(case[1])[key(*case)], STORED[key(*case)])
    assert why is None, (
        f"{key(*case)}: the outputs changed ({why}); if on purpose, record anew with "
        "`python -m tests.golden --write` in the commit that changes them, saying why"
    )


def test_every_installed_case_is_recorded():
    missing = [key(*c) for c in cases() if key(*c) not in STORED]
    assert not missing, f"record them with `python -m tests.golden --write`: {missing[:5]}"


KERNEL_CHOICES = [  # (variable, value, tasks): another kernel than this CPU's default, and tasks it reaches
    ("OPENBLAS_CORETYPE", "Haswell", ("quadruped", "reacher")),
    ("OPENBLAS_CORETYPE", "Prescott", ("quadruped", "reacher")),
    ("ATEN_CPU_CAPABILITY", "default", ("half_cheetah",)),
]


@pytest.mark.parametrize(
    ("variable", "value", "tasks"), KERNEL_CHOICES, ids=[f"{v}={x}" for v, x, _ in KERNEL_CHOICES]
)
def test_cases_hold_under_other_kernels(variable, value, tasks):
    """Another machine's kernels change only the last bits: OpenBLAS's (it picks one for the CPU;
    OPENBLAS_CORETYPE forces another) in the tasks' small matrix products, whose observations and
    rewards rotate vectors (the quadruped's, the reacher's); torch's (ATEN_CPU_CAPABILITY) in DR's
    draws, which half_cheetah's chaotic episodes would turn into another trajectory if they reached
    its start states beyond the last bits."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.golden", "--json", "--backend", "mujoco", "--task", *tasks],
        cwd=ROOT,
        env={**os.environ, variable: value},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(records) == 6 * len(tasks)
    for k, record in records.items():
        assert difference(record, STORED[k]) is None, (k, difference(record, STORED[k]))


def test_a_changed_output_is_caught():
    """The fingerprint is not blind: one observation nudged by 1e-4, a step's flag moved to the next
    step, or a value missing each count as a difference."""
    from tests.golden import Fingerprint

    def record(obs_shift=0.0, flag_step=3, drop=False):
        f = Fingerprint()
        for step in range(5):
            obs = np.linspace(-1.0, 1.0, 12).reshape(4, 3) * (step + 1)
            obs[2, 1] += obs_shift if step == 4 else 0.0
            f.update(
                f"step{step}",
                {
                    "obs": obs[:, :2] if drop and step == 0 else obs,
                    "term": np.arange(4) == step % 4 if step != flag_step else np.zeros(4, bool),
                },
            )
        return f.record()

    base = record()
    assert difference(record(), base) is None
    assert difference(record(obs_shift=1e-4), base) is not None
    assert difference(record(flag_step=2), base) is not None
    assert difference(record(drop=True), base) is not None
