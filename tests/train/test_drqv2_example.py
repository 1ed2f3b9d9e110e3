"""examples/drqv2.py: run as a user runs it for a few steps, and its replay buffer's n-step returns."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import torch

EXAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "drqv2.py"
)


def example():
    spec = importlib.util.spec_from_file_location("drqv2", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_drqv2_runs_from_pixels_and_updates(tmp_path):
    """60 env steps on 2 envs of 32x32 frames, the last 30 with updates; writes nothing."""
    args = ["--num-envs", "2", "--size", "32", "--total-steps", "60", "--learning-starts", "30"]
    args += ["--batch-size", "8", "--log-every", "30", "--eval-envs", "0", "--buffer-size", "1000"]
    done = subprocess.run(
        [sys.executable, EXAMPLE, *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(re.findall(r"^steps \d+", done.stdout, re.M)) == 2, done.stdout
    assert "env_steps 60" in done.stdout.strip().splitlines()[-1]
    assert "nan" not in done.stdout  # no episode ends in 60 steps: the lines say so, not "nan"
    assert os.listdir(tmp_path) == []


def test_a_stopped_run_resumes_and_other_options_are_refused(tmp_path):
    """Stopped after its first step by --max-seconds, the run continues with --resume to its end,
    its curve carried on; a resume with another batch size, or a new run over it, is refused."""
    args = ["--num-envs", "2", "--size", "32", "--total-steps", "60", "--learning-starts", "30"]
    args += ["--batch-size", "8", "--log-every", "30", "--eval-envs", "2", "--eval-every", "20"]
    args += ["--buffer-size", "1000", "--updates-per-step", "2"]
    args += ["--run-dir", str(tmp_path / "run")]

    def example_run(*more, status=0):
        done = subprocess.run(
            [sys.executable, EXAMPLE, *args, *more], capture_output=True, text=True, timeout=600
        )
        assert done.returncode == status, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    stopped = example_run("--max-seconds", "0.001")
    assert "stopped by --max-seconds" in stopped.stdout and "env_steps 2," in stopped.stdout, stopped.stdout
    saved = os.path.getmtime(tmp_path / "run" / "checkpoint.pt")
    assert "holds a run" in example_run(status=1).stderr
    refused = example_run("--resume", "--batch-size", "16", status=1)
    assert "--batch-size: the run has 8, this one 16" in refused.stderr
    assert os.path.getmtime(tmp_path / "run" / "checkpoint.pt") == saved
    done = example_run("--resume")
    assert "resumed" in done.stdout and "env_steps 60," in done.stdout.strip().splitlines()[-1], done.stdout
    with open(tmp_path / "run" / "metrics.json") as f:
        curve = json.load(f)["curve"]
    assert [row["env_steps"] for row in curve] == [20, 40, 60]
    assert all(row["seconds"] > 0 for row in curve) and curve[-1]["updates"] == 30


def test_ended_episodes_give_the_progress_line_and_the_curve_their_return(tmp_path):
    """At action repeat 125 a cartpole episode lasts 8 env steps: each progress line and curve row
    carries the mean return of the episodes ended since the last line."""
    args = ["--num-envs", "2", "--size", "32", "--total-steps", "40", "--learning-starts", "20"]
    args += ["--batch-size", "8", "--log-every", "20", "--eval-envs", "2", "--eval-every", "20"]
    args += ["--buffer-size", "1000", "--action-repeat", "125", "--run-dir", str(tmp_path / "run")]
    done = subprocess.run([sys.executable, EXAMPLE, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    returns = [float(r) for r in re.findall(r"^steps \d+  return \(\d+ episodes\) (\S+)", done.stdout, re.M)]
    assert len(returns) == 2, done.stdout
    with open(tmp_path / "run" / "metrics.json") as f:
        curve = json.load(f)["curve"]
    assert [round(row["train_return"], 1) for row in curve] == returns


def test_n_step_returns_stop_at_an_episode_end_and_skip_reset_steps():
    drq = example()
    buffer = drq.ReplayBuffer(8, 1, (1,), 1, torch.device("cpu"))
    # slots 0..5 of one env: obs = slot index, reward 1, 2, 4, 8, 16, 32; the episode ends
    # (truncated) at slot 1, so slot 2 holds its last obs and a reset step, slot 3 starts anew
    for t in range(6):
        done = torch.tensor([t == 1])
        buffer.add(torch.full((1, 1), t, dtype=torch.uint8), torch.zeros(1, 1), torch.tensor([2.0**t]),
                   torch.tensor([False]), done, torch.tensor([t != 2]))  # fmt: skip
    obs, _, reward, discount, next_obs, valid = buffer.sample(512, n_step=2, gamma=0.5)
    for t, want_reward, want_discount, want_next in [
        (0, 1 + 0.5 * 2, 0.25, 2),
        (1, 2, 0.5, 2),
        (3, 8 + 0.5 * 16, 0.25, 5),
    ]:
        rows = obs[:, 0] == t
        assert rows.any()
        assert (reward[rows] == want_reward).all() and (discount[rows] == want_discount).all()
        assert (next_obs[rows, 0] == want_next).all() and valid[rows].all()
    assert not valid[obs[:, 0] == 2].any() and (obs[:, 0] <= 3).all()  # room for n + 1 slots


def test_the_pre_tanh_penalty_keeps_the_actor_off_its_bounds_and_learning():
    """A critic whose tiny pull (dQ/da = +-0.01) depends on the image: with Adam at the default
    learning rate the actor turns each action the right way with or without the penalty, but
    without it the pre-tanh output keeps growing towards the bound where tanh passes no gradient;
    with the default penalty it settles where tanh still passes one."""
    drqv2 = example()

    class Split(torch.nn.Module):
        def forward(self, features, actions):
            q = (0.01 * torch.where(features[:, :1] > 0.5, 1.0, -1.0) * actions).sum(-1)
            return torch.stack([q, q])

    def train_actor(penalty: float) -> list[torch.Tensor]:
        torch.manual_seed(0)
        actor = drqv2.Actor(64, 3, 16, 32)
        optimizer = torch.optim.Adam(actor.parameters(), lr=drqv2.parse_args([]).lr)
        outputs = []
        for step in range(1, 1501):
            optimizer.zero_grad()
            drqv2.actor_loss(actor, Split(), features, 0.5, 0.3, penalty).backward()
            optimizer.step()
            if step % 500 == 0:
                with torch.no_grad():
                    outputs.append(actor.pre_tanh(features))
        return outputs

    features = torch.rand(32, 64, generator=torch.Generator().manual_seed(1))
    wanted = torch.where(features[:, :1] > 0.5, 1.0, -1.0)
    free = train_actor(0.0)
    held = train_actor(drqv2.parse_args([]).pre_tanh_penalty)
    assert (torch.sign(free[-1]) == wanted).all() and (torch.sign(held[-1]) == wanted).all()
    assert free[-1].abs().max() > 4 and free[-1].abs().mean() > free[-2].abs().mean() + 0.5
    assert held[-1].abs().max() < 2 and (held[-1] - held[-2]).abs().mean() < 0.2
