"""The documentation site builds with `mkdocs build --strict`: no broken link, anchor, snippet or
API reference (mkdocs.yml sets strict and turns every link check into a warning)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tests.docs.examples import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
    reason="needs the docs extra (pip install -e '.[docs]'); CI installs it with all",
)


def test_mkdocs_build_strict(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for page in ("index.html", "api/index.html", "performance/index.html", "tasks/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert 'id="unienv.make.make"' in api and "A vector env of" in api  # make()'s own docstring
    performance = (tmp_path / "site" / "performance" / "index.html").read_text()
    assert "perf-tables" not in performance and "env/raw at 256" in performance
