"""Every task's outputs match the recorded golden hashes bit for bit (tests/golden.py says what
a case is and how to record them anew).

Every case runs on mujoco and mjwarp; genesis builds a scene per case (seconds each on 2 cores),
so there it runs the cases it refuses at construction and two tasks in every mode."""

import pytest

from tests.golden import cases, key, load, trajectory_hash

STORED = load()
GENESIS_TASKS = ("cartpole", "hopper")


def _params():
    for case in cases():
        task, backend = case[:2]
        k = key(*case)
        if k not in STORED:
            continue
        if backend == "genesis" and task not in GENESIS_TASKS and not STORED[k].startswith("refused"):
            continue
        marks = [pytest.mark.slow] if backend == "genesis" and task in GENESIS_TASKS else []
        yield pytest.param(case, id=k, marks=marks)


@pytest.mark.parametrize("case", list(_params()))
def test_outputs_match_the_golden_hashes(case):
    assert trajectory_hash(*case) == STORED[key(*case)], (
        f"{key(*case)}: the outputs changed; if on purpose, record anew with "
        "`python -m tests.golden --write` in the commit that changes them, saying why"
    )


def test_every_installed_case_is_recorded():
    missing = [key(*c) for c in cases() if key(*c) not in STORED]
    assert not missing, f"record them with `python -m tests.golden --write`: {missing[:5]}"
