"""A run killed while it writes a file leaves the previous good file or none under the final name
(unienv.utils.files): play.py killed with SIGTERM or SIGKILL while it records, a real subprocess."""

import glob
import os
import signal
import subprocess
import sys
import time

import imageio.v2 as imageio
import pytest

from unienv.utils.files import write_json, written

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIDEO = os.path.join("videos", "cartpole_mujoco_random.mp4")


def _recording(cwd):
    """play.py recording a long rollout, once its video's temporary file has frames in it."""
    process = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "play.py"), "steps=1000000", "video.height=48", "video.width=64"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        partial = glob.glob(os.path.join(cwd, "videos", "*.tmp*.mp4"))
        if partial and os.path.getsize(partial[0]) > 0:
            time.sleep(1.0)  # well into the recording
            return process
        time.sleep(0.2)
    process.kill()
    pytest.fail(f"play.py did not start recording: {process.communicate()[1][-2000:]}")


def _frames(path):
    with imageio.get_reader(path) as reader:
        return [frame for frame in reader.iter_data()]


def test_sigterm_while_recording_closes_the_video_as_ctrl_c_does(tmp_path):
    process = _recording(tmp_path)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, err  # as train.py exits on SIGTERM
    assert "video so far" in err and "Traceback" not in err
    frames = _frames(str(tmp_path / VIDEO))  # whole: it decodes
    assert len(frames) > 1 and frames[0].shape == (96, 128, 3)  # 4 envs tiled 2 x 2
    assert not glob.glob(str(tmp_path / "videos" / "*.tmp*"))  # nothing left beside it


def test_sigkill_while_recording_leaves_the_previous_video(tmp_path):
    os.makedirs(tmp_path / "videos")
    with imageio.get_writer(str(tmp_path / VIDEO), fps=10, macro_block_size=8) as writer:
        for _ in range(3):
            writer.append_data(__import__("numpy").full((48, 64, 3), 200, dtype="uint8"))
    process = _recording(tmp_path)
    process.kill()
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert len(_frames(str(tmp_path / VIDEO))) == 3  # the previous video, intact


def test_sigkill_while_recording_leaves_no_video_under_the_final_name(tmp_path):
    process = _recording(tmp_path)
    process.kill()
    process.communicate(timeout=60)
    assert not os.path.exists(tmp_path / VIDEO)


def test_a_write_that_raises_leaves_the_previous_file(tmp_path):
    path = tmp_path / "metrics.json"
    write_json(path, {"iteration": 1})
    with pytest.raises(RuntimeError), written(path) as temporary:
        with open(temporary, "w") as f:
            f.write('{"iteration": ')
        raise RuntimeError("killed midway")
    assert path.read_text() == '{"iteration": 1}' and os.listdir(tmp_path) == ["metrics.json"]


def _writers(tmp_path):
    """(final path, a call that writes it) for each file unienv writes that a user keeps."""
    import torch

    import unienv
    from unienv import bench
    from unienv.tools import sweep
    from unienv.training.checkpoint import save_checkpoint
    from unienv.training.policy import save_policy
    from unienv.training.rollout import RolloutStats

    stats = RolloutStats(returns=[1.0, 2.0], lengths=[5, 6], terminated=[True, False], steps=6)
    row = sweep.run_metrics(stats.summary(), {}, job=0, overrides="seed=1")
    sweep.write_run(row, tmp_path / "sweep" / "0")  # a run to summarize
    env = unienv.make("cartpole")
    actor = torch.nn.Sequential(torch.nn.Linear(5, 1))
    return {
        "policy file": (
            tmp_path / "policy.safetensors",
            lambda p: save_policy(str(p), actor, env, backend="mujoco"),
        ),
        "checkpoint": (tmp_path / "model_3.pt", lambda p: save_checkpoint(str(p), {"iteration": 3})),
        "run metrics": (tmp_path / "run" / "metrics.json", lambda p: sweep.write_run({"job": 0}, p.parent)),
        "bench rows": (tmp_path / "bench.json", lambda p: bench._write_json(str(p), {}, [], [])),
        "sweep summary": (tmp_path / "sweep" / "summary.json", lambda p: sweep.summarize(p.parent)),
    }


@pytest.mark.parametrize("name", ["policy file", "checkpoint", "run metrics", "bench rows", "sweep summary"])
def test_a_writer_killed_before_its_file_is_whole_leaves_the_previous_one(tmp_path, monkeypatch, name):
    """Each writer goes through unienv.utils.files.written: stopped at the last moment (the content
    written, not yet moved into place), the previous file is there, unchanged, and no other."""
    path, write = _writers(tmp_path)[name]
    write(path)
    previous, listing = path.read_bytes(), sorted(os.listdir(path.parent))

    def killed(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr("unienv.utils.files.os.replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write(path)
    assert path.read_bytes() == previous and sorted(os.listdir(path.parent)) == listing
