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
from unienv.tasks.cartpole import SCENE
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
