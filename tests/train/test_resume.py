"""train.py stopped and resumed: SIGTERM mid-run, then train.resume, gives the uninterrupted run's
iterations bit for bit (CPU); SIGKILL loses at most one checkpoint interval; a checkpoint of another
run is refused. Real train.py subprocesses on cartpole with small batches (a few seconds each)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import safetensors.torch

from unienv.training.checkpoint import find_checkpoint, load_checkpoint

pytest.importorskip("rsl_rl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ["num_envs=32", "train.runner.num_steps_per_env=16", "train.eval_steps=0"]


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


def start_and_signal(run_dir, signum, after, *options):
    """train.py in the background, sent signum once metrics.json has `after` iterations."""
    process = subprocess.Popen(
        command(run_dir, *options), cwd=run_dir.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(curve(run_dir)) >= after:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    assert process.poll() is None, (
        "the run ended before the signal: " + process.stdout.read().decode()[-2000:]
    )
    process.send_signal(signum)
    out = process.communicate(timeout=300)[0].decode()
    return process.returncode, out


def the_same(a, b):
    """Two curve rows' learning figures (not their timings) are equal."""
    keys = ("iteration", "env_steps", "mean_return", "mean_episode_length", "episode", "losses")
    return {k: a[k] for k in keys} == {k: b[k] for k in keys}


def test_sigterm_then_resume_gives_the_uninterrupted_runs_iterations(tmp_path):
    total = 30
    whole, cut, resumed = tmp_path / "whole", tmp_path / "cut", tmp_path / "resumed"
    for d in (whole, cut, resumed):
        d.mkdir()
    train(whole, f"train.iterations={total}")
    uninterrupted = curve(whole)
    assert len(uninterrupted) == total

    status, out = start_and_signal(cut, signal.SIGTERM, 3, f"train.iterations={total}")
    assert status == 128 + signal.SIGTERM, out[-2000:]
    stopped = curve(cut)
    k = len(stopped)
    assert 3 <= k < total, out[-2000:]
    with open(cut / "metrics.json") as f:
        assert json.load(f)["summary"]["stopped_by"] == "SIGTERM"
    assert (cut / "policy.safetensors").exists()  # the policy so far, written before exiting
    assert f"resume with: python train.py train.resume={cut}" in out, out[-2000:]
    path, state = load_checkpoint(str(cut))
    assert path == str(cut / f"model_{k - 1}.pt") and state["iterations"] == k
    assert all(the_same(a, b) for a, b in zip(stopped, uninterrupted[:k], strict=True))

    out = train(resumed, f"train.iterations={total}", f"train.resume={cut}").stdout
    assert f"{k} iterations done, {total - k} to go" in out
    continued = curve(resumed)
    assert len(continued) == total  # the curve continues: the cut run's rows, then the new ones
    different = [a["iteration"] for a, b in zip(continued, uninterrupted, strict=True) if not the_same(a, b)]
    assert different == [], f"iterations that differ from the uninterrupted run: {different}"
    assert continued[-1]["seconds"] > stopped[-1]["seconds"]
    ours = safetensors.torch.load_file(resumed / "policy.safetensors")
    theirs = safetensors.torch.load_file(whole / "policy.safetensors")
    assert ours.keys() == theirs.keys() and all((ours[n] == theirs[n]).all() for n in ours)


def test_sigkill_loses_at_most_one_checkpoint_interval_and_another_runs_checkpoint_is_refused(tmp_path):
    interval = 3
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    options = (
        "train.iterations=200",
        f"train.runner.save_interval={interval}",
        "train.checkpoint_minutes=null",
    )
    status, _ = start_and_signal(run_dir, signal.SIGKILL, 10, *options)
    assert status == -signal.SIGKILL
    done = len(curve(run_dir))  # metrics.json is rewritten, whole, after every iteration
    path, state = load_checkpoint(str(run_dir))  # the newest checkpoint is whole: written atomically
    # metrics.json is written before the iteration's checkpoint: a kill between the two loses a
    # whole interval, no more
    assert done - interval <= state["iterations"] <= done and path == find_checkpoint(str(run_dir))

    again = tmp_path / "again"
    again.mkdir()
    out = train(again, f"train.iterations={state['iterations'] + 2}", f"train.resume={path}").stdout
    assert len(curve(again)) == state["iterations"] + 2, out[-2000:]

    refused = train(again, "seed=1", "train.iterations=300", f"train.resume={path}", status=1)
    assert "train.resume:" in refused.stderr and "seed: the checkpoint has 0, this run 1" in refused.stderr


def test_checkpoint_minutes_writes_after_the_iteration_that_passes_it(tmp_path):
    """A time interval shorter than an iteration: a checkpoint after every one, each resumable."""
    run_dir = tmp_path / "timed"
    run_dir.mkdir()
    train(run_dir, "train.iterations=4", "train.runner.save_interval=1000", "train.checkpoint_minutes=1e-6")
    assert sorted(p.name for p in run_dir.glob("model_*.pt")) == [f"model_{i}.pt" for i in range(4)]
    assert [load_checkpoint(str(run_dir / f"model_{i}.pt"))[1]["iterations"] for i in range(4)] == [
        1,
        2,
        3,
        4,
    ]
    assert not list(run_dir.glob("*.tmp*"))  # every temporary file was moved into place


def test_time_budget_drives_the_eta_and_a_spent_budget_is_refused_on_resume(tmp_path):
    """train.max_seconds ends the run before train.iterations: rsl_rl's header and ETA count to the
    budget's end, not to the iteration cap; a resume whose run has already spent the budget (it
    counts the whole run) is refused with the option to raise, not run for one silent iteration."""
    run_dir = tmp_path / "budget"
    run_dir.mkdir()
    out = train(run_dir, "train.iterations=100000", "train.max_seconds=3").stdout
    totals = [int(line.split("/")[1].split()[0]) for line in out.splitlines() if "Learning iteration" in line]
    assert totals and max(totals) < 1000, totals  # the budget's few iterations, not 100000
    done = len(curve(run_dir))
    assert totals[-1] == done  # the last iteration's header counts exactly to where the budget ended
    again = tmp_path / "again"
    again.mkdir()
    resume = f"train.resume={find_checkpoint(str(run_dir))}"
    refused = train(again, "train.iterations=100000", "train.max_seconds=2", resume, status=1)
    assert "train.max_seconds: the run has trained" in refused.stderr and "raise it" in refused.stderr
    assert not (again / "metrics.json").exists()  # nothing trained
