"""The gpu/*.sh scripts, rehearsed on the CPU (UNIENV_GPU_REHEARSAL=1), so that an install or import
error shows here, not on the GPU machine; and the parts of the bench and train.py that the GPU run
reads back (their JSON).

A rehearsal does what the GPU run does, minus the carry sets and the GPU: it installs unienv
non-editable into a temporary directory (pip --target from a copy of the checkout), hides this
machine's editable install, runs one contract test, a tiny bench, or training on a 1 s budget
through that install from the repository root with `python -P`, and exits non-zero if any step fails.
"""

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import unienv
from unienv import bench
from unienv.backends.mujoco import MujocoBackend

from .contract.conftest import MJWARP_DEVICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rehearse(script, *args, tmp_path, **env):
    """Run gpu/<script> in rehearsal mode; its outcome, $OUT's summary.txt and where unienv was installed."""
    out, site = tmp_path / "out", tmp_path / "site"
    done = subprocess.run(
        ["bash", os.path.join(ROOT, "gpu", script), *args],
        env={
            **os.environ,
            "UNIENV_GPU_REHEARSAL": "1",
            "OUT": str(out),
            "UNIENV_SITE": str(site),
            "PY": sys.executable,
            **env,
        },
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )

    summary = out / "summary.txt"
    return done, summary.read_text() if summary.exists() else "", str(site)


def check_passed(done, summary, site, steps):
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"unienv from {site}" in summary  # the installed copy ran, not the checkout
    for step in steps:
        assert f"{step}: exit 0" in summary, summary


BENCH_KEYS = {"task", "backend", "device", "num_envs", "raw_sps", "backend_sps", "env_sps", "backend_ratio"}
BENCH_KEYS |= {
    "reads_sps",
    "reads_ratio",
    "task_sps",
    "task_ratio",
    "env_ratio",
    "backend_overhead_us",
    "env_overhead_us",
    "cuda_graph",
}
EAGER_KEYS = {"env_eager_sps", "env_eager_ratio", "env_eager_overhead_us", "graph_eager_ratio"}


def check_bench_json(path, tasks, num_envs):
    rows = json.loads(path.read_text())["rows"]
    assert [(r["task"], r["num_envs"]) for r in rows] == [(t, n) for t in tasks for n in num_envs]
    for r in rows:
        assert set(r) >= BENCH_KEYS and r["env_sps"] > 0 and r["device"] == "cpu", r
        assert not EAGER_KEYS & set(r)  # no CUDA graph on the CPU: no eager column


def check_training(out, engine, task="quadruped", offpolicy=False):
    metrics = json.loads((out / f"train_{engine}.json").read_text())
    curve, summary, evaluation = metrics["curve"], metrics["summary"], metrics["eval"]
    assert metrics["task"] == task and metrics["backend"] == engine
    assert summary["stopped_by"] == "max_seconds" and len(curve) >= 1
    assert [r["iteration"] for r in curve] == list(range(1, len(curve) + 1))
    if offpolicy:  # the learner's updates ran in the budget, on the env's device
        assert metrics["learner"]["algorithm"] == "crossq" and summary["updates"] > 0, summary
        assert all(r["steps_per_s"] > 0 for r in curve)
    else:
        assert summary["iterations"] == len(curve)
        assert all(r["steps_per_s"] > 0 and r["collect_steps_per_s"] > 0 for r in curve)
    gait = evaluation["gait"]
    assert 0 < gait["lin_vel_error"] < 10 and 0 < gait["yaw_rate_error"] < 10
    assert (out / f"policy_{engine}.safetensors").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.skipif(MJWARP_DEVICE != "cpu", reason="rehearses on Warp's CPU device, which is not here")
def test_mjwarp_check_rehearsal(tmp_path):
    done, summary, site = rehearse(
        "mjwarp_check.sh", "contract", "bench", tmp_path=tmp_path, TASKS="cartpole"
    )
    check_passed(done, summary, site, ["contract_mjwarp", "bench_mjwarp"])
    out = tmp_path / "out"
    assert json.loads((out / "contract_mjwarp.json").read_text())["passed"] == 1
    check_bench_json(out / "bench_mjwarp.json", ["cartpole"], [2])
    assert "does not apply" in (out / "bench_mjwarp.log").read_text()  # no CUDA graph on the CPU


# the off-policy learner's preset as a GPU run gives it, its updates starting within the 1 s budget
CROSSQ = {
    "TRAIN_PRESET": "crossq_go1",
    "TRAIN_OVERRIDES": "train.loop.learning_starts=16 train.loop.batch_size=32 train.loop.log_every=8",
}


