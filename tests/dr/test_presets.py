"""The DR presets by name: unienv.make(task, dr="default"), Hydra's dr=<name>, on every task."""

import csv
import os
import shutil
import subprocess
import sys

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import unienv
from unienv import backends, dr
from unienv.env import UniEnv
from unienv.errors import ArgumentError, UnknownNameError
from unienv.tasks import TASKS, task_class

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("preset", ("default", "strong"))
def test_preset_runs_on_every_task_and_moves_the_root_body(preset):
    for name in TASKS:
        env = unienv.make(name, num_envs=2, seed=0, dr=preset)
        root = env.task.root_body
        assert env.dr.labels()["com"] == tuple(f"{root}[{axis}]" for axis in range(3)), name
        env.reset(seed=0)
        for _ in range(3):
            obs, *_ = env.step(torch.zeros(2, *env.single_action_space.shape, dtype=env.dtype))
        assert torch.isfinite(obs).all(), name
        com = env.dr_params()["com"]
        assert not torch.equal(com[0], com[1]), name  # each env drew its own shift
        env.close()


def test_presets_are_the_files_hydra_loads():
    for name in ("none", "default", "strong"):
        assert dr.preset(name) == (OmegaConf.to_container(OmegaConf.load(f"{ROOT}/cfg/dr/{name}.yaml")) or {})
    with initialize_config_dir(config_dir=f"{ROOT}/cfg", version_base="1.3"):
        composed = compose("config", overrides=["dr=quadruped"]).dr  # extends default (its defaults list)
    assert dr.preset("quadruped") == OmegaConf.to_container(composed)
    assert dr.preset("quadruped")["push"]["interval"] != dr.preset("default")["push"]["interval"]
    assert unienv.make("cartpole", dr="none").dr is None
    with pytest.raises(UnknownNameError, match=r"unknown dr preset 'strnog'; did you mean 'strong'"):
        unienv.make("cartpole", dr="strnog")


def test_pushes_is_the_robots_pushes_alone():
    """dr=pushes: the robots' push term and nothing else, as a preset and on a built task."""
    assert dr.preset("pushes") == {"push": dr.preset("robots")["push"]}
    env = unienv.make("ant", num_envs=2, seed=0, dr="pushes")
    assert set(env.dr.labels()) == {"push"}
    env.close()


def test_root_role_needs_a_task_that_declares_its_root_body():
    task = task_class("inverted_pendulum")()
    task.root_body = None
    sim = backends.create("mujoco", task.scene, 1, task.sim_dt, randomize=("body_com", "body_mass"))
    with pytest.raises(
        ArgumentError, match=r"dr.com: <root> names the task's root_body.*'inverted_pendulum'"
    ):
        UniEnv(task, sim, dr="default")


def test_play_runs_both_presets_on_every_task(tmp_path):
    """One Hydra multirun of play.py: 11 tasks x {default, strong}."""
    done = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "play.py"),
            "-m",
            f"task={','.join(TASKS)}",
            "dr=default,strong",
            "steps=5",
            "num_envs=2",
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted(" ".join(r["overrides"].split()[:2]) for r in rows) == sorted(
        f"task={t} dr={p}" for t in TASKS for p in ("default", "strong")
    )


def test_presets_ship_in_the_installed_package(tmp_path):
    """Built as a wheel and installed elsewhere, unienv finds its presets (unienv.cfg package data)."""
    source, wheels, target = tmp_path / "source", tmp_path / "wheels", tmp_path / "site"
    skip = shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "tests", "gpu")
    shutil.copytree(ROOT, source, ignore=skip)  # a build writes into its source tree
    pip = [sys.executable, "-m", "pip", "-q"]
    subprocess.run([*pip, "wheel", source, "--no-deps", "--no-build-isolation", "-w", wheels], check=True)
    subprocess.run([*pip, "install", "--no-deps", "--target", target, *wheels.glob("*.whl")], check=True)
    code = "import unienv; env = unienv.make('reach', dr='strong'); print(unienv.__file__, sorted(env.dr.labels()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(target)) and "'push'" in done.stdout
