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
ONNX files hold operators and tensors, not code; loading one runs nothing from the file, and a
file is checked from its bytes before onnxruntime sees it (`check_graph`, the standalone runner's
own check): only the operators this module writes, float32 weights held in the file, and values
no wider than the runner's MAX_WIDTH per observation, so that no graph can make onnxruntime
allocate what its file does not hold.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from unienv.deploy import runner
from unienv.errors import ArgumentError, install_command, shown
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
    written_meta = next(p.value for p in model.metadata_props if p.key == META_KEY)
    return _metadata(json.loads(written_meta), onnx_path)


def load_onnx_policy(path: str, device: str | torch.device = "cpu") -> tuple[Callable, dict]:
    """(policy, metadata) for an ONNX file written by export_onnx, run by onnxruntime on the CPU:
    policy(obs (N, obs_dim) tensor) -> actions (N, act_dim) float32 tensor on `device`."""
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError(f"playing an ONNX policy needs onnxruntime: {install_command('onnx')}") from e
    data, meta = check_graph(path)
    meta = _metadata(meta, path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # small MLPs: one thread is fastest beside the engine's
    try:
        session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's errors: an invalid graph
        raise ArgumentError(f"policy: {path} is not a valid ONNX file ({str(e).splitlines()[0]})") from None

    def policy(obs: torch.Tensor) -> torch.Tensor:
        x = obs.detach().to("cpu", torch.float32).numpy()
        return torch.from_numpy(session.run([OUTPUT], {INPUT: x})[0]).to(device)

    return policy, meta


def check_graph(path: str) -> tuple[bytes, dict | None]:
    """(the file's bytes, its unienv metadata or None) of the ONNX file at path, refused unless
    it is a regular file within the memory free and a graph export_onnx could have written
    (`unienv.deploy.runner.check_onnx`: the operators it writes, one float32 input `obs` and
    output `actions`, float32 weights in the file, every value bounded; the standalone runner
    applies the same check). Nothing of it is run; the bytes checked are the bytes a session
    is built from."""
    size = regular_file(path, "policy", runner.MAX_POLICY_BYTES)
    limits.check_memory(f"policy: {path}", size, "cpu", "its bytes")
    with open(path, "rb") as f:
        data = f.read()
    try:
        meta, _, _ = runner.check_onnx(data, path)
    except runner.DeployError as e:
        raise ArgumentError(f"policy: {e}") from None
    return data, meta


def _metadata(meta: dict | None, path: str) -> dict[str, Any]:
    """The unienv metadata of an ONNX policy (parsed by check_onnx), of this format and layout."""
    if meta is None:
        raise ArgumentError(
            f"policy: {path} is an ONNX file without unienv's metadata ('{META_KEY}'); export one with "
            "`python -m unienv export <policy.safetensors> --onnx <out.onnx>`"
        )
    if meta.get("format") != ONNX_FORMAT:
        raise ArgumentError(
            f"policy: {path} has format {shown(meta.get('format'))}, expected {ONNX_FORMAT!r}"
        )
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
