"""What the pages state and the code defines agree: the extras table is pyproject's, every install
command installs from the checkout, the DMC table's ids are registered ones, the citation gives
the package's version, the Getting started rollout is the README's, and the README stays short."""

from __future__ import annotations

import os
import re

import pytest

from tests.docs.examples import ROOT, examples, markdown_files


def _read(path: str) -> str:
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def _section(path: str, name: str) -> str:
    """The text between a file's `--8<-- [start:name]` and `--8<-- [end:name]` markers."""
    text = _read(path)
    found = re.search(rf"--8<-- \[start:{name}\][^\n]*\n(.*?)\n[^\n]*--8<-- \[end:{name}\]", text, re.S)
    assert found, f"{path} has no snippet section {name!r}"
    return found.group(1)


def _pyproject() -> dict:
    import tomllib  # Python 3.11+, as the other tests that read pyproject.toml

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_the_extras_table_lists_every_extra_of_pyproject_and_what_all_leaves_out():
    extras = _pyproject()["project"]["optional-dependencies"]
    rows = {}
    for line in _section("README.md", "extras").splitlines()[2:]:
        names, what = line.strip("|").split("|", 1)
        for name in re.findall(r"`([\w-]+)`", names):
            rows[name] = what
    assert sorted(rows) == sorted(extras)
    in_all = set(re.search(r"\[(.*)\]", extras["all"][0]).group(1).split(","))
    left_out = sorted(set(extras) - in_all - {"all"})
    assert all(f"`{name}`" in rows["all"] for name in left_out), (left_out, rows["all"])
    assert '--8<-- "README.md:extras"' in _read("docs/getting-started.md")  # the site shows the same table


def test_every_install_command_installs_from_the_checkout():
    """One install form everywhere: `pip install -e '.[extra]'` (a wheel's form is what a missing
    extra's message gives on a wheel install, not what the pages tell)."""
    other_form = re.compile(r"unienv\[|pip install(?! torch)[^-]*'\.")  # a wheel's, or no -e
    wheel_form = []
    for path in markdown_files():
        for example in examples(path):
            for line in example.code.splitlines():
                if "pip install" in line and other_form.search(line):
                    wheel_form.append(f"{example.id}: {line.strip()}")
    assert not wheel_form, wheel_form


def test_the_dmc_table_names_every_task_by_its_registered_gym_id():
    from unienv.tasks import DMC_TASKS, TASKS, gym_id

    # the rows of the task table (the learning table's second column is a number)
    rows = re.findall(r"^\| (dmc_\w+) \| ([^|\d][^|]*?) \|", _read("docs/dmc.md"), re.M)
    assert sorted(task for task, _ in rows) == sorted(DMC_TASKS)
    assert all(gid == gym_id(task) and gid.startswith("unienv/") for task, gid in rows), rows
    if DMC_TASKS.keys() <= TASKS.keys():  # dm-control is installed: they are registered
        import gymnasium

        assert all(gid in gymnasium.registry for _, gid in rows)


def test_the_citation_is_complete_and_gives_this_version_on_both_sites():
    citing = _section("README.md", "citing")
    bibtex = re.search(r"```bibtex\n(.*?)```", citing, re.S).group(1)
    fields = dict(re.findall(r"^\s+(\w+)\s*=\s*\{(.*)\},?$", bibtex, re.M))
    assert {"author", "title", "year", "version"} <= set(fields), fields
    assert fields["version"] == _pyproject()["project"]["version"]
    assert "url" in fields or "repository" in citing  # where the url is, if the entry has none
    assert '--8<-- "README.md:citing"' in _read("docs/index.md")


def test_getting_started_shows_the_readmes_first_rollout():
    def rollout(path):
        return next(e.code for e in examples(path) if 'unienv.make("ant"' in e.code and "returns" in e.code)

    readme = next(e for e in examples("README.md") if 'unienv.make("ant"' in e.code)
    raw = _read("README.md")
    assert readme.code.replace("range(80)", "range(1000)") in raw  # the README's as run, shortened
    assert rollout("docs/getting-started.md") == readme.code.replace("range(80)", "range(1000)")


@pytest.mark.parametrize("path", ["README.md"])
def test_the_readme_stays_short(path):
    assert len(_read(path).splitlines()) <= 200


def test_the_performance_page_gives_current_figures_not_their_history():
    """Its prose stays short and undated: every figure with a date comes from the generated
    tables (docs/bench/ JSON), and how figures moved is the changelog's."""
    prose, inside = [], False
    for line in _read("docs/performance.md").splitlines():
        if line.startswith("```"):
            inside = not inside
        elif line.strip() and not inside and not line.startswith(("|", "<!--", "#")):
            prose.append(line)
    assert len(prose) <= 150, len(prose)
    dated = [line for line in prose if re.search(r"\b20\d\d-\d\d-\d\d\b", line)]
    assert not dated, dated
    for marker in ("peers-tables", "perf-tables", "robots-tables", "pixels-tables"):
        assert f"<!-- {marker} -->" in _read("docs/performance.md")
