"""A policy file's deployment contract against a robot model: `python -m unienv deploy check`.

    check(path, model) -> lines                 # every mismatch by name; [] where it fits
    file_contract(path) -> (contract, obs width)

It reads ONNX and safetensors policy files with unienv's own loaders (unienv.training), so it
sits above training, with the command lines (tests/structure/test_layers.py), while the contract
itself (unienv.deploy.contract) and the standalone runner sit below it.
"""

from __future__ import annotations

import numpy as np

from unienv.backends.scene import load_mjmodel
from unienv.deploy import runner
from unienv.deploy.contract import model_path
from unienv.errors import ArgumentError
from unienv.training.export import load_onnx_policy
from unienv.training.policy import load_policy


def file_contract(path: str) -> tuple[dict, int]:
    """(contract, observation width) of an ONNX or safetensors policy file, read by unienv's loaders."""
    _, meta = load_onnx_policy(str(path)) if str(path).endswith(".onnx") else load_policy(str(path))
    if meta.get("contract") is None:
        raise ArgumentError(
            f"policy: {path} carries no deployment contract (its task declares none, or it predates them)"
        )
    try:
        return runner.validate(meta["contract"], str(path)), int(np.prod(meta["observation"]["shape"]))
    except runner.DeployError as e:
        raise ArgumentError(f"policy: {e}") from None


def check(path: str, model_spec: str) -> list[str]:
    """Every mismatch between a policy file's contract and a model (an MJCF path or a Menagerie name)."""
    contract, obs_dim = file_contract(path)
    return runner.mismatches(contract, load_mjmodel(model_path(model_spec)), obs_dim)
