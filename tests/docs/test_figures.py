"""scripts/compare_runs.py, the laptop page's learning curves: runs grouped by label, over
wall-clock minutes, from the runs' own metrics.json (here written as train.py writes its rows);
scripts/pixel_looks.py, the Pixels page's picture of both camera looks."""

import json
import os
import sys

from tests.docs.examples import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))

import compare_runs  # noqa: E402
import pixel_looks  # noqa: E402


def _run(folder, seconds, errors):
    folder.mkdir()
    rows = [
        {"env_steps": 1000 * (i + 1), "seconds": s, "mean_return": 10.0 * i, "episode": {"lin_vel_error": e}}
        for i, (s, e) in enumerate(zip(seconds, errors, strict=True))
    ]
    (folder / "metrics.json").write_text(json.dumps({"curve": rows}))
    return str(folder)


def test_runs_are_drawn_by_label_with_their_velocity_error(tmp_path, capsys):
    a = _run(tmp_path / "a", [60, 120, 180], [0.5, 0.2, 0.1])
    b = _run(tmp_path / "b", [70, 130, 170], [0.4, 0.3, None])  # a row without the metric
    c = _run(tmp_path / "c", [60, 200], [0.6, 0.5])
    out = tmp_path / "curves.png"
    compare_runs.main([f"crossq={a},{b}", f"sac={c}", "--out", str(out)])
    printed = capsys.readouterr().out
    assert "crossq" in printed and "sac" in printed and "3,000 env steps in 3.0 min" in printed
    assert out.stat().st_size > 10_000


def test_drqv2_runs_are_drawn_by_their_evaluation_return(tmp_path, capsys):
    run = tmp_path / "drq"
    run.mkdir()
    rows = [
        {"env_steps": 2000 * (i + 1), "seconds": 60.0 * (i + 1), "eval_return": r}
        for i, r in enumerate([90, 300, 550])
    ]
    (run / "metrics.json").write_text(json.dumps({"curve": rows, "random_return": 126.0}))
    compare_runs.main(["--out", str(tmp_path / "c.png"), f"drqv2={run}"])
    assert "6,000 env steps in 3.0 min; last return 550.0" in capsys.readouterr().out
    assert (tmp_path / "c.png").stat().st_size > 0


def test_the_pixel_looks_picture_has_a_row_per_look(tmp_path, capsys):
    """scripts/pixel_looks.py, the Pixels page's picture: the scene look on top, the learning look
    below (a different image of the same state), and a cost line per task."""
    import pytest

    pytest.importorskip("dm_control")
    grid = pixel_looks.main(["dmc_cartpole_swingup", "--frames", "1", "--out", str(tmp_path / "looks.png")])
    side = 84 * pixel_looks.ENLARGE
    assert grid.shape == (2 * side, side, 3) and (tmp_path / "looks.png").stat().st_size > 1000
    assert (grid[:side] != grid[side:]).any(-1).mean() > 0.05
    assert "| dmc_cartpole_swingup |" in capsys.readouterr().out
