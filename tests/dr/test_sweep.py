"""A 3 x 3 DR sweep (friction scale x mass scale) on the ant through play.py -m, per launcher."""

import csv
import importlib.util
import json
import os
import subprocess
import sys

import imageio.v2 as imageio
import pytest

from unienv.errors import install_command
from unienv.tools import sweep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRICTION, MASS = ("0.5", "1.0", "1.5"), ("0.8", "1.0", "1.2")


def run_sweep(tmp_path, *launcher, env=None):
    sweep_dir = tmp_path / "sweep"
    done = subprocess.run(
        [
            sys.executable,
            os.path.join(ROOT, "play.py"),
            "-m",
            "task=ant",
            "dr=default",
            f"dr.friction.range={','.join(FRICTION)}",
            f"dr.mass.range={','.join(MASS)}",
            "num_envs=4",
            "steps=30",
            "task.episode_length_s=1.0",  # 20-step episodes, so that some finish
            "backend.nthread=1",
            f"hydra.sweep.dir={sweep_dir}",
            *launcher,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, sweep_dir


def check_sweep(stdout, sweep_dir):
    assert "DR sweep summary" in stdout
    table = stdout.split("DR sweep summary", 1)[1]
    for f in FRICTION:
        for m in MASS:
            assert f"dr.friction.range={f} dr.mass.range={m}" in table
    with open(sweep_dir / "summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 9
    assert not list(tmp for tmp in sweep_dir.rglob("*.mp4"))  # no video in a sweep
    for row in rows:
        settings = dict(o.split("=") for o in row["overrides"].split() if o.startswith("dr."))
        # a number as range is a fixed value: the realised draws are exactly it
        for term in ("friction", "mass"):
            value = float(settings[f"dr.{term}.range"])
            assert float(row[f"dr.{term}.min"]) == value == float(row[f"dr.{term}.max"])
        assert int(row["episodes"]) >= 4
        assert 0.0 <= float(row["termination_rate"]) <= 1.0
        assert float(row["dr.kp.min"]) >= 0.9 and float(row["dr.kp.max"]) <= 1.1
    figure = imageio.imread(sweep_dir / "summary.png")  # the heatmap of friction x mass, a valid PNG
    assert figure.ndim == 3 and figure.shape[0] > 300 and figure.shape[1] > 300 and figure.std() > 10
    with open(sweep_dir / "summary.json") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def basic_sweep(tmp_path_factory):
    return run_sweep(tmp_path_factory.mktemp("basic"))


def test_sweep_with_the_basic_launcher(basic_sweep):
    stdout, sweep_dir = basic_sweep
    runs = check_sweep(stdout, sweep_dir)
    # each run also has its own metrics files
    assert len(list(sweep_dir.glob("*/metrics.json"))) == len(list(sweep_dir.glob("*/metrics.csv"))) == 9
    assert sweep.format_table(runs) in stdout


@pytest.mark.skipif(
    not importlib.util.find_spec("hydra_plugins.hydra_joblib_launcher"),
    reason="needs the sweep extra: pip install -e '.[sweep]'",
)
def test_sweep_with_the_joblib_launcher_matches_the_basic_one(tmp_path, basic_sweep):
    stdout, sweep_dir = run_sweep(tmp_path, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    runs = check_sweep(stdout, sweep_dir)
    basic_dir = basic_sweep[1]
    with open(basic_dir / "summary.json") as fh:
        basic = json.load(fh)
    assert runs == basic  # the same seed gives the same metrics in any process


@pytest.mark.slow
@pytest.mark.skipif(
    not importlib.util.find_spec("hydra_plugins.hydra_ray_launcher"),
    reason="needs the sweep extra: pip install -e '.[sweep]'",
)
def test_sweep_with_the_ray_launcher_on_a_local_ray(tmp_path, ray_tmpdir):
    ray = {**os.environ, "RAY_TMPDIR": ray_tmpdir}
    stdout, sweep_dir = run_sweep(
        tmp_path, "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2", env=ray
    )
    check_sweep(stdout, sweep_dir)


def test_summary_table_marks_the_swept_settings():
    rows = [
        sweep.run_metrics(
            {
                "episodes": 3,
                "return_mean": 1.0,
                "return_std": 0.5,
                "length_mean": 20.0,
                "termination_rate": 0.0,
            },
            {"mass": (0.8, 0.8)},
            job=i,
            overrides=f"task=ant dr.mass.range={m}",
        )
        for i, m in enumerate(("0.8", "1.2"))
    ]
    table = sweep.format_table(rows).splitlines()
    assert table[0].split() == ["job", "setting", "episodes", "return", "length", "term.rate", "mass"]
    assert "dr.mass.range=0.8" in table[2] and "task=ant" not in table[2]


def one_parameter_sweep(directory):
    for job, (mass, mean) in enumerate((("0.8", 12.0), ("1.0", 15.0), ("1.2", 9.0))):
        summary = {
            "episodes": 4,
            "return_mean": mean,
            "return_std": 2.0,
            "length_mean": 20.0,
            "termination_rate": 0.5,
        }
        row = sweep.run_metrics(
            summary, {}, job=job, overrides=f"task=ant dr.mass.range={mass}", task="ant", backend="mujoco"
        )
        sweep.write_run(row, directory / str(job))


def test_a_one_parameter_sweep_draws_bars(tmp_path):
    one_parameter_sweep(tmp_path)
    table = sweep.summarize(tmp_path)
    assert "dr.mass.range=1.2" in table
    figure = imageio.imread(tmp_path / "summary.png")
    assert figure.ndim == 3 and figure.shape[1] > 300 and figure.std() > 10


def test_a_sweep_without_matplotlib_says_so_and_writes_its_tables(tmp_path, monkeypatch, capsys):
    one_parameter_sweep(tmp_path)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails as if not installed
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    sweep.summarize(tmp_path)
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and f"matplotlib is not installed ({install_command('plot')})" in out
    assert (tmp_path / "summary.csv").exists() and not (tmp_path / "summary.png").exists()
