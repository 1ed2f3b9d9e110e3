"""The documentation site, built once per test session with `mkdocs build --strict` for the tests
that read it (test_site.py) or open it in a browser (test_layout.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

from tests.docs.examples import ROOT


@dataclasses.dataclass(frozen=True)
class Site:
    returncode: int
    output: str  # mkdocs's stdout and stderr, the end of each
    path: pathlib.Path  # the built site


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip("needs the docs extra (pip install -e '.[docs]'); CI installs it with all")
    path = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(path)],
        cwd=ROOT,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return Site(done.returncode, done.stdout[-4000:] + done.stderr[-4000:], path)
