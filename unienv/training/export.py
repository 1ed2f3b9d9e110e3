"""A policy file as ONNX, for deployment: the actor, its observation normalizer and the action clip.

    python -m unienv export policy.safetensors --onnx policy.onnx
    export_onnx("policy.safetensors", "policy.onnx")       # -> the layout metadata it wrote
    policy, meta = load_onnx_policy("policy.onnx")          # onnxruntime; policy(obs (N, obs_dim)) -> actions

The ONNX graph is built node by node from the policy file's layer list (unienv.training.policy),
so it computes what the torch module computes, in the same order and in float32:

    obs (batch, obs_dim) float32 -> [Sub mean, Div std] -> Gemm / activation ... -> Max low, Min high
                                 -> actions (batch, act_dim) float32

Linear layers are Gemm nodes, activations their ONNX operators (SiLU as x * Sigmoid(x), GELU by its
erf formula, Softplus linear above 20 as torch's), and the clip to the action bounds two
element-wise nodes. onnxruntime and torch then agree to float32 rounding (their matrix products
may add in another order). Opset 17; the batch dimension is dynamic.

The model's metadata (`metadata_props`) carries, under the key "unienv", the policy file's JSON:
format, task, task options, the observation's shape and dtype, the action's shape, dtype and
bounds, the backend it was trained on and the training facts; a deployment reads it to check that
its observation vector and action vector have that layout (`check_layout` does it for a unienv env).
ONNX files hold operators and tensors, not code; loading one runs nothing from the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from unienv.errors import ArgumentError, install_command
from unienv.training.policy import META_KEY, Normalize, check_layout_keys, load_policy
from unienv.utils import limits
from unienv.utils.files import written
from unienv.utils.untrusted import regular_file

OPSET = 17
ONNX_FORMAT = "unienv.onnx/1"
INPUT, OUTPUT = "obs", "actions"
_SOFTPLUS_THRESHOLD = 20.0  # torch.nn.Softplus returns x above it


def _onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError(f"ONNX export needs onnx: {install_command('onnx')}") from e
    return onnx


class _Graph:
    """Nodes and weights of a feed-forward ONNX graph, each value named v<i>."""

    def __init__(self, onnx):
        self.onnx, self.nodes, self.weights, self.count = onnx, [], [], 0

    def weight(self, array: np.ndarray, name: str) -> str:
        self.weights.append(self.onnx.numpy_helper.from_array(np.ascontiguousarray(array, np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], **attributes) -> str:
        self.count += 1
        out = f"v{self.count}"
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [out], **attributes))
        return out


def _layer(g: _Graph, i: int, module: torch.nn.Module, x: str) -> str:
    """The nodes of layer i of the network on value x; returns its output's name."""
    if isinstance(module, Normalize):
        centred = g.node("Sub", [x, g.weight(module.mean.numpy(), f"{i}.mean")])
        return g.node("Div", [centred, g.weight(module.std.numpy(), f"{i}.std")])
    if isinstance(module, torch.nn.Linear):
        w = g.weight(module.weight.detach().numpy(), f"{i}.weight")
        return g.node("Gemm", [x, w, g.weight(module.bias.detach().numpy(), f"{i}.bias")], transB=1)
    if isinstance(module, torch.nn.SiLU):
        return g.node("Mul", [x, g.node("Sigmoid", [x])])
    if isinstance(module, torch.nn.GELU):  # 0.5 x (1 + erf(x / sqrt 2)), torch's exact GELU
        erf = g.node("Erf", [g.node("Div", [x, g.weight(np.array(np.sqrt(2.0)), f"{i}.sqrt2")])])
        one_plus = g.node("Add", [erf, g.weight(np.array(1.0), f"{i}.one")])
        return g.node("Mul", [g.node("Mul", [x, one_plus]), g.weight(np.array(0.5), f"{i}.half")])
    if isinstance(module, torch.nn.Softplus):
        above = g.node("Greater", [x, g.weight(np.array(_SOFTPLUS_THRESHOLD), f"{i}.threshold")])
        return g.node("Where", [above, x, g.node("Softplus", [x])])
    simple = {
        torch.nn.ELU: ("Elu", {"alpha": 1.0}),
        torch.nn.ReLU: ("Relu", {}),
        torch.nn.Tanh: ("Tanh", {}),
        torch.nn.Sigmoid: ("Sigmoid", {}),
        torch.nn.Identity: ("Identity", {}),
    }
    op, attributes = simple[type(module)]
    return g.node(op, [x], **attributes)


