"""The policy file: torch.export program + task layout; make_policy and play.py check the layout."""

import json
import os
import subprocess
import sys
import zipfile

import pytest
import torch

import unienv
from unienv.rollout import make_policy
from unienv.wrappers import checkpoint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """A cartpole policy file from an untrained actor whose raw output exceeds the action bounds."""
    path = str(tmp_path_factory.mktemp("policy") / "policy.pt2")
    env = unienv.make("cartpole", num_envs=2)
    actor = torch.nn.Linear(5, 1)
    with torch.no_grad():
        actor.weight.fill_(10.0)
    checkpoint.save_policy(path, actor, env, backend="mujoco", info={"iterations": 0})
    env.close()
    return path


def test_the_file_records_task_options_and_layout(policy_file):
    assert checkpoint.is_policy_file(policy_file)
    with zipfile.ZipFile(policy_file) as archive:
        name = next(n for n in archive.namelist() if n.endswith("/extra/unienv.json"))
        meta = json.loads(archive.read(name))
    assert meta["format"] == "unienv.policy/1" and meta["task"] == "cartpole" and meta["backend"] == "mujoco"
    assert meta["task_options"] == {"swingup": False, "episode_length_s": 10.0, "max_angle": 0.2, "rail": 2.4}
    assert meta["observation"] == {"shape": [5], "dtype": "float32"}
    assert meta["action"] == {"shape": [1], "dtype": "float32", "low": [-1.0], "high": [1.0]}
    assert meta["info"] == {"iterations": 0}


def test_make_policy_loads_it_for_any_batch_and_clips_to_the_action_bounds(policy_file):
    for n in (1, 7):
        env = unienv.make("cartpole", num_envs=n, seed=0)
        obs, _ = env.reset()
        actions = make_policy(policy_file, env)(obs)
        assert actions.shape == (n, 1) and actions.abs().max() <= 1.0
        env.close()
    module, _ = checkpoint.load_policy(policy_file)
    assert module(torch.ones(3, 5)).tolist() == [[1.0]] * 3


def test_make_policy_refuses_another_layout_naming_each_difference(policy_file):
    env = unienv.make("cartpole", num_envs=1, task_options={"swingup": True})
    with pytest.raises(unienv.ArgumentError, match=r"task\.swingup: the policy was trained with False"):
        make_policy(policy_file, env)
    env = unienv.make("inverted_pendulum", num_envs=1)
    with pytest.raises(unienv.ArgumentError) as error:
        make_policy(policy_file, env)
    message = str(error.value)
    assert "task: the policy was trained on 'cartpole', this env is 'inverted_pendulum'" in message
    assert "observation shape: the policy has [5], this env has [4]" in message


def test_an_episode_length_is_not_a_layout_difference(policy_file):
    env = unienv.make("cartpole", num_envs=1, task_options={"episode_length_s": 2.0})
    assert make_policy(policy_file, env)(env.reset()[0]).shape == (1, 1)


def test_play_refuses_a_policy_of_another_layout_with_a_clear_message(policy_file, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "play.py"),
            f"policy={policy_file}",
            "task.swingup=true",
            "steps=2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "does not fit this env" in done.stderr and "task.swingup" in done.stderr
    assert not (tmp_path / "videos").exists() or not any((tmp_path / "videos").iterdir())
