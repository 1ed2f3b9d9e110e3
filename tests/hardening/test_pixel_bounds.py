"""Pixel options are bounded by what they allocate, before a renderer or a frame exists (issue 57,
row 9): render threads beyond the envs or the cores, frame stacks of 10**12, images whose frames
or whose offscreen buffers do not fit in the memory free, and g1_tracking's future frames are each
refused in one line naming the option and the size, in a process under a memory limit, within
seconds; a legitimate pixel env is built."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bounded  # noqa: E402

FREE = {"camera": None, "pos": [0, -3, 1], "target": [0, 0, 0]}  # cartpole's scene has no camera


def pixels(num_envs: int, **options) -> list:
    return ["cartpole", num_envs, {"obs": "pixels", "pixels": {"camera": FREE, **options}}]


CASES = {  # name: ((task, num_envs, make's keywords), what the refusal says; None: accepted)
    "legit": (pixels(2, render_threads=1), None),
    "look_learning": (pixels(2, look="learning"), None),
    "look_unknown": (pixels(2, look="fast"), "unknown look 'fast' (valid: 'scene', 'learning')"),
    "look_list": (pixels(2, look=["learning"]), "unknown look ('learning',)"),
    "threads_10000": (pixels(2, render_threads=10000), "render_threads: expected a whole number of render threads"),
    "threads_0": (pixels(2, render_threads=0), "render_threads: expected"),
    "threads_half": (pixels(2, render_threads=1.5), "render_threads: expected"),
    "threads_text": (pixels(2, render_threads="4"), "render_threads: expected"),
    "stack_1e12": (pixels(2, frame_stack=10**12), "pixels.frame_stack: expected a whole number of frames in [1, 256]"),
    "stack_0": (pixels(2, frame_stack=0), "pixels.frame_stack"),
    "stack_bool": (pixels(2, frame_stack=True), "pixels.frame_stack"),
    "image_16384_64_envs": (pixels(64, width=16384, height=16384), "pixels: 64 envs x frame_stack 3 x 3 x 16384 x 16384: needs 432.0 GiB"),
    "image_16384_1_env": (pixels(1, width=16384, height=16384), "pixels: 1 envs x frame_stack 3 x 3 x 16384 x 16384: needs 6.8 GiB"),
    "buffers_8192": (pixels(1, width=8192, height=8192, frame_stack=1), "rendering at 8192 x 8192 on 1 render threads: needs 2.9 GiB"),
    "image_too_wide": (pixels(1, width=100000, height=84), "width: expected an int in [1, "),
    "image_zero": (pixels(1, width=0, height=84), "width: expected an int in [1, "),
    "future_1e9": (["g1_tracking", 1, {"task_options": {"future_frames": 10**9}}], "task.future_frames: expected a whole number of frames in [0, 250]"),
    "future_float": (["g1_tracking", 1, {"task_options": {"future_frames": 1e9}}], "task.future_frames"),
    "future_negative": (["g1_tracking", 1, {"task_options": {"future_frames": -1}}], "task.future_frames"),
}  # fmt: skip

CODE = """
import json, sys
sys.path.insert(0, sys.argv[2])
from bounded import replay
import unienv
from unienv.errors import UnienvError

def make(task, num_envs, options):
    unienv.make(task, num_envs=num_envs, **options).close()

cases = json.loads(sys.argv[1])
replay([(name, lambda c=c: make(*c)) for name, c in cases.items()], (UnienvError,))
"""


def test_pixel_options_are_refused_by_what_they_allocate():
    cases = {name: case for name, (case, _) in CASES.items()}
    done = bounded.python("-c", CODE, json.dumps(cases), os.path.dirname(bounded.__file__), timeout=300)
    rows = bounded.rows(done)
    for name, (_, expected) in CASES.items():
        row = rows[name]
        assert row["seconds"] < bounded.CASE_SECONDS, (name, row)
        if expected is None:
            assert row["outcome"] == "accepted", (name, row)
            continue
        assert expected in row["outcome"] and "\n" not in row["outcome"], (name, row["outcome"])
        assert row["peak"] < 16 << 20, (name, row["peak"])
    assert max(row["grown"] for row in rows.values()) < 512 << 20
