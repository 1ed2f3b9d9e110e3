"""A run killed while it writes a file leaves the previous good file or none under the final name
(unienv.files): play.py killed with SIGTERM or SIGKILL while it records, a real subprocess."""

import glob
import os
import signal
import subprocess
import sys
import time

import imageio.v2 as imageio
import pytest

from unienv.files import write_json, written

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
