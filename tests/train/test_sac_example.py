"""examples/sac.py, run as a user runs it, for a short budget."""

import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "sac.py"
)


def test_sac_example_learns_in_a_short_run(tmp_path):
    """6k env steps on reacher (2k of them random, then 1k gradient updates): a random policy's
    return is about -43, the full run (20k steps, python examples/sac.py) ends near -7."""
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--total-steps", "6000", "--log-every", "1000", "--eval-envs", "8"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    curve = [float(r) for r in re.findall(r"return \(\d+ episodes\) (\S+)", done.stdout)]
    assert len(curve) == 6 and curve[-1] > curve[0] + 10, done.stdout[-2000:]  # the return rises
    figures = dict(re.findall(r"(\w+) (-?[\d.]+)", done.stdout.strip().splitlines()[-1]))
    assert int(figures["env_steps"]) == 6000
    assert float(figures["eval_return"]) > float(figures["random_return"]) + 15, done.stdout[-2000:]
    assert os.listdir(tmp_path) == []  # it writes nothing
