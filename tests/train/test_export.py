"""ONNX export: onnxruntime gives the torch policy's actions to float32 rounding, the file carries the
task's layout, play.py plays it, and files that are not unienv's are refused."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import unienv
from unienv.errors import ArgumentError
from unienv.training.policy import Normalize, load_policy, save_policy
from unienv.training.rollout import make_policy, rollout

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from unienv.training.export import compare, export_onnx, load_onnx_policy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLOAT32_ROUNDING = 1e-5  # actions of order 1 after a few layers of float32 sums


def run(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def observations(task, count=1000):
    """count observations of real rollouts (random actions, 8 envs) of task."""
    env = unienv.make(task, num_envs=8, seed=5)
    obs, _ = env.reset(seed=5)
    rows, policy = [], make_policy("random", env)
    while len(rows) * 8 < count:
        rows.append(obs.float())
        obs, *_ = env.step(policy(obs))
    env.close()
    return torch.cat(rows)[:count].numpy()


def test_every_layer_type_exports_to_the_same_actions(tmp_path):
    env = unienv.make("inverted_pendulum", num_envs=1)
    torch.manual_seed(0)
    norm = Normalize(4)
    norm.mean.copy_(torch.randn(4))
    norm.std.copy_(torch.rand(4) + 0.5)
    kinds = [torch.nn.ELU, torch.nn.ReLU, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.SiLU, torch.nn.GELU]
    layers = [norm, torch.nn.Linear(4, 16)]
    for kind in [*kinds, torch.nn.Softplus, torch.nn.Identity]:
        layers += [kind(), torch.nn.Linear(16, 16)]
    layers[-1] = torch.nn.Linear(16, 1)
    with torch.no_grad():
        layers[1].weight.mul_(30.0)  # pre-activations past softplus's threshold (20) too
    actor = torch.nn.Sequential(*layers)
    save_policy(str(tmp_path / "p.safetensors"), actor, env, backend="mujoco")
    env.close()
    export_onnx(str(tmp_path / "p.safetensors"), str(tmp_path / "p.onnx"))
    obs = observations("inverted_pendulum")
    pre = actor[:2](torch.as_tensor(obs)).detach()
    assert (pre > 20).any() and (pre < -20).any()
    assert compare(str(tmp_path / "p.safetensors"), str(tmp_path / "p.onnx"), obs) <= FLOAT32_ROUNDING


def test_a_trained_policy_exports_and_play_plays_the_onnx_file(tmp_path):
    policy = tmp_path / "policy.safetensors"
    run(
        [
            sys.executable,
            os.path.join(ROOT, "train.py"),
            "num_envs=16",
            "train.iterations=3",
            "train.runner.num_steps_per_env=16",
            "train.eval_steps=0",
            f"train.policy_path={policy}",
            f"hydra.run.dir={tmp_path}/run",
        ],
        tmp_path,
    )
    exported = tmp_path / "deploy" / "policy.onnx"
    out = run([sys.executable, "-m", "unienv", "export", str(policy), "--onnx", str(exported)], tmp_path)
    assert f"onnx: {exported} (cartpole: obs (5,) -> actions (1,)" in out, out
    checked = re.search(r"differ by at most (\S+) over 1000 observations", out)
    assert checked and float(checked[1]) <= FLOAT32_ROUNDING, out

    # a checkpoint is not a policy file: one error line, nothing written
    refused = subprocess.run(
        [sys.executable, "-m", "unienv", "export", str(tmp_path / "run" / "model_2.pt"), "--onnx", "x.onnx"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith("error: policy: ") and "zip archive" in refused.stderr
    assert not (tmp_path / "x.onnx").exists()

    obs = observations("cartpole")
    module, meta = load_policy(str(policy))
    with torch.no_grad():
        actions = module(torch.as_tensor(obs))
    assert (actions.abs() < 0.99).float().mean() > 0.1  # not all at the bounds: the network is compared
    assert compare(str(policy), str(exported), obs) <= FLOAT32_ROUNDING

    # the layout a deployment checks: the task, its options, the observation and the action bounds
    props = {p.key: p.value for p in onnx.load(str(exported)).metadata_props}
    layout = json.loads(props["unienv"])
    for key in ("task", "task_options", "observation", "action", "backend"):
        assert layout[key] == meta[key]
    assert layout["observation"] == {"shape": [5], "dtype": "float32"}
    assert layout["action"]["low"] == [-1.0] and layout["action"]["high"] == [1.0]

    # play.py plays it through onnxruntime, to the same episodes as the torch policy file
    plays = [
        run(
            [
                sys.executable,
                os.path.join(ROOT, "play.py"),
                f"policy={p}",
                "steps=300",
                "video.enabled=false",
            ],
            tmp_path,
        ).splitlines()[-1]
        for p in (exported, policy)
    ]
    assert plays[0] == plays[1] and "cartpole on mujoco: 300 steps x 4 envs" in plays[0], plays


def test_onnx_files_that_do_not_fit_are_refused(tmp_path):
    env = unienv.make("cartpole", num_envs=2)
    save_policy(
        str(tmp_path / "p.safetensors"), torch.nn.Sequential(torch.nn.Linear(5, 1)), env, backend="mujoco"
    )
    export_onnx(str(tmp_path / "p.safetensors"), str(tmp_path / "p.onnx"))
    policy = make_policy(str(tmp_path / "p.onnx"), env)
    stats = rollout(env, policy, 20, progress=False)
    assert stats.steps == 20
    env.close()

    other = unienv.make("inverted_pendulum", num_envs=2)
    with pytest.raises(ArgumentError, match="task: the policy was trained on 'cartpole'"):
        make_policy(str(tmp_path / "p.onnx"), other)
    other.close()

    helper = onnx.helper
    graph = helper.make_graph(
        [helper.make_node("Identity", ["obs"], ["actions"])],
        "plain",
        [helper.make_tensor_value_info("obs", onnx.TensorProto.FLOAT, ["batch", 5])],
        [helper.make_tensor_value_info("actions", onnx.TensorProto.FLOAT, ["batch", 5])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "plain.onnx")
    )
    with pytest.raises(ArgumentError, match="without unienv's metadata"):
        load_onnx_policy(str(tmp_path / "plain.onnx"))
    (tmp_path / "junk.onnx").write_bytes(b"not onnx")
    with pytest.raises(ArgumentError, match="not a valid ONNX file"):
        load_onnx_policy(str(tmp_path / "junk.onnx"))
    assert np.isfinite(compare(str(tmp_path / "p.safetensors"), str(tmp_path / "p.onnx"), np.zeros((3, 5))))
