"""The golden hashes do not depend on which OpenBLAS kernel NumPy runs: the quadruped's cases
(its rotation matrices were a matrix product, whose last bits came from the kernel) computed
with the kernel OpenBLAS picks for this CPU (SkylakeX on an AVX-512 Xeon) and under two
OPENBLAS_CORETYPE settings, each in a fresh process, equal each other and the recorded hashes.
Haswell (AVX2) and Prescott (SSE3) run on every x86-64 machine that runs this suite's NumPy;
elsewhere, or with a NumPy not built on OpenBLAS, the setting means nothing."""

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from tests.golden import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = ("quadruped",)
KERNELS = (None, "Haswell", "Prescott")  # None: the one OpenBLAS picks


def _openblas() -> bool:
    config = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return "openblas" in config.get("name", "").lower()


pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not _openblas(),
    reason="OPENBLAS_CORETYPE selects x86-64 kernels of OpenBLAS",
)


def _hashes(kernel: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if kernel:
        env["OPENBLAS_CORETYPE"] = kernel
    cmd = [sys.executable, "-m", "tests.golden", "--json", "--backend", "mujoco", "--task", *TASKS]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_golden_cases_do_not_depend_on_the_blas_kernel():
    first, *others = (_hashes(kernel) for kernel in KERNELS)
    assert first, "no case ran"
    for kernel, hashes in zip(KERNELS[1:], others, strict=True):
        moved = sorted(k for k in first if first[k] != hashes[k])
        assert not moved, f"OPENBLAS_CORETYPE={kernel} changes these cases from the default kernel's: {moved}"
    stored = load()
    assert {k: stored[k] for k in first} == first