@pytest.mark.skipif(MJWARP_DEVICE != "cpu", reason="rehearses on Warp's CPU device, which is not here")
@pytest.mark.skipif(not importlib.util.find_spec("rsl_rl"), reason="rsl_rl is not installed")
@pytest.mark.parametrize("learner", ["ppo", "crossq"])
def test_train_rehearsal(tmp_path, learner):
    """What the GPU machine does with a real robot: gpu/pack_menagerie.sh packs the Go1's folder,
    train mode unpacks it and unienv.robots takes that copy (UNIENV_MENAGERIE_DIR) before this
    machine's asset packages; the Go1 trains on mjwarp for a 1 s budget (rsl_rl's PPO, or the
    off-policy learner with its replay buffer and updates on the env's device), and its curve,
    summary, evaluation and policy come back."""
    carry = tmp_path / "carry"
    env = {**os.environ, "MENAGERIE_CARRY": str(carry), "PY": sys.executable, "XZ_LEVEL": "-0"}
    env.pop("UNIENV_MENAGERIE_DIR", None)
    packed = subprocess.run(
        ["bash", os.path.join(ROOT, "gpu", "pack_menagerie.sh"), "unitree_go1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert packed.returncode == 0 and (carry / "unitree_go1.tar.xz").stat().st_size > 1e6, packed.stderr
    options = CROSSQ if learner == "crossq" else {}
    done, summary, site = rehearse(
        "mjwarp_check.sh", "train", tmp_path=tmp_path, TRAIN_TASK="go1", MENAGERIE_CARRY=str(carry), **options
    )
    check_passed(done, summary, site, ["train_mjwarp"])
    unpacked = tmp_path / "unienv_work" / "menagerie" / "unitree_go1"
    assert f"menagerie: unitree_go1 from {unpacked}" in summary, summary
    check_training(tmp_path / "out", "mjwarp", task="go1_velocity", offpolicy=learner == "crossq")
    assert len(os.listdir(tmp_path / "out")) <= 8  # what the device tool brings back from a call


@pytest.mark.slow
@pytest.mark.skipif(not importlib.util.find_spec("genesis"), reason="genesis-world is not installed")
def test_genesis_check_rehearsal(tmp_path):
    """contract and bench (its train mode is the same lib.sh step as mjwarp's, rehearsed above)."""
    done, summary, site = rehearse(
        "genesis_check.sh", "contract", "bench", tmp_path=tmp_path, TASKS="cartpole"
    )
    check_passed(done, summary, site, ["contract_genesis", "bench_genesis"])
    out = tmp_path / "out"
    assert json.loads((out / "contract_genesis.json").read_text())["passed"] == 1
    check_bench_json(out / "bench_genesis.json", ["cartpole"], [2])


def test_bench_json_holds_every_row(tmp_path):
    path = tmp_path / "bench.json"
    args = ["--task", "cartpole", "reacher", "--num-envs", "1", "2", "--seconds", "0.02", "--rounds", "1"]
    rows = bench.main([*args, "--json", str(path)])
    data = json.loads(path.read_text())
    assert data["rows"] == rows and data["skipped"] == [] and data["meta"]["backend"] == "mujoco"
    check_bench_json(path, ["cartpole", "reacher"], [1, 2])


def test_bench_times_the_eager_env_step_where_the_backend_can_replay_a_graph(tmp_path, monkeypatch, capsys):
    """The GPU-only branch, on the CPU: a mujoco backend that claims the CUDA-graph capability (its env
    built with cuda_graph=False, as nothing can be captured here) gets the eager column and the ratio,
    and the table says the capture did not happen."""
    capabilities = MujocoBackend.get_capabilities
    monkeypatch.setattr(
        MujocoBackend,
        "get_capabilities",
        lambda self: dataclasses.replace(capabilities(self), cuda_graph=True),
    )
    make = unienv.make
    monkeypatch.setattr(bench.unienv, "make", lambda *a, **kw: make(*a, **{"cuda_graph": False, **kw}))
    path = tmp_path / "bench.json"
    rows = bench.main(
        ["--task", "cartpole", "--num-envs", "2", "--seconds", "0.02", "--rounds", "1", "--json", str(path)]
    )
    (row,) = json.loads(path.read_text())["rows"]
    assert row == rows[0] and set(row) >= BENCH_KEYS | EAGER_KEYS and row["cuda_graph"] is False
    assert row["graph_eager_ratio"] == pytest.approx(row["env_sps"] / row["env_eager_sps"])
    out = capsys.readouterr().out
    assert "graph/eager" in out and "capture failed" in out and "does not apply" not in out


@pytest.mark.parametrize(
    "modes, env, failed",
    [
        # the bench refuses the name with one error: line, exit 1, as the other commands do
        (["bench"], {"TASKS": "no_such_task"}, "bench_mjwarp: exit 1"),
        (["contract"], {"CONTRACT_K": "no_such_test"}, "contract_mjwarp: exit 5"),  # pytest selects nothing
        # a failed step does not stop the next; train.py finds no preset train/ppo_no_such_task
        (["bench", "train"], {"TRAIN_TASK": "no_such_task", "TASKS": "no_such_task"}, "bench_mjwarp: exit 1"),
        (["nonsense"], {}, "unknown mode 'nonsense'"),
    ],
)
def test_a_failing_step_fails_the_script(tmp_path, modes, env, failed):
    done, summary, _ = rehearse("mjwarp_check.sh", *modes, tmp_path=tmp_path, **env)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert failed in summary and "FAILED" in summary, summary
    if modes == ["bench", "train"]:
        assert "train_mjwarp: exit 1" in summary and "FAILED steps: bench_mjwarp train_mjwarp" in summary
