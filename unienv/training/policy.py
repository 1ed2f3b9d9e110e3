"""The policy file: weights as tensors and the network and task layout as JSON; it carries no code.

    save_policy("policy.safetensors", actor, env, backend="mujoco", info={"iterations": 60})
    module, meta = load_policy("policy.safetensors")  # module(obs (N, obs_dim) float32) -> actions
    check_layout(meta, env)                           # raises ArgumentError if env is another layout

`python -m unienv export policy.safetensors --onnx policy.onnx` writes the same network as ONNX
with the same layout metadata, for deployment (unienv.training.export).

The file is a safetensors file (https://huggingface.co/docs/safetensors): the weights, and in its
header metadata one JSON string, `unienv`, holding:

    format          "unienv.policy/2"
    network         the layers in order, e.g. [{"type": "normalize", "size": 5},
                    {"type": "linear", "in": 5, "out": 64}, {"type": "elu"}, ...]; layer i's tensors
                    are named "<i>.<name>" (linear: weight, bias; normalize: mean, std)
    task            the task's name, e.g. "cartpole"
    task_options    the task's options as the env was built (JSON values)
    backend         the backend it was trained on (informational: playing it elsewhere is sim2sim)
    observation     {"shape", "dtype"} of one env's observation
    action          {"shape", "dtype", "low", "high"} of one env's action
    info            free-form training facts (library, iterations, env steps, seed, ...)
    contract        the deployment contract (unienv.deploy.contract, docs/deployment.md), or null
                    for a task that declares none

Why: a pickle (torch.save of a module, TorchScript, a torch.export .pt2) can run any code when it
is loaded, and people share policies. Loading here parses JSON and reads raw tensors, never
unpickles, and refuses every other kind of file saying why; unienv has no opt-in that would load
one. Files of format "unienv.policy/1" (torch.export programs, written by older unienv) are
refused for the same reason: train again, or rebuild the actor from your own code and save it.

The network is a sequence of the layers in `LAYERS` (Linear, the activations, and `Normalize`,
(obs - mean) / std); its output is clipped to the action bounds, as the training adapter clipped
it. A layout matches when the task, the observation and action shapes, dtypes and bounds, and
every task option except `episode_length_s` are equal; an episode length only changes how long
play runs.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from typing import Any

import numpy as np
import safetensors
import safetensors.torch
import torch

from unienv.deploy import runner
from unienv.deploy.contract import contract_of
from unienv.errors import ArgumentError, shown
from unienv.tasks import constructor_options
from unienv.utils import limits
from unienv.utils.files import written
from unienv.utils.untrusted import regular_file
from unienv.wrappers.normalize import Normalize

FORMAT = "unienv.policy/2"
META_KEY = "unienv"
IGNORED_OPTIONS = ("episode_length_s",)


# the layers a policy file may hold: JSON type -> (module class, its size fields)
LAYERS: dict[str, tuple[type[torch.nn.Module], tuple[str, ...]]] = {
    "normalize": (Normalize, ("size",)),
    "linear": (torch.nn.Linear, ("in", "out")),
    "elu": (torch.nn.ELU, ()),
    "relu": (torch.nn.ReLU, ()),
    "tanh": (torch.nn.Tanh, ()),
    "sigmoid": (torch.nn.Sigmoid, ()),
    "silu": (torch.nn.SiLU, ()),
    "gelu": (torch.nn.GELU, ()),
    "softplus": (torch.nn.Softplus, ()),
    "identity": (torch.nn.Identity, ()),
}


def _jsonable(value: Any) -> Any:
    """value with tuples, NumPy scalars and arrays turned into JSON lists and numbers."""
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def task_options(task) -> dict[str, Any]:
    """The options of a task object (the fields of its `Options` dataclass), read back from
    its attributes."""
    return {
        name: _jsonable(getattr(task, name))
        for name in constructor_options(type(task))
        if hasattr(task, name)
    }


def policy_layout(env) -> dict[str, Any]:
    """What a policy for `env` (a unienv VectorEnv or a wrapper of one) sees and commands."""
    base = env.unwrapped
    obs, act = env.single_observation_space, env.single_action_space
    return {
        "task": base.task.name,
        "task_options": task_options(base.task),
        "observation": {"shape": list(obs.shape), "dtype": np.dtype(obs.dtype).name},
        "action": {
            "shape": list(act.shape),
            "dtype": np.dtype(act.dtype).name,
            "low": _jsonable(act.low),
            "high": _jsonable(act.high),
        },
    }


def describe(actor: torch.nn.Module) -> list[dict[str, Any]]:
    """The JSON layer list of `actor`, a torch.nn.Sequential of LAYERS (nested Sequentials flattened)."""
    layers: list[dict[str, Any]] = []
    for module in _flat(actor):
        kind = next((k for k, (cls, _) in LAYERS.items() if type(module) is cls), None)
        if kind is None or (not LAYERS[kind][1] and repr(module) != repr(type(module)())):
            raise ArgumentError(
                f"actor: expected a torch.nn.Sequential of {sorted(LAYERS)} layers with default "
                f"arguments, got a {module!r}"
            )
        if kind == "linear":
            layers.append({"type": kind, "in": module.in_features, "out": module.out_features})
        elif kind == "normalize":
            layers.append({"type": kind, "size": module.mean.numel()})
        else:
            layers.append({"type": kind})
    return layers


def _flat(module: torch.nn.Module) -> list[torch.nn.Module]:
    if isinstance(module, torch.nn.Sequential):
        return [m for child in module for m in _flat(child)]
    return [module]


def build(layers: list[dict[str, Any]]) -> torch.nn.Sequential:
    """The network a JSON layer list describes (weights at their initial values)."""
    if not isinstance(layers, list) or not layers:
        raise ArgumentError(f"network: expected a non-empty list of layers, got {shown(layers)}")
    modules = []
    for i, layer in enumerate(layers):
        kind = layer.get("type") if isinstance(layer, dict) else None
        if kind not in LAYERS:
            raise ArgumentError(
                f"network[{i}]: expected a layer type in {sorted(LAYERS)}, got {shown(layer)}"
            )
        cls, sizes = LAYERS[kind]
        if set(layer) != {"type", *sizes} or not all(_is_size(layer[s]) for s in sizes):
            raise ArgumentError(
                f"network[{i}]: expected a {kind} layer with sizes {list(sizes)}, got {shown(layer)}"
            )
        modules.append(cls(*(layer[s] for s in sizes)))
    return torch.nn.Sequential(*modules)


def _is_size(x: Any) -> bool:
    return type(x) is int and 0 < x <= 1 << 20


def save_policy(path: str, actor: torch.nn.Module, env, *, backend: str, info: dict | None = None) -> dict:
    """Write `actor` (float32 obs -> deterministic actions, see `describe`) for `env`'s layout to
    `path`; returns the metadata."""
    layout = policy_layout(env)
    network = describe(actor)
    meta = {"format": FORMAT, "network": network, **layout, "backend": backend, "info": _jsonable(info or {})}
    meta["contract"] = contract_of(env)
    weights = {
        f"{i}.{name}": tensor.detach().to("cpu", torch.float32).contiguous()
        for i, module in enumerate(_flat(actor))
        for name, tensor in module.state_dict().items()
    }
    with written(path) as temporary:  # then replaced whole: a reader never sees half a file
        safetensors.torch.save_file(weights, temporary, metadata={META_KEY: json.dumps(meta)})
    return meta


def load_policy(path: str, device: str | torch.device = "cpu") -> tuple[torch.nn.Module, dict]:
    """(module on `device`, metadata) from a file written by save_policy; any other file is
    refused with an ArgumentError that says why (nothing in it is unpickled or run).

    The header is checked against the file's tensors (names, shapes, dtype) before any tensor is
    read or any layer allocated, so a small file cannot describe a network that fills memory;
    the weights must then be finite, and a normalizer's std positive."""
    regular_file(path, "policy")
    try:
        with safetensors.safe_open(path, framework="pt") as f:
            header = f.metadata() or {}
            stored = {
                name: (f.get_slice(name).get_dtype(), tuple(f.get_slice(name).get_shape()))
                for name in f.keys()  # noqa: SIM118 (not a dict)
            }
    except Exception as e:  # safetensors' errors: not a safetensors file, or a damaged one
        raise ArgumentError(f"policy: {path} is not a unienv policy file: {_kind(path, e)}") from None
    meta = _parsed_meta(header, path)
    try:
        with torch.device("meta"):  # the layers' tensors as shapes only: nothing is allocated
            network = build(meta.get("network"))
    except ArgumentError as e:
        raise ArgumentError(f"policy: {path}: {e}") from None
    check_layout_keys(meta, path)
    _check_ends(network, meta, path)
    _check_stored(network, stored, path)
    with safetensors.safe_open(path, framework="pt") as f:
        weights = {name: f.get_tensor(name) for name in stored}
    _check_values(weights, path)
    try:
        low = torch.as_tensor(np.asarray(meta["action"]["low"], dtype=np.float32))
        high = torch.as_tensor(np.asarray(meta["action"]["high"], dtype=np.float32))
        network = network.to_empty(device="cpu")
        network.load_state_dict(weights, strict=True)
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise ArgumentError(f"policy: {path}: its metadata or weights are malformed: {e}") from None
    return _ClippedPolicy(network, low, high).to(device).eval(), meta


