"""play.py and the benchmark, run as a user runs them."""

import math
import os
import re
import subprocess
import sys

import imageio.v2 as imageio
import numpy as np
import pytest
import torch

import unienv
from unienv import bench
from unienv.tasks import TASKS, task_class
from unienv.training.policy import save_policy

from .contract.conftest import MJWARP_DEVICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def play(*overrides, cwd, timeout=300):
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "play.py"), *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_play_records_a_non_blank_tiled_video(tmp_path):
    done = play("steps=30", "num_envs=4", "video.envs=4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "videos" / "cartpole_mujoco_random.mp4"  # named for task, backend and policy
    assert "episodes finished" in done.stdout and str(path) in done.stdout
    reader = imageio.get_reader(str(path))
    frames = list(reader.iter_data())
    # video.fps=30 at most: cartpole's 0.02 s steps make a frame every 2nd step, 25 fps in real time
    assert len(frames) == 16 and reader.get_meta_data()["fps"] == 25  # the reset frame, then 15
    h, w, _ = frames[0].shape
    assert (h, w) == (2 * 360, 2 * 480)  # 4 envs tiled 2 x 2
    assert min(float(f.std()) for f in frames) > 10  # every frame shows the scene
    assert not np.array_equal(frames[0], frames[-1])  # and it moves


def _save_cartpole_policy(path):
    """An untrained cartpole actor in unienv's policy file format."""
    env = unienv.make("cartpole")
    save_policy(str(path), torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.Tanh()), env, backend="mujoco")
    env.close()


def test_play_runs_a_saved_policy_without_video(tmp_path):
    _save_cartpole_policy(tmp_path / "policy.safetensors")
    done = play(
        "steps=20",
        "num_envs=2",
        "video.enabled=false",
        f"policy={tmp_path / 'policy.safetensors'}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "video:" not in done.stdout
    assert not (tmp_path / "videos").exists()


def test_a_replay_gets_its_own_video_and_a_quiet_progress_bar(tmp_path):
    """A policy file's video is named for it; a bar on a non-terminal stderr is drawn at start and
    end, not once per step."""
    _save_cartpole_policy(tmp_path / "balance.safetensors")
    steps = ("steps=300", "num_envs=2", "video.envs=1", "video.width=64", "video.height=48")
    done = play(*steps, f"policy={tmp_path / 'balance.safetensors'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "videos" / "cartpole_mujoco_balance.mp4").exists()
    bar = [update for update in re.split("[\r\n]", done.stderr) if update.startswith("cartpole x2")]
    assert len(bar) == 2 and "300/300" in bar[-1], done.stderr  # 0% and 100%


def test_a_policy_file_and_its_onnx_export_play_to_videos_of_their_own():
    from hydra import compose, initialize_config_dir

    sys.path.insert(0, ROOT)
    import play  # noqa: F401  (registers video.path's resolver)

    with initialize_config_dir(os.path.join(ROOT, "cfg"), version_base="1.3"):
        paths = [
            compose("config", [f"policy={p}"]).video.path
            for p in ("run/policy.safetensors", "run/policy.onnx", "zero")
        ]
    assert paths == [
        "videos/cartpole_mujoco_policy.mp4",
        "videos/cartpole_mujoco_policy_onnx.mp4",
        "videos/cartpole_mujoco_zero.mp4",
    ]


def test_play_reports_bad_config_clearly(tmp_path):
    done = play("num_env=2", cwd=tmp_path)
    assert done.returncode != 0 and "num_env" in done.stderr
    done = play("task=cartpol", cwd=tmp_path)
    assert done.returncode != 0 and "cartpol" in done.stderr
    done = play("policy=no/such/policy.pt", "video.enabled=false", cwd=tmp_path)
    assert done.returncode != 0 and "policy" in done.stderr
    done = play("video.fps=0", cwd=tmp_path)
    assert done.returncode != 0 and "video.fps: expected a number > 0, got 0" in done.stderr
    assert not (tmp_path / "videos").exists()


def test_bench_measures_raw_backend_and_env_side_by_side():
    rows = bench.main(["--task", "cartpole", "--num-envs", "1", "3", "--seconds", "0.05", "--rounds", "1"])
    assert [r["num_envs"] for r in rows] == [1, 3]
    for r in rows:
        assert r["raw_sps"] > 0 and r["backend_sps"] > 0 and r["reads_sps"] > 0 and r["env_sps"] > 0
        assert r["env_ratio"] == pytest.approx(r["env_sps"] / r["raw_sps"])
        assert r["reads_ratio"] == pytest.approx(r["reads_sps"] / r["raw_sps"])
        assert r["task_ratio"] == pytest.approx(r["task_sps"] / r["raw_sps"]) and r["task_sps"] > 0
        n = r["num_envs"]  # one call is one batched env step of n envs
        assert r["env_overhead_us"] == pytest.approx(1e6 * (n / r["env_sps"] - n / r["raw_sps"]))


@pytest.mark.skipif(MJWARP_DEVICE is None, reason="MuJoCo Warp cannot run here")
def test_bench_runs_several_tasks_and_skips_those_the_backend_refuses(capsys):
    """Gymnasium's humanoid uses the PGS solver, which mujoco_warp refuses at construction."""
    args = ["--backend", "mjwarp", "--device", MJWARP_DEVICE, "--task", "humanoid", "cartpole"]
    rows = bench.main([*args, "--num-envs", "2", "--seconds", "0.05", "--rounds", "1"])
    assert [r["task"] for r in rows] == ["cartpole"]
    assert "skipped: the mjwarp backend refuses humanoid" in capsys.readouterr().out


@pytest.fixture(scope="module")
def every_task(tmp_path_factory):
    """One `python play.py -m task=<every task>`: a Hydra sweep that records each task's video
    (+sweep.video=true) in one process, where a process per task would import torch 45 times."""
    folder = tmp_path_factory.mktemp("every_task")
    done = play(
        "-m",
        f"task={','.join(sorted(TASKS))}",
        "steps=8",
        "num_envs=2",
        "video.envs=2",
        "video.width=160",
        "video.height=120",
        "+sweep.video=true",
        f"hydra.sweep.dir={folder / 'multirun'}",
        cwd=folder,
        timeout=1200,
    )
    return done, folder


def test_play_sweeps_every_task(every_task):
    done, _ = every_task
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_play_records_every_task(task, every_task):
    done, folder = every_task
    path = folder / "videos" / f"{task}_mujoco_random.mp4"  # play.py's default video.path
    assert path.exists(), f"no video of {task}: {done.stderr[-2000:]}"
    frames = list(imageio.get_reader(str(path)).iter_data())
    every = math.ceil(round(1 / task_class(task)().dt) / 30)  # video.fps=30 at most
    assert len(frames) == 1 + 8 // every and frames[0].shape == (120, 320, 3)
    assert min(float(f.std()) for f in frames) > 5  # the scene, not a blank image