def to_onnx(policy: torch.nn.Module, meta: dict):
    """The ONNX ModelProto of a loaded policy (load_policy's module) with its layout metadata."""
    onnx = _onnx()
    helper = onnx.helper
    g = _Graph(onnx)
    x = INPUT
    for i, module in enumerate(policy.network):
        x = _layer(g, i, module, x)
    x = g.node("Max", [x, g.weight(policy.low.numpy(), "action_low")])
    g.nodes.append(helper.make_node("Min", [x, g.weight(policy.high.numpy(), "action_high")], [OUTPUT]))
    obs_dim, act_dim = meta["observation"]["shape"][0], meta["action"]["shape"][0]
    graph = helper.make_graph(
        g.nodes,
        f"unienv policy for {meta['task']}",
        [helper.make_tensor_value_info(INPUT, onnx.TensorProto.FLOAT, ["batch", obs_dim])],
        [helper.make_tensor_value_info(OUTPUT, onnx.TensorProto.FLOAT, ["batch", act_dim])],
        initializer=g.weights,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="unienv", ir_version=8
    )
    layout = {**meta, "format": ONNX_FORMAT, "policy_format": meta["format"]}
    helper.set_model_props(model, {META_KEY: json.dumps(layout)})
    model.doc_string = (
        f"{meta['task']} policy: {INPUT} (batch, {obs_dim}) float32 -> {OUTPUT} (batch, {act_dim}) float32, "
        f"clipped to the action bounds; layout in metadata_props['{META_KEY}'] (JSON)"
    )
    onnx.checker.check_model(model, full_check=True)
    return model


def export_onnx(policy_path: str, onnx_path: str) -> dict:
    """Write the policy file at policy_path as ONNX to onnx_path (atomically); returns its metadata."""
    onnx = _onnx()
    policy, meta = load_policy(policy_path)
    if len(meta["observation"]["shape"]) != 1 or len(meta["action"]["shape"]) != 1:
        raise ArgumentError(
            f"policy: {policy_path}: ONNX export takes flat observations and actions, got "
            f"{meta['observation']['shape']} and {meta['action']['shape']}"
        )
    model = to_onnx(policy, meta)
    os.makedirs(os.path.dirname(os.path.abspath(onnx_path)), exist_ok=True)
    with written(onnx_path) as temporary:
        onnx.save(model, temporary)
    return _metadata({p.key: p.value for p in model.metadata_props}, onnx_path)


