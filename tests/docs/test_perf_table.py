"""The performance page's tables come from the benchmark's own JSON (scripts/perf_table.py): a
fresh `python -m unienv.bench --json` run renders, with its command and date, one table per machine."""

from __future__ import annotations

import json
import os
import sys

from tests.docs.examples import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))

import perf_table  # noqa: E402
import torch  # noqa: E402

from unienv import bench  # noqa: E402


def test_a_bench_run_renders_as_a_table_with_its_command_and_date(tmp_path):
    path = str(tmp_path / "run.json")
    args = [
        "--task",
        "cartpole",
        "--num-envs",
        "1",
        "256",
        "--seconds",
        "0.02",
        "--rounds",
        "1",
        "--json",
        path,
    ]
    threads = torch.get_num_threads()
    try:
        bench.main(args)
    finally:
        torch.set_num_threads(threads)  # the bench sets torch's threads for the process
    with open(path) as f:
        meta = json.load(f)["meta"]
    assert meta["command"] == "python -m unienv.bench " + " ".join(args)
    text = perf_table.render([path])
    assert meta["command"] in text and meta["date"] in text
    row = next(line for line in text.splitlines() if line.startswith("| cartpole |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 6 and "-" not in cells  # every column filled from the run
    assert cells[3].endswith("%") and cells[4].endswith("%") and float(cells[5]) > -1000


def test_runs_of_one_machine_share_a_table_and_missing_values_print_as_a_dash(tmp_path):
    meta = {"date": "2026-01-01T00:00:00+00:00", "backend": "mujoco", "cpu_threads": 2, "gpu": None,
            "torch": "2", "torch_threads": 1}  # fmt: skip
    paths = []
    for i, ratio in enumerate((0.9, 0.8)):
        row = {"task": "ant", "num_envs": 256, "env_ratio": ratio, "reads_ratio": None}
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps({"meta": {**meta, "date": f"2026-01-0{i + 1}"}, "rows": [row]}))
    text = perf_table.render(map(str, paths))
    assert text.count("### ") == 1 and "90.0% / 80.0%" in text and "| - / - |" in text


def test_peers_and_pixels_render_each_machines_newest_run(tmp_path):
    """The page gives current figures: of two runs on one machine only the newer renders; a pixel
    run renders a row per look with its ratio, its render share, its milliseconds per frame and its
    memory line."""
    meta = {"cpu_threads": 2, "gpu": None, "torch": "2", "torch_threads": 1, "rounds": 3, "peers": True}
    for day, sps in (("01", 1000.0), ("02", 2000.0)):
        row = {
            "task": "ant",
            "num_envs": 256,
            "unienv_sps": sps,
            "unienv_over_sync": {"min": 1.0, "median": 1.5},
        }
        (tmp_path / f"peers{day}.json").write_text(
            json.dumps({"meta": {**meta, "date": f"2026-01-{day}", "command": f"peers {day}"}, "rows": [row]})
        )
    text = perf_table.render_peers(sorted(map(str, tmp_path.glob("peers*.json"))))
    assert "2,000" in text and "1,000" not in text and "peers 02" in text and "peers 01" not in text
    pixels = {
        "meta": {"date": "2026-01-03", "task": "dmc_cheetah_run", "cpu_threads": 2, "gpu": None,
                 "mujoco_gl": "egl", "load_average": 0.5, "rounds": 3, "command": "python -m unienv.bench pixels"},
        "rows": [{"num_envs": 16, "look": "scene", "dm_control": 40.0, "unienv": 60.0, "render_share": 0.99,
                  "render_ms_per_frame": 21.5},
                 {"num_envs": 16, "look": "learning", "dm_control": 40.0, "unienv": 400.0, "render_share": 0.9,
                  "render_ms_per_frame": 1.25}],
        "memory": {"rss_per_env": 64_000.0, "frame_bytes": 63_504},
    }  # fmt: skip
    (tmp_path / "pixels.json").write_text(json.dumps(pixels))
    text = perf_table.render_pixels([str(tmp_path / "pixels.json")])
    assert (
        "| 16 | scene | 40.0 | 60.0 | 1.50x | 99% | 21.5 |" in text and "64 kB" in text and "63.5 kB" in text
    )
    assert "| 16 | learning | 40.0 | 400.0 | 10.00x | 90% | 1.2 |" in text


def test_the_pixel_bench_writes_json_that_renders(tmp_path, capsys):
    """`python -m unienv.bench pixels --json PATH` (one env, a short round, every loop real): a row
    per look, and a look it does not know refused by name before anything runs."""
    import pytest

    pytest.importorskip("dm_control")
    path = str(tmp_path / "pixels.json")
    threads = torch.get_num_threads()
    try:
        bench.main(["pixels", "--num-envs", "1", "--seconds", "0.05", "--rounds", "1", "--json", path])
    finally:
        torch.set_num_threads(threads)
    text = perf_table.render_pixels([path])
    assert "--json" in text and "| 1 | scene |" in text and "| 1 | learning |" in text
    with pytest.raises(SystemExit):
        bench.main(["pixels", "--look", "fast"])
    assert "--look: invalid choice: 'fast' (choose from 'scene', 'learning')" in capsys.readouterr().err
