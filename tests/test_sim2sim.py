"""`unienv sim2sim`: the cross-engine report runs on a fresh checkout on the CPU and measures."""

import os

import pytest

from unienv.tools import cli, sim2sim


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


def test_with_no_other_engine_installed_one_line_says_so_first(capsys, monkeypatch):
    from unienv.backends import BackendEntry
    from unienv.errors import install_command

    monkeypatch.setattr(BackendEntry, "installed", lambda self: self.extra is None)  # the default install
    report = sim2sim.main(["--task", "cartpole", "--num-envs", "1", "--episode-steps", "5"])
    lines = capsys.readouterr().out.splitlines()
    commands = " or ".join(install_command(sim2sim.REGISTRY[b].extra) for b in sim2sim.BACKENDS[1:])
    assert lines[0] == (
        f"sim2sim: no engine but mujoco is installed, so there is nothing to compare it with; install {commands}"
    )
    assert f"  mjwarp: skipped (not installed: {install_command('mjwarp')})" in lines
    assert sorted(report["divergence"]) == ["float32 floor"]  # mujoco against its own float32 rounding


def test_the_state_table_titles_every_column():
    steps, columns = sim2sim._header().splitlines()
    assert [f"after {n}" in steps for n in sim2sim.CHECKPOINTS] == [True] * len(sim2sim.CHECKPOINTS)
    assert columns.split() == ["backend"] + ["|qpos|", "|qvel|"] * len(sim2sim.CHECKPOINTS)


def test_engine_output_goes_to_the_log_not_between_the_tables(capfd, tmp_path):
    log = tmp_path / "engines.log"
    with cli.engine_output_to(str(log)) as out:
        os.write(1, b"an engine's C code on stdout\n")
        os.write(2, b"and on stderr\n")
        print("a Python logger's line")
        print("the table", file=out)
    print("after")
    captured = capfd.readouterr()
    assert "the table" in captured.out and "after" in captured.out
    assert "engine" not in captured.out + captured.err and "Python logger" not in captured.out
    assert log.read_text().splitlines() == [
        "an engine's C code on stdout",
        "and on stderr",
        "a Python logger's line",
    ]
