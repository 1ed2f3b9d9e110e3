"""`unienv sim2sim`: the cross-engine report runs on a fresh checkout on the CPU and measures."""

import pytest

from unienv import sim2sim


@pytest.mark.slow
def test_sim2sim_reports_every_backend_against_mujoco(capsys, tmp_path):
    plot = tmp_path / "returns.png"
    report = sim2sim.main(
        [
            "--task",
            "cartpole",
            "--num-envs",
            "2",
            "--episode-steps",
            "60",
            "--device",
            "cpu",
            "--plot",
            str(plot),
        ]
    )
    out = capsys.readouterr().out
    assert "state difference to mujoco" in out and "float32 floor" in out
    rows = report["divergence"]
    assert "float32 floor" in rows and len(rows) >= 2  # at least one other backend ran here
    for backend, row in rows.items():
        assert sorted(row) == list(sim2sim.CHECKPOINTS), backend
        qpos_err, qvel_err = row[1]
        assert qpos_err < 1e-6 and qvel_err < 1e-6, backend  # one step apart: float precision at most
    for name, returns in report["returns"].items():
        assert returns and min(returns) > 0, name  # cartpole pays +1 a step: episodes ended and counted
    assert plot.exists() or "matplotlib is not installed" in out
