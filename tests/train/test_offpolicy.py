"""The off-policy learner (unienv.training.offpolicy): each algorithm's update learns a tiny
problem, the exported actor is the learner's deterministic action, train.py's run resumes bit for
bit after SIGTERM, its policy file and ONNX export carry the task's contract, and bad settings and
foreign checkpoints are refused by name. Seconds each."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import safetensors.torch
import torch

from unienv.training.checkpoint import find_checkpoint, load_checkpoint, save_checkpoint
from unienv.training.offpolicy.learner import Learner, LearnerConfig
from unienv.training.offpolicy.networks import exportable_actor
from unienv.training.offpolicy.replay import ReplayBuffer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# inverted_pendulum with small networks: a few hundred env steps a second under load
SMALL = [
    "train=crossq_hopper", "task=inverted_pendulum", "num_envs=4", "train.eval_steps=0",
    "train.learner.width=32", "train.loop.batch_size=64", "train.loop.learning_starts=200",
    "train.loop.log_every=200", "train.loop.updates_per_step=1", "train.learner.warmup=100",
]  # fmt: skip


@pytest.mark.parametrize("preset", ["crossq_go1", "crossq_hopper"])
def test_each_off_policy_preset_lists_every_setting(preset):
    """A setting missing from the preset's YAML could not be overridden on the command line
    (Hydra refuses an unknown key): each lists every LearnerConfig and LoopConfig field."""
    import dataclasses

    import yaml

    from unienv.training.offpolicy.loop import LoopConfig

    with open(os.path.join(ROOT, "cfg", "train", f"{preset}.yaml")) as f:
        train = yaml.safe_load(f)["train"]
    for key, config in (("learner", LearnerConfig), ("loop", LoopConfig)):
        assert sorted(train[key]) == sorted(f.name for f in dataclasses.fields(config)), key


@pytest.mark.parametrize("algorithm", ["crossq", "droq", "sac"])
def test_each_algorithm_learns_a_one_step_problem(algorithm, one_torch_thread):
    """Reward -|a - target(obs)|^2 and every transition terminal: Q is the reward, and the actor's
    deterministic action must move to the target (from about 0.6 away at the start)."""
    torch.manual_seed(0)
    obs_dim, act_dim = 3, 2
    config = LearnerConfig(algorithm=algorithm, width=64, lr=3e-3, warmup=200, init_alpha=0.01)
    learner = Learner(obs_dim, act_dim, -torch.ones(act_dim), torch.ones(act_dim), config)
    buffer = ReplayBuffer(10_000, obs_dim, act_dim, "cpu", seed=0)

    def target(obs):
        return 0.6 * torch.tanh(obs[:, :act_dim])

    obs = torch.randn(4000, obs_dim)
    actions = torch.rand(4000, act_dim) * 2 - 1
    reward = -(actions - target(obs)).square().sum(1)
    buffer.add(obs=obs, action=actions, reward=reward, next_obs=obs, terminated=torch.ones(4000))
    probe = torch.randn(256, obs_dim)
    before = (learner.act_deterministic(probe) - target(probe)).abs().mean()
    for _ in range(900):
        learner.update(buffer.sample(128))
    after = (learner.act_deterministic(probe) - target(probe)).abs().mean()
    assert after < 0.12 and after < before / 3, (float(before), float(after))


@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (-2.0, 3.0)])
def test_the_exported_actor_is_the_deterministic_action(bounds, one_torch_thread):
    """Batch renormalization folded into the linear layers, the bounds into a last layer."""
    torch.manual_seed(1)
    low, high = torch.full((3,), bounds[0]), torch.full((3,), bounds[1])
    learner = Learner(5, 3, low, high, LearnerConfig(width=16, warmup=20))
    buffer = ReplayBuffer(1000, 5, 3, "cpu")
    x = torch.randn(500, 5) * 3 + 1  # not already normalized: the statistics matter
    buffer.add(
        obs=x, action=torch.rand(500, 3), reward=torch.randn(500), next_obs=x, terminated=torch.zeros(500)
    )
    for _ in range(60):
        learner.update(buffer.sample(64))
    exported = exportable_actor(learner.actor)
    probe = torch.randn(100, 5) * 3 + 1
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in exported)
    torch.testing.assert_close(exported(probe), learner.act_deterministic(probe), rtol=1e-5, atol=1e-5)


def command(run_dir, *options):
    return [sys.executable, os.path.join(ROOT, "train.py"), *SMALL, f"hydra.run.dir={run_dir}", *options]


def train(run_dir, *options, status=0):
    done = subprocess.run(
        command(run_dir, *options), cwd=run_dir.parent, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == status, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def curve(run_dir):
    with open(run_dir / "metrics.json") as f:
        return json.load(f)["curve"]


def learning(rows):
    keys = (
        "iteration",
        "env_steps",
        "updates",
        "episodes",
        "mean_return",
        "mean_episode_length",
        "episode",
        "losses",
    )
    return [{k: row[k] for k in keys} for row in rows]


def test_sigterm_then_resume_gives_the_uninterrupted_run_bit_for_bit(tmp_path):
    total = "train.loop.env_steps=2000"
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    whole.mkdir(), cut.mkdir()
    assert "in this process)" not in train(whole, total).stdout  # one process: no share to name
    process = subprocess.Popen(
        command(cut, total), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(curve(cut)) >= 3:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    assert process.poll() is None, process.stdout.read().decode()[-2000:]
    process.send_signal(signal.SIGTERM)
    out = process.communicate(timeout=300)[0].decode()
    assert process.returncode == 128 + signal.SIGTERM, out[-2000:]
    assert "stopped: signal" in out and "resume with" in out, out[-2000:]
    stopped = load_checkpoint(str(cut))[1]["env_steps"]
    assert 600 <= stopped < 2000, stopped

    done = train(cut, total, f"train.resume={cut}")
    assert f"resumed {find_checkpoint(str(cut))}" not in done.stdout  # it wrote a newer one since
    # the summary counts the whole run's env steps, and names this process's share after a resume
    assert ": 2,000 env steps and" in done.stdout, done.stdout[-2000:]
    assert f"({2000 - stopped:,} of the env steps in this process)" in done.stdout, done.stdout[-2000:]
    assert learning(curve(cut)) == learning(curve(whole))
    a = safetensors.torch.load_file(whole / "policy.safetensors")
    b = safetensors.torch.load_file(cut / "policy.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert [p.name for p in cut.glob("model_*.pt")] == ["model_2000.pt"]  # the older one removed


def test_a_legged_run_resumes_with_its_gait_sums(tmp_path):
    """A velocity task reports gait statistics per episode (speed, contacts, power); a run stopped
    between two curve rows carries their sums in its checkpoint, and its resumption takes them."""
    legged = ["task=go1_velocity", "task.episode_length_s=0.2", "train.loop.log_every=1000000"]
    legged += ["train.loop.env_steps=1000000"]
    train(tmp_path, *legged, "train.max_seconds=1")
    sums = load_checkpoint(str(tmp_path))[1]["sums"]
    assert {"speed", "power", "contact_FL_calf"} <= set(sums) and sums["episodes"] > 0, sorted(sums)
    done = train(tmp_path, *legged, "train.max_seconds=2", f"train.resume={tmp_path}")
    assert f"resumed {tmp_path}" in done.stdout, done.stdout[-2000:]
    assert load_checkpoint(str(tmp_path))[1]["sums"]["episodes"] > sums["episodes"]


def test_a_checkpoint_of_another_run_or_with_nan_is_refused(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    train(first, "train.loop.env_steps=400")
    other = tmp_path / "other"
    other.mkdir()
    done = train(other, "train.loop.env_steps=800", "seed=3", f"train.resume={first}", status=1)
    assert (
        "checkpoint of another run" in done.stderr and "seed: the checkpoint has 0, this run 3" in done.stderr
    )

    path, state = load_checkpoint(str(first))
    state.pop("format")
    state["learner"]["actor"]["net.1.weight"][0, 0] = float("nan")
    save_checkpoint(str(tmp_path / "bad.pt"), state, fmt="unienv.train.offpolicy/1")
    done = train(other, "train.loop.env_steps=800", f"train.resume={tmp_path / 'bad.pt'}", status=1)
    assert "learner.actor.net.1.weight: holds NaN" in done.stderr, done.stderr[-2000:]
    assert not (other / "policy.safetensors").exists()


def test_the_policy_file_and_onnx_carry_the_tasks_contract(tmp_path):
    pytest.importorskip("onnxruntime")
    from unienv.training.export import compare, export_onnx, sample_observations
    from unienv.training.policy import load_policy

    run = tmp_path / "run"
    run.mkdir()
    train(run, "task=quadruped", "num_envs=2", "train.loop.env_steps=400", "train.loop.learning_starts=100")
    _, meta = load_policy(str(run / "policy.safetensors"))
    assert meta["task"] == "quadruped" and meta["info"]["library"] == "unienv crossq"
    assert meta["contract"]["action"]["type"] == "joint_position" and "joint_pos" in [
        block["name"] for block in meta["contract"]["observation"]
    ]
    export_onnx(str(run / "policy.safetensors"), str(run / "policy.onnx"))
    observations = sample_observations(str(run / "policy.safetensors"), count=200)
    assert compare(str(run / "policy.safetensors"), str(run / "policy.onnx"), observations) < 1e-5
    assert np.isfinite(observations).all()


@pytest.mark.parametrize(
    "option, message",
    [
        ("train.learner.algorithm=crosq", "did you mean 'crossq'"),
        ("train.loop.batch_size=0", "train.loop.batch_size: expected an integer >= 1, got 0"),
        ("+train.loop.batchsize=64", "did you mean 'batch_size'"),
        ("train.learner.gamma=1.5", "train.learner.gamma: expected a number in (0, 1), got 1.5"),
    ],
)
def test_bad_settings_are_refused_in_one_line(tmp_path, option, message):
    done = train(tmp_path, option, status=1)
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
