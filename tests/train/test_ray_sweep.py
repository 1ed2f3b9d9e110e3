"""A `-m` sweep of train.py through Hydra's Ray launcher on a local Ray cluster of 2 CPU workers,
as the Training page documents it for a cluster: each trial is its own train.py process and
writes its own policy. A real `ray start` (about 15 s on 2 cores) and two cartpole trials."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

pytest.importorskip("hydra_plugins.hydra_ray_launcher")
pytest.importorskip("rsl_rl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster(tmp_path):
    """The address of a fresh local Ray head with 2 CPUs, stopped after the test."""
    ray = shutil.which("ray", path=os.path.dirname(sys.executable)) or "ray"
    environment = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    port = free_port()
    start = [ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false"]
    started = subprocess.run(start, capture_output=True, text=True, env=environment, timeout=180)
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, env=environment, timeout=120)


def test_a_sweep_runs_one_train_process_per_trial_on_a_ray_cluster(tmp_path, ray_cluster):
    sweep = tmp_path / "sweep"
    command = [
        sys.executable, os.path.join(ROOT, "train.py"), "-m", "hydra/launcher=ray",
        f"hydra.launcher.ray.init.address={ray_cluster}",
        "+hydra.launcher.ray.init.object_store_memory=null",  # the launcher's default refuses a cluster
        "+hydra.launcher.ray.remote.num_cpus=1",
        "num_envs=8", "train.runner.num_steps_per_env=8", "train.eval_steps=0", "train.iterations=1",
        "seed=0,1", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    environment = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=environment, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for trial in ("0", "1"):
        assert (sweep / trial / "policy.safetensors").is_file(), done.stdout[-3000:]
    assert "(_run_job pid=" in done.stdout  # the trials ran in Ray's workers, not in this process
