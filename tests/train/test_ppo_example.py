"""examples/ppo.py, run as a user runs it, for a short budget."""

import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "ppo.py"
)


def test_ppo_example_learns_in_a_short_run(tmp_path):
    """8 PPO iterations (16k env steps) on inverted_pendulum: a random policy keeps the pole up for
    ~5-10 steps; the full run (100k steps, python examples/ppo.py) reaches 1000."""
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--total-steps", "16384", "--eval-envs", "8"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "iter 8/8" in done.stdout
    figures = dict(re.findall(r"(\w+) ([\d.]+)", done.stdout.strip().splitlines()[-1]))
    assert int(figures["env_steps"]) == 16384
    assert float(figures["eval_return"]) > 40, done.stdout[-2000:]
    assert os.listdir(tmp_path) == []  # it writes nothing


def test_before_any_episode_ends_the_progress_line_says_so(tmp_path):
    """half_cheetah's episodes last 1000 steps and never terminate: two iterations of 64 steps end
    none, and the line says so rather than printing a mean of nothing (nan)."""
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--task", "half_cheetah", "--num-envs", "2", "--total-steps", "256",
         "--eval-envs", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    progress = [line for line in done.stdout.splitlines() if line.startswith("iter ")]
    assert len(progress) == 2 and all("no episode finished yet" in line for line in progress), done.stdout
    assert "nan" not in "".join(progress)
