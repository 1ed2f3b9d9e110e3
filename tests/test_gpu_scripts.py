"""The gpu/*.sh scripts, rehearsed on the CPU (UNIENV_GPU_REHEARSAL=1), so that an install or import
error shows here, not on the GPU machine.

A rehearsal does what the GPU run does, minus the carry sets and the GPU: it installs unienv
non-editable into a temporary directory (pip --target from a copy of the checkout), hides this
machine's editable install, runs one contract test and a tiny bench (or two training iterations)
through that install from the repository root with `python -P`, and exits non-zero if any step fails.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from .contract.conftest import MJWARP_DEVICE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rehearse(script, *args, tmp_path, **env):
    """Run gpu/<script> in rehearsal mode; its output, and $OUT's summary.txt and env.txt."""
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

    def read(name):
        return (out / name).read_text() if (out / name).exists() else ""

    return done, read("summary.txt"), read("env.txt"), str(site)


def check_passed(done, summary, env, site, steps):
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"unienv from {site}" in env  # the installed copy ran, not the checkout
    for step in steps:
        assert f"{step}: exit 0" in summary, summary


@pytest.mark.slow
@pytest.mark.skipif(MJWARP_DEVICE != "cpu", reason="rehearses on Warp's CPU device, which is not here")
def test_mjwarp_check_rehearsal(tmp_path):
    done, summary, env, site = rehearse("mjwarp_check.sh", "all", tmp_path=tmp_path, TASKS="cartpole")
    check_passed(done, summary, env, site, ["contract_mjwarp", "bench_mjwarp"])
    assert "1 passed" in (tmp_path / "out" / "contract_mjwarp.log").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not importlib.util.find_spec("genesis"), reason="genesis-world is not installed")
def test_genesis_check_rehearsal(tmp_path):
    done, summary, env, site = rehearse("genesis_check.sh", "all", tmp_path=tmp_path, TASKS="cartpole")
    check_passed(done, summary, env, site, ["contract_genesis", "bench_genesis"])
    assert "1 passed" in (tmp_path / "out" / "contract_genesis.log").read_text()


@pytest.mark.skipif(not importlib.util.find_spec("rsl_rl"), reason="rsl_rl is not installed")
def test_train_rehearsal(tmp_path):
    done, summary, env, site = rehearse("train_ant.sh", tmp_path=tmp_path, BACKEND="mujoco")
    check_passed(done, summary, env, site, ["train"])
    assert "iterations logged: 2" in summary


@pytest.mark.parametrize(
    "mode, env, failed",
    [
        ("bench", {"TASKS": "no_such_task"}, "bench_mjwarp: exit 2"),  # the bench refuses the name
        ("contract", {"CONTRACT_K": "no_such_test"}, "contract_mjwarp: exit 5"),  # pytest selects nothing
    ],
)
def test_a_failing_step_fails_the_script(tmp_path, mode, env, failed):
    done, summary, _, _ = rehearse("mjwarp_check.sh", mode, tmp_path=tmp_path, **env)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert failed in summary and "FAILED steps" in summary, summary
