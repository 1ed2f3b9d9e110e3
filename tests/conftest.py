"""Session-wide hygiene: a test run leaves the checkout and the system's temp folder as it found
them.

- Scratch files that the library writes to the temp folder (terrain scenes, `unienv_terrain/`)
  go to this run's own pytest temp directory: `tempfile.tempdir` and `TMPDIR` (inherited by the
  subprocesses the tests start) point there, and pytest prunes old runs' directories.
- MuJoCo appends its warnings (those of the divergence tests, say) to MUJOCO_LOG.TXT in the
  working directory. One that this run created in the checkout is moved into the run's temp
  directory at the end, and the summary says where.
- Ray's socket paths may not pass 107 bytes, which a pytest temp path (under pytest-xdist, say)
  can: the `ray_tmpdir` fixture gives a short folder in /tmp, removed after.
- PyOpenGL fixes its platform when it is first imported, and Genesis imports it on import (at
  collection); dm_control's EGL renderer, the pixel tests' reference, then fails unless that
  platform is EGL. So, where the run renders through EGL, it is set to EGL before any import.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

if os.environ.get("MUJOCO_GL", "egl") == "egl" and not os.environ.get("DISPLAY"):
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUJOCO_LOG = os.path.join(ROOT, "MUJOCO_LOG.TXT")
_state: dict[str, object] = {}


def pytest_sessionstart(session) -> None:
    scratch = str(session.config._tmp_path_factory.mktemp("tmp", numbered=False))
    _state.update(
        scratch=scratch,
        tempdir=tempfile.tempdir,
        TMPDIR=os.environ.get("TMPDIR"),
        log_existed=os.path.exists(MUJOCO_LOG),
    )
    tempfile.tempdir = scratch
    os.environ["TMPDIR"] = scratch


def pytest_sessionfinish(session, exitstatus) -> None:
    if not _state:
        return
    tempfile.tempdir = _state["tempdir"]
    if _state["TMPDIR"] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = _state["TMPDIR"]
    if os.path.exists(MUJOCO_LOG) and not _state["log_existed"]:
        _state["moved_log"] = shutil.move(MUJOCO_LOG, os.path.join(_state["scratch"], "MUJOCO_LOG.TXT"))


def pytest_terminal_summary(terminalreporter) -> None:
    if "moved_log" in _state:
        terminalreporter.write_line(f"MuJoCo's warnings of this run: {_state['moved_log']}")


@pytest.fixture
def ray_tmpdir():
    """A short folder for Ray's sessions and sockets (`RAY_TMPDIR`), removed after the test."""
    folder = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # not TMPDIR: this run's, a long path
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def quadruped_policy(tmp_path_factory) -> str:
    """A random-weight quadruped policy, saved (.safetensors) and exported (.onnx, returned): a
    genuine policy file whose contract is whole, for the deployment and hardening tests."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import unienv
    from tests.deploy.test_runner import random_policy

    env = unienv.make("quadruped", num_envs=1, seed=0)
    path = random_policy(env, tmp_path_factory.mktemp("policy") / "quadruped")
    env.close()
    return path