MAX_DIM = 1 << 20
"""The largest size of one observation or action dimension a policy file may declare."""


def _parsed_meta(header: dict, path: str) -> dict:
    """unienv's metadata from a safetensors header: JSON, of this format."""
    if META_KEY not in header:
        raise ArgumentError(f"policy: {path} is a safetensors file without unienv's metadata ('{META_KEY}')")
    try:
        meta = json.loads(header[META_KEY])
    except (ValueError, RecursionError) as e:
        raise ArgumentError(
            f"policy: {path}: its '{META_KEY}' metadata is not JSON ({type(e).__name__})"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        given = meta.get("format") if isinstance(meta, dict) else meta
        raise ArgumentError(f"policy: {path} has format {shown(given)}, expected {FORMAT!r}")
    return meta


def check_layout_keys(meta: dict, path: str) -> None:
    """Every key of the metadata that the loader and the layout check read, of the right type,
    and its deployment contract, where it has one, whole (`unienv.deploy.runner.validate`)."""
    expected = {"task": str, "task_options": dict, "observation": dict, "action": dict}
    for key, kind in expected.items():
        if not isinstance(meta.get(key), kind):
            given = "nothing" if key not in meta else shown(meta[key])
            raise ArgumentError(f"policy: {path}: metadata '{key}': expected a {kind.__name__}, got {given}")
    for part in ("observation", "action"):
        shape = meta[part].get("shape")
        if not isinstance(shape, list) or not isinstance(meta[part].get("dtype"), str):
            raise ArgumentError(
                f"policy: {path}: metadata '{part}': expected a shape (a list) and a dtype name, got {shown(meta[part])}"
            )
        for size in shape:
            limits.check_size(f"policy: {path}: metadata '{part}.shape'", size, MAX_DIM)
    if meta.get("contract") is not None:
        try:
            runner.validate(meta["contract"], path)
        except runner.DeployError as e:
            raise ArgumentError(f"policy: {e}") from None


def _check_stored(network: torch.nn.Sequential, stored: dict[str, tuple[str, tuple]], path: str) -> None:
    """The file's tensors are exactly the network's, float32, of its shapes; and fit in memory."""
    wanted = {name: tuple(t.shape) for name, t in network.state_dict().items()}
    missing, extra = sorted(set(wanted) - set(stored)), sorted(set(stored) - set(wanted))
    if missing or extra:
        raise ArgumentError(
            f"policy: {path}: its network {[layer['type'] for layer in describe(network)]} has tensors "
            f"{sorted(wanted)}, the file {sorted(stored)} (missing {missing}, unexpected {extra})"
        )
    for name, shape in wanted.items():
        dtype, given = stored[name]
        if dtype != "F32" or given != shape:
            raise ArgumentError(
                f"policy: {path}: tensor {shown(name)}: expected float32 of shape {list(shape)}, "
                f"got {dtype} of shape {list(given)}"
            )
    nbytes = sum(4 * math.prod(shape) for shape in wanted.values())
    limits.check_memory(f"policy: {path}", nbytes, "cpu", "its network's weights")


def _check_values(weights: dict[str, torch.Tensor], path: str) -> None:
    """Finite weights, and a positive std in every normalizer (else its output is inf or NaN)."""
    for name, tensor in weights.items():
        if not torch.isfinite(tensor).all():
            raise ArgumentError(f"policy: {path}: tensor {shown(name)} holds NaN or inf")
        if name.endswith(".std") and not (tensor > 0).all():
            raise ArgumentError(
                f"policy: {path}: tensor {shown(name)}: a normalizer's std must be > 0, got {tensor.min().item()}"
            )


def _check_ends(network: torch.nn.Sequential, meta: dict, path: str) -> None:
    """The first sized layer takes the observation and the last linear one gives the action."""
    obs_dim = int(np.prod(meta["observation"]["shape"]))
    act_dim = int(np.prod(meta["action"]["shape"]))
    widths = [(m.in_features, m.out_features) for m in network if isinstance(m, torch.nn.Linear)]
    first = network[0].mean.numel() if isinstance(network[0], Normalize) else widths[0][0] if widths else 0
    if first != obs_dim or not widths or widths[-1][1] != act_dim:
        raise ArgumentError(
            f"policy: {path}: expected a network from {obs_dim} observations to {act_dim} actions, "
            f"got {meta['network']}"
        )


def _kind(path: str, error: Exception) -> str:
    """What a non-policy file looks like, for the refusal (read as bytes, never unpickled)."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
        if any(name.endswith("/extra/unienv.json") for name in names):
            return (
                "it is an old unienv policy (format unienv.policy/1, a torch.export program), whose "
                "loading unpickles and can run code; train again to get a .safetensors file"
            )
        return "it is a zip archive (torch.save, TorchScript or torch.export?), whose loading can run code"
    with open(path, "rb") as f:
        start = f.read(9)
    header_length = int.from_bytes(start[:8], "little")
    if start[8:9] == b"{":  # a JSON header after its 8-byte length: safetensors, whose header is damaged
        return (
            f"it is a safetensors file whose header is damaged (its length field says {header_length} "
            f"bytes of the file's {os.path.getsize(path) - 8}) ({error})"
        )
    if start[:1] == b"\x80" and start[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):  # PROTO 2-5
        return "it is a pickle, whose loading can run code"
    return f"expected a safetensors file written by unienv.training.policy.save_policy ({error})"


class _ClippedPolicy(torch.nn.Module):
    """network(obs) clipped to the action bounds, as the training adapter clipped it."""

    def __init__(self, network: torch.nn.Module, low: torch.Tensor, high: torch.Tensor):
        super().__init__()
        self.network = network
        self.register_buffer("low", low)
        self.register_buffer("high", high)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.network(obs), self.low, self.high)


def layout_mismatches(meta: dict, env) -> list[str]:
    """The differences between a policy's recorded layout and `env`'s, one readable line each."""
    here = policy_layout(env)
    problems = []
    if meta["task"] != here["task"]:
        problems.append(
            f"task: the policy was trained on {shown(meta['task'])}, this env is {here['task']!r}"
        )
    for part in ("observation", "action"):
        for key, value in here[part].items():
            if meta[part].get(key) != value:
                problems.append(f"{part} {key}: the policy has {meta[part].get(key)}, this env has {value}")
    if meta["task"] == here["task"]:
        theirs, ours = meta["task_options"], here["task_options"]
        defaults = constructor_options(type(env.unwrapped.task))
        for key in sorted(set(theirs) | set(ours)):
            if key not in theirs and ours.get(key) == _jsonable(defaults.get(key)):
                continue  # an option newer than the file, at its default, which keeps the older behaviour
            if key not in IGNORED_OPTIONS and theirs.get(key) != ours.get(key):
                problems.append(
                    f"task.{key}: the policy was trained with {shown(theirs.get(key))}, this env has {ours.get(key)!r}"
                )
    return problems


def check_layout(meta: dict, env, path: str = "policy") -> None:
    """Raise ArgumentError naming every difference if the policy does not fit `env`."""
    problems = layout_mismatches(meta, env)
    if problems:
        raise ArgumentError(
            f"policy: {path} does not fit this env ({len(problems)} difference"
            f"{'s' if len(problems) > 1 else ''}):\n  "
            + "\n  ".join(problems)
            + "\nPlay it on the task and options it was trained with (e.g. task=... task.<option>=...)."
        )
