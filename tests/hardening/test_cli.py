"""A new user's mistakes on the command line: one `error:` line each, no traceback; --debug shows
the traceback. (tests/train/test_policy_file.py runs play.py as separate processes too.)"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = os.path.join(ROOT, "play.py")
TRAIN = os.path.join(ROOT, "train.py")
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_driver.py")


# the user's mistake -> what the one line must say
MISTAKES = {
    ("num_envs=0",): "error: num_envs: expected a positive int, got 0",
    ("num_envs=abc",): "error: num_envs: expected an int, got 'abc'",
    ("num_envs=[1",): "error: 'num_envs=[1' is not a valid override: no viable alternative at input '[1'",
    ("num_envs=1000000000",): "error: num_envs: 1000000000 envs of cartpole.xml need at least",
    ("steps=abc",): "error: steps: expected an int, got 'abc'",
    ("seed=-1",): "error: seed: expected an int in [0, 2**32) or None, got -1",
    ("device=cuda",): "error: device: 'cuda' asks for a CUDA GPU, but this machine has none",
    ("device=banana",): "error: device: expected None, 'cpu', 'cuda' or 'cuda:<k>', got 'banana'",
    (
        "policy=/missing/policy.safetensors",
    ): "error: policy: expected 'zero', 'random' or the path of a policy file, got '/missing/policy.safetensors' (file not found)",
    ("task=antt",): "error: unknown task choice 'antt'; did you mean 'ant'?",
    ("dr=defualt",): "error: unknown dr choice 'defualt'; did you mean 'default'?",
    (
        "task.episode_lenght_s=3",
    ): "error: unknown config key 'task.episode_lenght_s'; did you mean 'task.episode_length_s'?",
    (
        "+task.episode_lenght_s=3",
    ): "error: unknown option of task 'cartpole' 'episode_lenght_s'; did you mean 'episode_length_s'?",
    ("task.max_angle=-1",): "error: task.max_angle: expected a finite number > 0, got -1",
    (
        "autoreset_mode=sometimes",
    ): "error: autoreset_mode: expected one of ['NEXT_STEP', 'SAME_STEP', 'DISABLED'], got 'sometimes'",
}
NO_EXTRA = {  # (script, args, the module made unimportable) -> the one line
    (PLAY, "backend=genesis", "genesis"): "error: backend='genesis' needs the 'genesis' package, which is "
    f"not installed; install it with: pip install -e '{ROOT}[genesis]'",
    (
        TRAIN,
        "",
        "rsl_rl",
    ): f"error: this needs the 'rsl_rl' package; install it with: pip install -e '{ROOT}[rsl-rl]'",
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """(exit status, stderr) of every case, run by cli_driver in one process: each case as
    `python play.py <args>` runs it, without paying Python's and torch's start-up per case."""
    cases = [[PLAY, ["video.enabled=false", "steps=2", *m], None] for m in MISTAKES]
    cases += [[script, [arg] if arg else [], module] for script, arg, module in NO_EXTRA]
    cases.append([PLAY, ["num_envs=0", "--debug"], None])
    cases.append(["-m unienv", ["sim2sim", "--task", "antt"], None])
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    done = subprocess.run(
        [sys.executable, DRIVER, json.dumps(cases)],
        cwd=tmp_path_factory.mktemp("cli"),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads(done.stdout.strip().splitlines()[-1])
    keys = [*MISTAKES, *NO_EXTRA, "debug", "python -m unienv"]
    return dict(zip(keys, outputs, strict=True))


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m[0])
def test_a_mistake_is_one_clear_line(results, mistake):
    status, stderr = results[mistake]
    assert status == 1
    assert "Traceback" not in stderr and "Error executing job" not in stderr, stderr
    assert stderr.count("\n") == 1 and stderr.startswith(MISTAKES[mistake]), stderr


@pytest.mark.parametrize("extra", NO_EXTRA)
def test_a_missing_extra_says_how_to_install_it(results, extra):
    status, stderr = results[extra]
    assert status == 1 and "Traceback" not in stderr, stderr
    assert stderr.strip() == NO_EXTRA[extra]


def test_debug_shows_the_traceback(results):
    status, stderr = results["debug"]
    assert status in (1, "uncaught")
    assert "Traceback" in stderr and "ArgumentError: num_envs: expected a positive int, got 0" in stderr


def test_python_m_unienv_too(results):
    status, stderr = results["python -m unienv"]
    assert status == 1 and stderr.startswith("error: unknown task 'antt'; did you mean 'ant'?"), stderr
    assert stderr.count("\n") == 1
