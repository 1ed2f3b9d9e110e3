"""The gallery (docs/gallery.md, scripts/gallery.py): a frame per task as play.py draws it, the
robots close enough to see: each robot's bounding box covers at least a quarter of its frame."""

from __future__ import annotations

import os
import sys

import imageio.v2 as imageio
import pytest

from tests.docs.examples import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))

import gallery  # noqa: E402

ROBOTS = ["quadruped", "go1_velocity", "g1_velocity", "h1_velocity", "barkour_velocity",
          "g1_tracking", "panda_lift", "panda_place", "leap_cube_rotate"]  # fmt: skip


@pytest.mark.parametrize("task", ROBOTS)
def test_the_robot_fills_a_quarter_of_its_frame(task):
    image, (pixels, box) = gallery.frame(task)
    assert image.shape == (*gallery.SIZE, 3)
    assert box >= 0.25, f"{task}: the robot's box covers {box:.1%} of the frame ({pixels:.1%} of its pixels)"
    assert image.mean() > 60, f"{task}: a dark frame (mean {image.mean():.0f} of 255)"


def test_the_script_writes_a_frame_the_page_shows(tmp_path, monkeypatch):
    monkeypatch.setattr(gallery, "OUT", str(tmp_path))
    gallery.main(["cartpole"])
    assert imageio.imread(tmp_path / "cartpole.jpg").shape == (*gallery.SIZE, 3)
    import docs_hooks  # the page lists the repository's frames: one per task, each a task's

    from unienv.tasks import TASKS

    page = docs_hooks.gallery()
    shown = [line for line in page.splitlines() if line.startswith("<figure>")]
    frames = [f[: -len(".jpg")] for f in os.listdir(os.path.join(ROOT, "docs", "frames"))]
    assert len(shown) == len(frames) == len(TASKS) and all(name in TASKS for name in frames)
