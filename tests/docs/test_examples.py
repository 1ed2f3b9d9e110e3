"""Every example of the README and the documentation runs (the blocks of tests/docs/examples.py).

Each block runs in a subprocess, from a scratch directory laid out like the checkout (see
examples.py), and must exit 0 within its time limit. A block marked `docs-test: skip` is reported
as skipped with its reason.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.examples import ROOT, all_examples, examples, markdown_files

EXAMPLES = all_examples()
LINKED = ("play.py", "train.py", "examples", "tasks", "cfg")
TIMEOUT = 300


@pytest.fixture
def scratch(tmp_path):
    for name in LINKED:
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_runs(example, scratch):
    if example.skip:
        pytest.skip(f"not run: {example.skip}")
    for module in example.needs:
        pytest.importorskip(module, reason=f"not run: needs {module} (an optional extra)")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["MPLBACKEND"] = "Agg"
    if example.language == "python":
        command = [sys.executable, "-c", example.code]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", example.code]
        env["PATH"] = f"{os.path.dirname(sys.executable)}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        command, cwd=scratch, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert done.returncode == 0, (
        f"{example.id} exited with {done.returncode}\n--- code\n{example.code}"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
    if example.language == "python":  # an example shows that it worked
        assert done.stdout.strip(), f"{example.id} printed nothing"


def test_every_page_is_collected_and_most_examples_run():
    assert "README.md" in markdown_files() and "docs/environments.md" in markdown_files()
    run = [e for e in EXAMPLES if not e.skip]
    assert len(run) >= 15, [e.id for e in run]


def test_a_marker_that_does_not_match_its_block_is_an_error(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: replace num_envs=64 => num_envs=2 -->\n```python\nprint(1)\n```\n")
    monkeypatch.setattr("tests.docs.examples.ROOT", str(tmp_path))
    with pytest.raises(ValueError, match="num_envs=64"):
        examples("page.md")