def load_onnx_policy(path: str, device: str | torch.device = "cpu") -> tuple[Callable, dict]:
    """(policy, metadata) for an ONNX file written by export_onnx, run by onnxruntime on the CPU:
    policy(obs (N, obs_dim) tensor) -> actions (N, act_dim) float32 tensor on `device`."""
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError(f"playing an ONNX policy needs onnxruntime: {install_command('onnx')}") from e
    model = check_graph(path)
    meta = _metadata({p.key: p.value for p in model.metadata_props}, path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # small MLPs: one thread is fastest beside the engine's
    try:
        session = onnxruntime.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as e:  # onnxruntime's errors: an invalid graph
        raise ArgumentError(f"policy: {path} is not a valid ONNX file ({str(e).splitlines()[0]})") from None

    def policy(obs: torch.Tensor) -> torch.Tensor:
        x = obs.detach().to("cpu", torch.float32).numpy()
        return torch.from_numpy(session.run([OUTPUT], {INPUT: x})[0]).to(device)

    return policy, meta


# the operators export_onnx writes (see _layer); any other is refused before a session is built
OPERATORS = frozenset(
    ("Sub", "Div", "Gemm", "Mul", "Sigmoid", "Erf", "Add", "Greater", "Where", "Softplus")
    + ("Elu", "Relu", "Tanh", "Identity", "Max", "Min")
)
MAX_WEIGHTS = 1 << 28
"""The most float32 weights (1 GiB) an ONNX policy may hold."""


def check_graph(path: str):
    """The ModelProto at path, refused unless it is a graph export_onnx could have written: a
    regular file; operators of OPERATORS only (the default domain, no subgraph); one float32
    input `obs` (batch, obs_dim) and output `actions`; weights in the file (no external data),
    float32, within MAX_WEIGHTS and the memory free. Nothing of it is run."""
    onnx = _onnx()
    regular_file(path, "policy")
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # protobuf's errors: not an ONNX file
        raise ArgumentError(f"policy: {path} is not a valid ONNX file ({type(e).__name__})") from None
    graph = model.graph
    for node in graph.node:
        if node.op_type not in OPERATORS or node.domain not in ("", "ai.onnx"):
            raise ArgumentError(
                f"policy: {path}: operator {node.domain + '.' if node.domain else ''}{node.op_type!r} "
                f"is not one unienv export writes ({sorted(OPERATORS)})"
            )
        if any(a.type in (a.GRAPH, a.GRAPHS, a.TENSOR, a.TENSORS) for a in node.attribute):
            raise ArgumentError(
                f"policy: {path}: node {node.name or node.op_type!r} has a graph or tensor attribute"
            )
    ends = [(v.name, v.type.tensor_type) for v in (*graph.input, *graph.output)]
    names = [name for name, _ in ends]
    if names != [INPUT, OUTPUT] or any(
        t.elem_type != onnx.TensorProto.FLOAT or len(t.shape.dim) != 2 for _, t in ends
    ):
        raise ArgumentError(
            f"policy: {path}: expected one float32 input {INPUT!r} (batch, obs_dim) and one output "
            f"{OUTPUT!r} (batch, act_dim), got {names}"
        )
    count = 0
    for w in graph.initializer:
        if w.data_location == onnx.TensorProto.EXTERNAL or w.data_type != onnx.TensorProto.FLOAT:
            raise ArgumentError(f"policy: {path}: weight {w.name!r}: expected float32 data in the file")
        size = (
            int(np.prod(w.dims, dtype=np.float64))
            if all(0 <= d <= MAX_WEIGHTS for d in w.dims)
            else MAX_WEIGHTS + 1
        )
        if size * 4 != len(w.raw_data) and size != len(w.float_data):
            raise ArgumentError(
                f"policy: {path}: weight {w.name!r} declares {list(w.dims)}, its data differs"
            )
        count += size
    limits.check_size(f"policy: {path}: its weights", count, MAX_WEIGHTS, low=0, unit="float32 weights")
    limits.check_memory(f"policy: {path}", 4 * count, "cpu", "its weights")
    return model


def _metadata(props: dict[str, str], path: str) -> dict[str, Any]:
    if META_KEY not in props:
        raise ArgumentError(
            f"policy: {path} is an ONNX file without unienv's metadata ('{META_KEY}'); export one with "
            "`python -m unienv export <policy.safetensors> --onnx <out.onnx>`"
        )
    try:
        meta = json.loads(props[META_KEY])
    except (ValueError, RecursionError) as e:
        raise ArgumentError(
            f"policy: {path}: its '{META_KEY}' metadata is not JSON ({type(e).__name__})"
        ) from None
    if not isinstance(meta, dict) or meta.get("format") != ONNX_FORMAT:
        given = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise ArgumentError(f"policy: {path} has format {given!r}, expected {ONNX_FORMAT!r}")
    check_layout_keys(meta, path)  # the policy file's checks
    return meta


def compare(policy_path: str, onnx_path: str, observations: np.ndarray) -> float:
    """The largest |torch action - onnxruntime action| over observations (M, obs_dim)."""
    module, _ = load_policy(policy_path)
    policy, _ = load_onnx_policy(onnx_path)
    obs = torch.as_tensor(observations, dtype=torch.float32)
    with torch.no_grad():
        expected = module(obs)
    return float((policy(obs) - expected).abs().max())


def sample_observations(policy_path: str, count: int = 1000, seed: int = 0) -> np.ndarray:
    """count observations spread as the policy's normalizer saw them in training (its mean and
    std; unit normal without a normalizer), for checking an export."""
    module, meta = load_policy(policy_path)
    first = module.network[0]
    dim = meta["observation"]["shape"][0]
    mean, std = (first.mean.numpy(), first.std.numpy()) if isinstance(first, Normalize) else (0.0, 1.0)
    return (mean + std * np.random.default_rng(seed).standard_normal((count, dim))).astype(np.float32)
