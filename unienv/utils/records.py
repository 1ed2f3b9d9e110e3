"""Frozen dataclasses of options built from a config's mapping, refusing keys they lack."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from unienv.errors import ArgumentError, unknown_name


def fields_of(cls: type, spec: Any, what: str, kind: str) -> dict[str, Any]:
    """spec's fields for the dataclass `cls` as a new dict; `what` names the argument in the
    refusal of a spec that is no mapping, `kind` the name in an unknown key's (did you mean)."""
    if not isinstance(spec, Mapping):
        raise ArgumentError(f"{what}: expected {cls.__name__} or a mapping of its fields, got {spec!r}")
    fields = [f.name for f in dataclasses.fields(cls)]
    for key in spec:
        if key not in fields:
            raise unknown_name(kind, key, fields)
    return dict(spec)
