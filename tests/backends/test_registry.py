"""Backends without their engine installed say how to install it; importing unienv imports no engine."""

import os
import subprocess
import sys

import pytest

from unienv.errors import install_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CODE = """
import sys
for blocked in {blocked!r}:
    sys.modules[blocked] = None  # as if the package were not installed
import unienv
from unienv.backends import create
from unienv.tasks.gym.cartpole import SCENE
try:
    create({backend!r}, SCENE, 2, 0.01, device="cpu")
except ModuleNotFoundError as e:
    print("ERROR:", e)
"""


@pytest.mark.parametrize(
    "backend, blocked, extra",
    [("genesis", ["genesis"], "genesis"), ("mjwarp", ["warp", "mujoco_warp"], "mjwarp")],
)
def test_backend_without_its_engine_names_the_extra(backend, blocked, extra):
    done = subprocess.run(
        [sys.executable, "-c", CODE.format(blocked=blocked, backend=backend)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # from this checkout: pip install -e '.[extra]' (from a wheel: pip install 'unienv[extra]')
    assert f"install it with: {install_command(extra)}" in done.stdout, done.stdout
    assert f"pip install -e '.[{extra}]'" in done.stdout


def test_importing_unienv_imports_no_optional_engine():
    code = "import sys, unienv, unienv.backends, unienv.dynamics; print(sorted({'genesis', 'warp', 'mujoco_warp', 'pinocchio', 'rsl_rl', 'stable_baselines3'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_registry_agrees_with_configs_extras_and_classes():
    """Every backend is one BACKENDS entry plus its cfg/backend/<name>.yaml and its pip extra;
    each installed one resolves to a class of that name and a raw loop for the benchmark."""
    import tomllib
    import yaml

    from unienv.backends import BACKENDS, backend_class, backends_on, installed_backends, raw_loop

    configs = {f[: -len(".yaml")] for f in os.listdir(os.path.join(ROOT, "cfg", "backend"))}
    assert configs == set(BACKENDS)
    for name in BACKENDS:
        with open(os.path.join(ROOT, "cfg", "backend", f"{name}.yaml")) as f:
            assert yaml.safe_load(f)["name"] == name
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert all(entry.extra in extras for entry in BACKENDS.values() if entry.extra)
    assert "mujoco" in installed_backends() and "mujoco" in backends_on("cpu")
    for name in installed_backends():
        assert backend_class(name).name == name
        assert callable(raw_loop(name))
    assert set(backends_on("cpu")) <= set(installed_backends())
