"""train.py under torchrun on CPU ranks (gloo), with its faults: a stopped rank ends the job within
distributed.timeout_s + 30 s (torchrun reaps it) and is named, a killed rank ends it at once,
SIGTERM checkpoints once and the checkpoint resumes on 2 ranks bit for bit and on 1 rank re-seeded,
two torchrun "nodes" over loopback train one policy. Real torchrun launches of cartpole, few envs,
short runs (each launch costs seconds of imports on a loaded machine)."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
import safetensors.torch

from unienv.training.checkpoint import load_checkpoint

pytest.importorskip("rsl_rl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ["num_envs=16", "train.runner.num_steps_per_env=16", "train.eval_steps=0"]
TIMEOUT_S = 3  # distributed.timeout_s in these tests (60 by default)


def torchrun(run_dir, *options, nproc=2, launcher=("--standalone",)):
    """train.py under torchrun with nproc CPU ranks, in the background, output to run_dir's log."""
    run_dir.mkdir(exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        *launcher,
        f"--nproc_per_node={nproc}",
        os.path.join(ROOT, "train.py"),
        *SMALL,
        f"distributed.timeout_s={TIMEOUT_S}",
        f"hydra.run.dir={run_dir}",
        *options,
    ]
    log = open(run_dir.parent / f"{run_dir.name}.log", "w")  # noqa: SIM115  (closed by output())
    return subprocess.Popen(command, cwd=run_dir.parent, stdout=log, stderr=subprocess.STDOUT)


def output(process, run_dir, timeout=300):
    """(exit status, everything torchrun and its ranks printed) once the job has ended."""
    try:
        status = process.wait(timeout=timeout)
    finally:
        for child in psutil.Process(process.pid).children(recursive=True) if process.poll() is None else ():
            child.kill()  # only a job that outlived the test's wait; its ranks are ours
    return status, (run_dir.parent / f"{run_dir.name}.log").read_text(errors="replace")


def finished(run_dir, *options, nproc=2):
    status, out = output(torchrun(run_dir, *options, nproc=nproc), run_dir)
    assert status == 0, out[-3000:]
    return out


def iterations_done(run_dir):
    try:
        with open(run_dir / "metrics.json") as f:
            return len(json.load(f)["curve"])
    except (OSError, ValueError, KeyError):
        return 0


def wait_for_iterations(process, run_dir, count):
    """Until rank 0's metrics.json holds `count` iterations; fails if the job ended first."""
    deadline = time.monotonic() + 300
    while iterations_done(run_dir) < count and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None and iterations_done(run_dir) >= count, "the run ended before the fault"


def rank_process(process, rank):
    """The psutil process of one rank of a torchrun job (by its RANK environment variable)."""
    for child in psutil.Process(process.pid).children(recursive=True):
        if child.environ().get("RANK") == str(rank) and "train.py" in " ".join(child.cmdline()):
            return child
    raise AssertionError(f"rank {rank} not found")


def test_a_stopped_rank_ends_the_job_within_the_bound_and_the_line_names_it(tmp_path):
    run_dir = tmp_path / "stopped"
    process = torchrun(run_dir, "train.iterations=100000")
    wait_for_iterations(process, run_dir, 2)
    rank_process(process, 1).send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    status, out = output(process, run_dir, timeout=120)
    elapsed = time.monotonic() - stopped
    assert status != 0, out[-3000:]
    # rank 0's watchdog sees rank 1's heartbeat stop and ends rank 0; torchrun then SIGKILLs rank 1
    # after the 30 s its launcher gives a failed job's other workers
    assert f"rank 0/2: rank 1 has not answered for {TIMEOUT_S} s" in out, out[-3000:]
    assert elapsed < 120, f"the job took {elapsed:.0f} s to end (bound {TIMEOUT_S} + 30 s)"
    print(f"stopped rank: the job ended {elapsed:.1f} s after SIGSTOP")


