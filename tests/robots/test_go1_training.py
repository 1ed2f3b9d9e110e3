"""go1_velocity through train.py as the other tasks go: a one-iteration run of train=ppo_go1,
resumed to two (train.resume=), its policy exported as ONNX, and that file checked against
Menagerie's Go1 by name (it fits) and against another robot (refused in one line). Tiny batches:
4 envs x 4 steps."""

import json
import os
import subprocess
import sys

import pytest

from tests.train.test_resume import the_same
from unienv.__main__ import main as unienv_main

pytest.importorskip("rsl_rl")
pytest.importorskip("onnxruntime")
from unienv.training.export import export_onnx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = ["train=ppo_go1", "num_envs=4", "train.runner.num_steps_per_env=4", "train.eval_steps=0"]


def train(run_dir, *options):
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "train.py"), *TINY, f"hydra.run.dir={run_dir}", *options],
        cwd=run_dir.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(run_dir / "metrics.json") as f:
        return json.load(f)


def test_go1_resumes_exports_and_fits_menageries_go1(tmp_path, capsys):
    first = train(tmp_path / "first", "train.iterations=1")
    resumed = train(tmp_path / "resumed", "train.iterations=2", f"train.resume={tmp_path / 'first'}")
    assert resumed["resumed"]["iterations"] == 1 and resumed["resumed"]["envs"] == "exact"
    assert [row["iteration"] for row in resumed["curve"]] == [1, 2]
    assert the_same(resumed["curve"][0], first["curve"][0])  # the first run's row, carried on

    onnx_path = str(tmp_path / "go1.onnx")
    export_onnx(str(tmp_path / "resumed" / "policy.safetensors"), onnx_path)
    assert unienv_main(["deploy", "check", onnx_path, "--model", "unitree_go1"]) == 0
    assert unienv_main(["deploy", "check", onnx_path, "--model", "unitree_g1"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{onnx_path} fits unitree_go1",
        "robot.root: the model has no body 'trunk' (the policy's root body)",
    ], out
