"""A `-m` sweep of train.py through Hydra's Ray launcher on a local Ray of 2 CPU workers: each
trial is its own train.py process in a Ray worker and writes its own policy (two cartpole trials).
Joining a running cluster (`ray start`, the Training page's command) differs only in the
launcher's `init` options."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("hydra_plugins.hydra_ray_launcher")
pytest.importorskip("rsl_rl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_sweep_runs_one_train_process_per_trial_in_ray_workers(tmp_path, ray_tmpdir):
    sweep = tmp_path / "sweep"
    command = [
        sys.executable, os.path.join(ROOT, "train.py"), "-m", "hydra/launcher=ray",
        "+hydra.launcher.ray.init.num_cpus=2", "+hydra.launcher.ray.remote.num_cpus=1",
        "num_envs=8", "train.runner.num_steps_per_env=8", "train.eval_steps=0", "train.iterations=1",
        "seed=0,1", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    environment = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": ray_tmpdir}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for trial in ("0", "1"):
        assert (sweep / trial / "policy.safetensors").is_file(), done.stdout[-3000:]
    assert "(_run_job pid=" in done.stdout  # the trials ran in Ray's workers, not in this process
