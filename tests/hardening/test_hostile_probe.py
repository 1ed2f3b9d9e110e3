"""scripts/hostile_probe.py, issue 57's rows replayed against a checkout: its verdicts (a one-line
refusal is ok; a traceback, a hang, a refusal that advises loading unsafely or blames the wrong
thing, an accepted hostile input are not), and one row run end to end on this checkout."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bounded  # noqa: E402

sys.path.insert(0, os.path.join(bounded.ROOT, "scripts"))
import hostile_probe as probe  # noqa: E402


def test_only_a_one_line_refusal_that_names_the_right_thing_is_ok():
    refused, accepted = probe.Case(8, "c", []), probe.Case(5, "c", [], want="accepted", stdout_has="rate ok")
    pixels = probe.Case(9, "c", [], misleading="no OpenGL context")
    ok = [
        (refused, 2, "", "error: --model: file not found: 'x.xml'\n"),
        (refused, 1, "robot.root: the model has no body 'base'\n", ""),  # deploy check's mismatches
        (accepted, 0, "rate ok: 334 frames at 50 fps\n", ""),
    ]
    bad = [
        (refused, 1, "", "Traceback (most recent call last):\n  ...\nValueError: x\n"),
        (refused, "hang", "", ""),
        (refused, -9, "", ""),
        (refused, 0, "fits\n", ""),
        (refused, 2, "", "error: x\nerror: y\n"),
        (refused, 2, "", "error: use allow_pickle=True\n"),
        (refused, 2, "", "error: " + "x" * 2000 + "\n"),
        (refused, 1, "x" * 2000 + "\n", ""),
        (refused, 1, "", "MemoryError\n"),
        (pixels, 2, "", "error: rendering: no OpenGL context (framebuffer not complete)\n"),
        (accepted, 0, "rate wrong: 201 frames at 30 fps\n", ""),
    ]
    for case, status, out, err in ok:
        assert probe.classify(case, status, out, err)[1], (status, out, err)
    for case, status, out, err in bad:
        assert not probe.classify(case, status, out, err)[1], (status, out, err)


def test_row_8_on_this_checkout_is_refused_in_one_line_each(tmp_path):
    table = tmp_path / "table.txt"
    script = os.path.join(bounded.ROOT, "scripts", "hostile_probe.py")
    done = bounded.python(
        script, "--tree", bounded.ROOT, "--rows", "8", "--out", str(table), memory=8 << 30, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = [line for line in table.read_text().splitlines() if line.lstrip()[:1].isdigit()]
    assert len(lines) >= 8 and all(" ok " in line and "refused: error: " in line for line in lines), lines
