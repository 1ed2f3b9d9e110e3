"""The API reference (docs/api.md) documents every name it shows, and shows every public name of
`unienv`: each `::: name` entry, each of its members (those its `members:` option lists, else
the public ones mkdocstrings renders) and each public method of a class shown has a docstring (or
implements a documented method of another library's base class, such as Gymnasium's `step`), so
no entry renders as a bare signature."""

from __future__ import annotations

import importlib
import inspect
import os
import re

import pytest

import unienv
from tests.docs.examples import ROOT

ENTRY = re.compile(r"^::: ([\w.]+)((?:\n {4}.*)*)", re.M)


def _api_text() -> str:
    with open(os.path.join(ROOT, "docs", "api.md")) as f:
        return f.read()


def _entries() -> list[tuple[str, list[str] | bool | None]]:
    """(dotted name, its members option: a list, False for `members: false`, None if unset)."""
    found = []
    for name, options in ENTRY.findall(_api_text()):
        members = re.search(r"^\s*members:\s*(.*)", options, re.M)
        if members is None:
            found.append((name, None))
        elif members.group(1).strip() == "false":
            found.append((name, False))
        else:
            found.append((name, [m.strip() for m in members.group(1).strip("[] ").split(",")]))
    return found


def _resolve(dotted: str):
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError:
        module, _, attr = dotted.rpartition(".")
        return getattr(importlib.import_module(module), attr)


def _public(obj) -> dict[str, object]:
    """The public members mkdocstrings renders: a module's own functions and classes, a class's own
    methods and properties."""
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [n for n in vars(obj) if not n.startswith("_")]
        items = {n: getattr(obj, n) for n in names}
        return {
            n: v
            for n, v in items.items()
            if (inspect.isfunction(v) or inspect.isclass(v))
            and getattr(v, "__module__", None) == obj.__name__
        }
    if inspect.isclass(obj):
        return {
            n: v
            for n, v in vars(obj).items()
            if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))
        }
    return {}


def _undocumented(name: str, obj) -> list[str]:
    doc = obj.__doc__  # its own: mkdocstrings shows no docstring inherited from a base class
    return [] if doc and doc.strip() else [name]


def _undocumented_methods(name: str, cls) -> list[str]:
    """The public methods of `cls` without a docstring, but for those that implement a documented
    method of a base class from another library (Gymnasium's `step`, SB3's `step_async`): their
    meaning is that interface's (mkdocstrings hides a member without a docstring)."""
    missing = []
    for k, v in _public(cls).items():
        interface = [
            getattr(base, k, None) for base in cls.__mro__[1:] if not base.__module__.startswith("unienv")
        ]
        if _undocumented(k, v) and not any(m is not None and m.__doc__ for m in interface):
            missing.append(f"{name}.{k}")
    return missing


ENTRIES = _entries()
INHERITING = set(re.findall(r"^::: ([\w.]+)(?:\n {4}.*)*inherited_members: true", _api_text(), re.M))


def test_the_page_has_its_entries():
    assert len(ENTRIES) > 30 and ("unienv.make", None) in ENTRIES


@pytest.mark.parametrize("name, members", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_every_entry_and_its_members_have_docstrings(name, members):
    obj = _resolve(name)
    if members:
        shown = {m: getattr(obj, m) for m in members}
    else:  # a module's public functions and classes; a class's methods are checked below
        shown = _public(obj) if members is None and inspect.ismodule(obj) else {}
    missing = _undocumented(name, obj)
    for member, value in shown.items():
        missing += _undocumented(f"{name}.{member}", value)
        if inspect.isclass(value):
            missing += _undocumented_methods(f"{name}.{member}", value)
    if inspect.isclass(obj):
        # with `inherited_members: true` the page shows the members of unienv's own bases too
        inherited = name in INHERITING
        for cls in [c for c in obj.__mro__ if c.__module__.startswith("unienv")] if inherited else [obj]:
            missing += _undocumented_methods(name, cls)
    assert not missing, f"shown on the API page without a docstring: {sorted(set(missing))}"


def test_every_public_name_of_unienv_is_on_the_page():
    shown = {name for name, _ in ENTRIES}
    absent = [
        n
        for n in unienv.__all__
        if getattr(unienv, n).__module__.startswith("unienv")  # not Gymnasium's AutoresetMode
        and f"unienv.{n}" not in shown
        and f"{getattr(unienv, n).__module__}" not in shown  # e.g. the errors, shown as unienv.errors
    ]
    assert not absent, f"public names of unienv missing from docs/api.md: {absent}"
