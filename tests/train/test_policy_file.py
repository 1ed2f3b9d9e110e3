"""The policy file: tensors plus JSON (network, task layout); loading runs no code and checks the layout."""

import json
import os
import pickle
import re
import subprocess
import sys
import zipfile

import pytest
import safetensors
import safetensors.torch
import torch

import unienv
from unienv.training import policy as checkpoint
from unienv.training.rollout import make_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "hardening", "cli_driver.py")


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory):
    """A cartpole policy file from an untrained actor whose raw output exceeds the action bounds."""
    path = str(tmp_path_factory.mktemp("policy") / "policy.safetensors")
    env = unienv.make("cartpole", num_envs=2)
    actor = torch.nn.Sequential(
        checkpoint.Normalize(5), torch.nn.Linear(5, 4), torch.nn.ELU(), torch.nn.Linear(4, 1)
    )
    with torch.no_grad():
        actor[0].std.fill_(0.5)
        actor[1].weight.fill_(10.0)
        actor[3].weight.fill_(1.0)
    checkpoint.save_policy(path, actor, env, backend="mujoco", info={"iterations": 0})
    env.close()
    return path


def test_the_file_is_tensors_and_json(policy_file):
    with safetensors.safe_open(policy_file, framework="pt") as f:
        meta = json.loads(f.metadata()["unienv"])
        assert sorted(f.keys()) == ["0.mean", "0.std", "1.bias", "1.weight", "3.bias", "3.weight"]
    assert meta["format"] == "unienv.policy/2" and meta["task"] == "cartpole" and meta["backend"] == "mujoco"
    assert meta["network"] == [
        {"type": "normalize", "size": 5},
        {"type": "linear", "in": 5, "out": 4},
        {"type": "elu"},
        {"type": "linear", "in": 4, "out": 1},
    ]
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
    assert module(-torch.ones(3, 5)).tolist() == [[-1.0]] * 3


def test_an_actor_that_is_not_plain_layers_is_refused_at_save(tmp_path):
    env = unienv.make("cartpole", num_envs=1)
    for actor in (torch.nn.GRU(5, 1), torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.ELU(alpha=2.0))):
        with pytest.raises(unienv.ArgumentError, match="actor: expected a torch.nn.Sequential of"):
            checkpoint.save_policy(str(tmp_path / "p.safetensors"), actor, env, backend="mujoco")
    assert not (tmp_path / "p.safetensors").exists()


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


def test_an_option_newer_than_the_file_fits_at_its_default(policy_file):
    """A file written before a task option existed fits an env that keeps that option at its
    default (which keeps the earlier behaviour), and not one that changes it."""
    with safetensors.safe_open(policy_file, "pt") as f:
        meta = json.loads(f.metadata()["unienv"])
    del meta["task_options"]["rail"]  # as if the file predates the rail option
    assert checkpoint.layout_mismatches(meta, unienv.make("cartpole", num_envs=1)) == []
    moved = unienv.make("cartpole", num_envs=1, task_options={"rail": 3.0})
    assert checkpoint.layout_mismatches(meta, moved) == [
        "task.rail: the policy was trained with None, this env has 3.0"
    ]


# ---- files whose loading would run code --------------------------------------------------------


class _Payload:
    """Unpickling this creates the file `marker` (the stand-in for any code an attacker runs)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _malicious_files(folder, marker) -> dict[str, str]:
    """Files that would create `marker` if loaded the way unienv loaded policies before: a plain
    pickle, a torch.save file, an old-format .pt2 (a torch.export zip with unienv.json) whose
    pickles carry the payload, and a safetensors file whose JSON names a layer unienv lacks."""
    files = {
        name: str(folder / name) for name in ("plain.pkl", "saved.pt", "crafted.pt2", "crafted.safetensors")
    }
    with open(files["plain.pkl"], "wb") as f:
        pickle.dump(_Payload(marker), f)
    torch.save({"actor": _Payload(marker)}, files["saved.pt"])
    with zipfile.ZipFile(files["crafted.pt2"], "w") as archive:
        archive.writestr("archive/extra/unienv.json", json.dumps({"format": "unienv.policy/1"}))
        archive.writestr("archive/models/model.json", "{}")
        archive.writestr("archive/data/constants.pt", pickle.dumps(_Payload(marker)))
        archive.writestr("archive/data.pkl", pickle.dumps(_Payload(marker)))
    meta = {"format": "unienv.policy/2", "network": [{"type": "os.system", "in": "touch x"}]}
    safetensors.torch.save_file(
        {"0.weight": torch.zeros(1)}, files["crafted.safetensors"], metadata={"unienv": json.dumps(meta)}
    )
    return files


EXPECTED = {
    "plain.pkl": "it is a pickle, whose loading can run code",
    "saved.pt": "it is a zip archive",
    "crafted.pt2": "it is an old unienv policy (format unienv.policy/1",
    "crafted.safetensors": "network[0]: expected a layer type in",
}


def test_no_loading_path_runs_the_code_of_a_malicious_file(tmp_path):
    marker = tmp_path / "pwned"
    files = _malicious_files(tmp_path, marker)
    with open(files["plain.pkl"], "rb") as f:  # the payload is real: unpickling it creates the marker
        pickle.load(f).close()
    assert marker.exists()
    marker.unlink()

    env = unienv.make("cartpole", num_envs=1)
    for name, path in files.items():
        for load in (checkpoint.load_policy, lambda p: make_policy(p, env)):
            with pytest.raises(unienv.ArgumentError, match=f"policy: .*{re.escape(EXPECTED[name])}"):
                load(path)
            assert not marker.exists(), name
    env.close()
    # play.py, each file as `python play.py policy=<file>` runs it, in one process (cli_driver)
    play = os.path.join(ROOT, "play.py")
    cases = [[play, [f"policy={path}", "steps=2", "video.enabled=false"], None] for path in files.values()]
    done = subprocess.run(
        [sys.executable, DRIVER, json.dumps(cases)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for name, (status, err) in zip(files, json.loads(done.stdout.strip().splitlines()[-1]), strict=True):
        assert status == 1 and "Traceback" not in err, err
        assert err.count("\n") == 1 and err.startswith("error: policy: ") and EXPECTED[name] in err, err
    assert not marker.exists()


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
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "does not fit this env" in done.stderr and "task.swingup" in done.stderr
    assert not (tmp_path / "videos").exists() or not any((tmp_path / "videos").iterdir())