def test_a_killed_rank_ends_the_job_at_once(tmp_path):
    run_dir = tmp_path / "killed"
    process = torchrun(run_dir, "train.iterations=100000")
    wait_for_iterations(process, run_dir, 2)
    rank_process(process, 0).kill()
    killed = time.monotonic()
    status, out = output(process, run_dir, timeout=120)
    elapsed = time.monotonic() - killed
    assert status != 0 and "exitcode  : -9" in out and "Signal 9 (SIGKILL) received by PID" in out, out[
        -3000:
    ]
    assert elapsed < 60, f"the job took {elapsed:.0f} s to end after SIGKILL"
    print(f"killed rank: the job ended {elapsed:.1f} s after SIGKILL")


def policy(run_dir):
    return safetensors.torch.load_file(run_dir / "policy.safetensors")


@pytest.mark.slow
def test_sigterm_checkpoints_once_then_resumes_on_two_ranks_exactly_and_on_one_rank(tmp_path):
    total = 40
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    finished(whole, f"train.iterations={total}")

    process = torchrun(cut, f"train.iterations={total}")
    wait_for_iterations(process, cut, 3)
    process.send_signal(signal.SIGTERM)  # to torchrun, as a scheduler's preemption: it forwards it
    status, out = output(process, cut)
    assert status != 0 and out.count("SIGTERM: stopping after this iteration") == 2, out[-3000:]
    assert out.count("policy: ") == 1 and len(set(re.findall(r"policy digest (\S+)", out))) == 1
    path, state = load_checkpoint(str(cut))
    k = state["iterations"]
    assert 3 <= k < total and path.endswith(f"model_{k - 1}.pt"), out[-3000:]
    assert state["run"]["processes"] == 2 and len(state["other_ranks"]) == 1  # rank 1's own state
    with open(cut / "metrics.json") as f:
        assert json.load(f)["summary"]["stopped_by"] == "SIGTERM"

    again = tmp_path / "again"
    out = finished(again, f"train.iterations={total}", f"train.resume={cut}")
    assert f"{k} iterations done, {total - k} to go; 2 -> 2 processes, envs restored" in out
    ours, theirs = policy(again), policy(whole)
    assert ours.keys() == theirs.keys() and all((ours[n] == theirs[n]).all() for n in ours)

    one = tmp_path / "one"
    out = finished(one, f"train.iterations={k + 2}", f"train.resume={cut}", nproc=1)
    assert f"{k} iterations done, 2 to go; 2 -> 1 processes, envs re-seeded" in out, out[-3000:]
    with open(one / "metrics.json") as f:
        curve = json.load(f)["curve"]
    steps = [row["env_steps"] for row in curve]
    assert len(curve) == k + 2 and steps[k] - steps[k - 1] == 16 * 16 == steps[k + 1] - steps[k]
    assert any((policy(one)[n] != policy(cut)[n]).any() for n in policy(cut))  # it trained on


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_over_loopback_train_one_policy(tmp_path):
    """The multi-node command of docs/training.md, both "nodes" on this machine."""
    launcher = (
        "--nnodes=2",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint=127.0.0.1:{free_port()}",
        "--rdzv_id=loopback",
    )
    nodes = [tmp_path / "node_a", tmp_path / "node_b"]
    jobs = [torchrun(d, "train.iterations=2", nproc=1, launcher=launcher) for d in nodes]
    outs = []
    for job, d in zip(jobs, nodes, strict=True):
        status, out = output(job, d)
        assert status == 0, out[-3000:]
        outs.append(out)
    out = "".join(outs)
    assert "x16 envs x2 processes: 1024 env steps" in out, out[-3000:]  # 2 iterations x 16 x 16 x 2
    digests = set(re.findall(r"rank [01]/2: .* policy digest (\S+)", out))
    assert len(digests) == 1, out[-3000:]
    assert sum((d / "policy.safetensors").exists() for d in nodes) == 1  # written once, by rank 0
