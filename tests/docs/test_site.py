"""The documentation site builds with `mkdocs build --strict`: no broken link, anchor, snippet or
API reference (mkdocs.yml sets strict and turns every link check into a warning)."""

from __future__ import annotations


def test_mkdocs_build_strict(site):
    assert site.returncode == 0, site.output
    for page in ("index.html", "api/index.html", "performance/index.html", "tasks/index.html"):
        assert (site.path / page).is_file(), page
    api = (site.path / "api" / "index.html").read_text()
    assert 'id="unienv.make.make"' in api and "A vector env of" in api  # make()'s own docstring
    performance = (site.path / "performance" / "index.html").read_text()
    assert "perf-tables" not in performance and "env/raw at 256" in performance
