"""A DR config read into terms: presets by name, `parse`, the backend parameters to declare.

A config maps a term name to a term (a mapping with a `param` field); `param`
picks the term's kind (`unienv.dr.KINDS`), and the kind reads and checks the
other fields. Everything here needs the config alone; what needs the backend or
the task (names, capabilities, defaults, observation blocks) is checked when the
terms are bound (`DomainRandomization`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

import yaml
from omegaconf import OmegaConf

from unienv.dr.kinds import KINDS
from unienv.dr.spec import Term
from unienv.errors import ArgumentError, unknown_name

PARAMS = tuple(param for kind in KINDS.values() for param in kind.params)
"""Every valid `param` of the shipped kinds: the backend DR parameters, then the other kinds'."""

ROLES = {"<root>": "root_body"}
"""Body names a config may use for a body each task declares (the Task attribute), so that one
config fits every task: "<root>" is the task's root body (a legged robot's torso, a cart, an
arm's first link). The presets push it and shift its COM."""


def preset(name: str) -> dict[str, Any]:
    """The DR config of a preset ("none", "default", "strong", ...): cfg/dr/<name>.yaml, the file
    Hydra's `dr=<name>` loads, shipped in the package as unienv.cfg (found wherever it is installed).
    A preset's `defaults` list names the presets it extends, as Hydra composes them (quadruped.yaml)."""
    folder = resources.files("unienv.cfg") / "dr"
    names = sorted(f.name.removesuffix(".yaml") for f in folder.iterdir() if f.name.endswith(".yaml"))
    if name not in names:
        raise unknown_name("dr preset", name, names)
    config = yaml.safe_load((folder / f"{name}.yaml").read_text()) or {}  # none.yaml holds no term
    bases = [preset(base) for base in config.pop("defaults", []) if base != "_self_"]
    return OmegaConf.to_container(OmegaConf.merge({}, *bases, config))


def parse(config: str | Mapping[str, Any] | None) -> tuple[Term, ...]:
    """Terms of a DR config (a preset's name, a mapping or an OmegaConf DictConfig), checked alone.

    What needs the backend (names, capabilities, defaults) is checked by
    `DomainRandomization`.
    """
    if config is None:
        return ()
    if isinstance(config, str):
        config = preset(config)
    if not isinstance(config, Mapping):
        raise ArgumentError(f"dr: expected a mapping of term name -> term, got {type(config).__name__}")
    terms = tuple(_term(str(name), _plain(spec)) for name, spec in config.items())
    latency = [t.name for t in terms if t.param == "action_latency"]
    if len(latency) > 1:
        raise ArgumentError(f"dr: one action_latency term at most, got {latency}")
    return terms


def full_range(config: str | Mapping[str, Any] | None) -> dict[str, Any] | None:
    """config (a preset's name or a mapping) with every term's `ramp` removed: the DR its ramps
    lead to, which an evaluation after training meets from its first step."""
    if config is None:
        return None
    if isinstance(config, str):
        config = preset(config)
    if not isinstance(config, Mapping):
        raise ArgumentError(f"dr: expected a mapping of term name -> term, got {type(config).__name__}")
    return {
        name: {k: v for k, v in spec.items() if k != "ramp"} if isinstance(spec, dict) else spec
        for name, spec in _plain(config).items()
    }


def backend_params(terms: Sequence[Term]) -> tuple[str, ...]:
    """The backend DR parameters the terms write (the backend's `randomize=`)."""
    written = (KINDS[t.kind].backend_param(t) for t in terms)
    return tuple(dict.fromkeys(p for p in written if p is not None))


def is_terms(config: Any) -> bool:
    """Whether config is already parsed (a sequence of Terms)."""
    return isinstance(config, (tuple, list)) and all(isinstance(t, Term) for t in config)


def with_roles(t: Term, task: Any) -> Term:
    """t with each role in its body names (ROLES, e.g. "<root>") replaced by the task's body."""

    def named(name: str) -> str:
        if name not in ROLES:
            return name
        body = getattr(task, ROLES[name], None)
        if body is None:
            raise ArgumentError(
                f"dr.{t.name}: {name} names the task's {ROLES[name]}, which task {task.name!r} does not declare"
            )
        return body

    return dataclasses.replace(
        t,
        body=None if t.body is None else named(t.body),
        objects=None if t.objects is None else tuple(named(o) for o in t.objects),
    )


def _plain(x: Any) -> Any:
    """Mappings and sequences (OmegaConf's included) as dicts and lists."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, Sequence) and not isinstance(x, str):
        return [_plain(v) for v in x]
    return x


def _term(name: str, spec: Any) -> Term:
    where = f"dr.{name}"
    if not isinstance(spec, dict):
        raise ArgumentError(f"{where}: expected a mapping with a 'param' field, got {spec!r}")
    kinds = {param: kind for kind in KINDS.values() for param in kind.params}  # the kind of each param
    if "param" not in spec:
        raise ArgumentError(f"{where}.param: missing; expected one of {list(kinds)}")
    param = spec["param"]
    if not isinstance(param, str) or param not in kinds:
        raise unknown_name(f"parameter in {where}.param", param, kinds)
    kind = kinds[param]
    for key in spec:
        if key not in kind.fields:
            raise unknown_name(f"field of {where} (a {kind.name} term)", key, kind.fields)
    return kind.parse(name, where, spec)
