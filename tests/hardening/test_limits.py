"""What a config or a file sets is bounded before it is allocated (unienv.utils.limits), and a policy
file is checked against its own tensors before anything is built: issue 27's rows 1, 2, 3, 8, 9,
10 and 11, each refused with an unienv error naming the argument, on every backend where the row
concerns the env or DR (genesis builds nothing before these refusals)."""

import json
import os
import re
import resource
import subprocess
import sys

import numpy as np
import pytest
import safetensors.torch
import torch

import unienv
from unienv.dr.kinds import ActionLatency
from unienv.errors import ArgumentError, UnknownNameError
from unienv.terrain import TerrainConfig
from unienv.training import policy as checkpoint
from unienv.utils import limits

from .test_bad_input import BACKENDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "tests", "hardening", "cli_driver.py")
GiB = 1 << 30


def _device(backend):
    from tests.contract.conftest import MJWARP_DEVICE

    return MJWARP_DEVICE if backend == "mjwarp" else "cpu" if backend == "genesis" else None


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


# ---- the two checks ---------------------------------------------------------------------------


def test_check_size_takes_whole_numbers_within_the_bound():
    assert limits.check_size("n", np.int64(3), 10) == 3 and limits.check_size("n", 4.0, 10) == 4
    for bad in (0, 11, 2.5, float("inf"), float("nan"), True, "3", None, 2**70):
        with pytest.raises(ArgumentError, match=r"^n: expected a whole number in \[1, 10\]"):
            limits.check_size("n", bad, 10)


def test_check_memory_refuses_more_than_there_is():
    limits.check_memory("ring", 1 << 20)
    with pytest.raises(
        ArgumentError, match=r"^ring: needs 1024\.0 TiB for a ring, more than the .* available RAM"
    ):
        limits.check_memory("ring", 1 << 50, None, "a ring")


def test_check_fits_refuses_what_the_dtype_cannot_hold():
    limits.check_fits("x", [3e38, -1.0], torch.float32)
    limits.check_fits("x", [127, -128], np.int8)
    for values, dtype in (
        ([1e39], torch.float32),
        ([128], np.int8),
        ([np.nan], torch.float64),
        ([np.inf], "f8"),
    ):
        with pytest.raises(ArgumentError, match=r"^x: expected (finite values|values within)"):
            limits.check_fits("x", values, dtype)
    with pytest.raises(ArgumentError, match=r"within the square root of float32's range"):
        limits.check_fits("x", [1e20], torch.float32, squared=True)


# ---- DR: latency ring, intervals, reset states (row 1, 3, 8) ---------------------------------

REFUSED_DR = {
    "latency of 1e9 steps": (
        {"lat": {"param": "action_latency", "range": [0, 1e9]}},
        r"dr\.lat\.range: expected a whole number of steps in \[0, 65536\], got 1000000000\.0",
    ),
    "latency beyond int64": (
        {"lat": {"param": "action_latency", "range": [0, 2**70]}},
        r"dr\.lat\.range: expected a whole number of steps in \[0, 65536\], got 1\.18",
    ),
    "push interval beyond int64": (
        {"p": {"param": "push", "body": "torso", "range": [0, 1], "interval": [1, 2**70]}},
        r"dr\.p\.interval: expected a whole number of env steps in \[1, 4611686018427387904\]",
    ),
    "init_state qpos 1e300": (
        {"s": {"param": "init_state", "field": "qpos", "objects": "rootz", "range": [1e300, 1e300]}},
        r"dr\.s\.range \(add on qpos\): expected values within the square root of float(32|64)'s range",
    ),
    "init_state qvel unclipped gaussian": (
        {
            "s": {
                "param": "init_state",
                "field": "qvel",
                "objects": "rootx",
                "distribution": "gaussian",
                "std": 1e200,
            }
        },
        r"dr\.s\.range \(add on qvel\): expected values within .* got -?8\.6",
    ),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", REFUSED_DR)
def test_dr_sizes_and_values_are_refused_at_construction(backend, case):
    dr, message = REFUSED_DR[case]
    before = _peak_rss()
    with pytest.raises(ArgumentError, match=message):
        unienv.make("hopper", backend=backend, num_envs=2, device=_device(backend), dr=dr)
    assert _peak_rss() - before < GiB  # nothing of that size was allocated


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "genesis"])
def test_a_latency_ring_beyond_memory_is_refused_naming_its_size(backend):
    """Within the bound, but over more envs than the ring's memory allows here."""
    num_envs = 2 * int(limits.available()[0] // ((ActionLatency.max_delay + 1) * 3 * 8)) + 1
    dr = {"lat": {"param": "action_latency", "range": [0, ActionLatency.max_delay]}}
    before = _peak_rss()
    with pytest.raises(
        ArgumentError,
        match=rf"^dr\.lat\.range: needs .* for a ring of the last 65537 actions x {num_envs} envs x 3 float64, more than the .* available RAM",
    ):
        unienv.make("hopper", backend=backend, num_envs=num_envs, device=_device(backend), dr=dr)
    assert _peak_rss() - before < GiB


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "genesis"])
def test_reset_states_within_the_bound_run(backend):
    """The bound refuses only what cannot be held: a large but representable offset runs."""
    dr = {"s": {"param": "init_state", "field": "qvel", "objects": "rootx", "range": [1e3, 1e3]}}
    env = unienv.make("hopper", backend=backend, num_envs=2, device=_device(backend), dr=dr, seed=0)
    obs, _ = env.reset()
    assert torch.isfinite(obs).all()
    env.close()


# ---- env construction: keywords, frames, heightfields, NumPy ints (rows 8, 11) ---------------


def test_an_unknown_keyword_is_a_type_error_with_did_you_mean():
    with pytest.raises(TypeError, match=r"'max_episode_step'; did you mean 'max_episode_steps'\?") as error:
        unienv.make("cartpole", max_episode_step=3)
    assert isinstance(error.value, UnknownNameError)


def test_frames_that_would_not_fit_are_refused_before_the_engine_renders():
    with pytest.raises(ArgumentError, match=r"^render_size: needs .* for 1024 frames of 8192 x 8192"):
        unienv.make("cartpole", num_envs=1024, render_mode="rgb_array", render_size=(8192, 8192))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"tile_size": 20000.0, "resolution": 0.1}, r"expected a whole number in \[1, 32768\], got 2000000$"),
        ({"resolution": 1e-300}, r"got about 4e\+301$"),
        ({"num_levels": 10**9}, r"got 40000000000$"),
    ],
)
def test_a_heightfield_too_large_is_refused_before_it_is_generated(options, message):
    before = _peak_rss()
    with pytest.raises(
        ArgumentError, match=r"^resolution: heightfield samples along its longer side.*" + message
    ):
        TerrainConfig(**options)
    assert _peak_rss() - before < GiB


def test_a_rough_terrain_task_refuses_it_too():
    with pytest.raises(ArgumentError, match=r"resolution: heightfield samples"):
        unienv.make("quadruped_rough", task_options={"terrain": {"tile_size": 20000.0, "resolution": 0.1}})


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "genesis"])
def test_numpy_ints_are_taken_for_every_count(backend):
    env = unienv.make(
        "hopper",
        backend=backend,
        num_envs=np.int64(2),
        seed=np.int32(3),
        device=_device(backend),
        max_episode_steps=np.int16(5),
    )
    env.reset(seed=np.uint32(4))
    assert env.num_envs == 2 and type(env.num_envs) is int
    env.close()


# ---- policy files (rows 2, 8, 9, 10) ---------------------------------------------------------


@pytest.fixture(scope="module")
def layout():
    env = unienv.make("cartpole", num_envs=1)
    meta = checkpoint.policy_layout(env)
    env.close()
    return meta


def _policy(path, layout, tensors, raw=None, replace=("", ""), **changes):
    """A cartpole policy file with the given tensors and metadata changed by `changes` (a value
    of None removes the key); `raw` replaces the whole JSON, `replace` edits its text."""
    meta = {
        "format": checkpoint.FORMAT,
        "network": [{"type": "linear", "in": 5, "out": 1}],
        **layout,
        "info": {},
    }
    for key, value in changes.items():
        meta.pop(key) if value is None else meta.__setitem__(key, value)
    header = raw if raw is not None else json.dumps(meta).replace(*replace)
    safetensors.torch.save_file(tensors, str(path), metadata={checkpoint.META_KEY: header})
    return str(path)


LINEAR = {"0.weight": torch.zeros(1, 5), "0.bias": torch.zeros(1)}
NORMALIZED = [{"type": "normalize", "size": 5}, {"type": "linear", "in": 5, "out": 1}]
BAD_POLICIES = {
    "huge layers, no weights": (
        {},
        {
            "network": [
                {"type": "linear", "in": 5, "out": 1 << 20},
                {"type": "linear", "in": 1 << 20, "out": 1 << 20},
                {"type": "linear", "in": 1 << 20, "out": 1},
            ]
        },
        r"its network .* has tensors .* the file \[\] \(missing",
    ),
    "a layer of another shape": (
        {"0.weight": torch.zeros(2, 5), "0.bias": torch.zeros(1)},
        {},
        r"tensor '0\.weight': expected float32 of shape \[1, 5\], got F32 of shape \[2, 5\]",
    ),
    "an extra tensor": ({**LINEAR, "payload": torch.zeros(3)}, {}, r"unexpected \['payload'\]"),
    "int8 weights": (
        {"0.weight": torch.zeros(1, 5, dtype=torch.int8), "0.bias": torch.zeros(1)},
        {},
        r"tensor '0\.weight': expected float32 of shape \[1, 5\], got I8",
    ),
    "bool weights": (
        {"0.weight": torch.zeros(1, 5), "0.bias": torch.zeros(1, dtype=torch.bool)},
        {},
        r"tensor '0\.bias': expected float32 of shape \[1\], got BOOL",
    ),
    "NaN weights": (
        {"0.weight": torch.full((1, 5), float("nan")), "0.bias": torch.zeros(1)},
        {},
        r"tensor '0\.weight' holds NaN or inf",
    ),
    "a normalizer with std 0": (
        {
            "0.mean": torch.zeros(5),
            "0.std": torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0]),
            "1.weight": torch.zeros(1, 5),
            "1.bias": torch.zeros(1),
        },
        {"network": NORMALIZED},
        r"tensor '0\.std': a normalizer's std must be > 0, got 0\.0",
    ),
    "metadata that is not JSON": (LINEAR, {"raw": "{'task': cartpole"}, r"its 'unienv' metadata is not JSON"),
    "no task": (LINEAR, {"task": None}, r"metadata 'task': expected a str, got nothing"),
    "task_options of the wrong type": (
        LINEAR,
        {"task_options": [1]},
        r"metadata 'task_options': expected a dict, got \[1\]",
    ),
    "a [1e400] shape": (
        LINEAR,
        {"replace": ('"shape": [5]', '"shape": [1e400]')},  # JSON's 1e400 is inf
        r"metadata 'observation\.shape': expected a whole number in \[1, 1048576\], got inf",
    ),
}


@pytest.mark.parametrize("case", BAD_POLICIES)
def test_a_bad_policy_file_is_refused_naming_what_is_wrong(tmp_path, layout, case):
    tensors, changes, message = BAD_POLICIES[case]
    path = _policy(tmp_path / "policy.safetensors", layout, tensors, **changes)
    before = _peak_rss()
    with pytest.raises(ArgumentError, match=r"^policy: .*" + message):
        checkpoint.load_policy(path)
    assert _peak_rss() - before < GiB  # the huge network was never built


def test_a_good_file_still_loads(tmp_path, layout):
    tensors = {
        "0.mean": torch.zeros(5),
        "0.std": torch.full((5,), 2.0),
        "1.weight": torch.ones(1, 5),
        "1.bias": torch.zeros(1),
    }
    module, _ = checkpoint.load_policy(
        _policy(tmp_path / "p.safetensors", layout, tensors, network=NORMALIZED)
    )
    assert module(torch.full((1, 5), 0.1)).item() == pytest.approx(0.25)


def test_a_damaged_safetensors_header_is_named_as_such(tmp_path, layout):
    path = _policy(tmp_path / "policy.safetensors", layout, LINEAR)
    with open(path, "r+b") as f:
        f.write(b"\x80")  # the header-length byte: now it claims another length
    with pytest.raises(ArgumentError, match=r"is a safetensors file whose header is damaged") as error:
        checkpoint.load_policy(path)
    assert "pickle" not in str(error.value)


# ---- the command line: one error: line each (row 8) ------------------------------------------


def test_the_command_line_says_each_in_one_line(tmp_path, layout):
    marker = tmp_path / "pwned"
    (tmp_path / "cfg" / "dr").mkdir(parents=True)
    (tmp_path / "cfg" / "dr" / "evil.yaml").write_text(
        f'mass: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    (tmp_path / "cfg" / "dr" / "slow.yaml").write_text("lat: {param: action_latency, range: [0, 1e9]}\n")
    not_json = _policy(tmp_path / "not_json.safetensors", layout, LINEAR, raw="not json")
    huge = _policy(
        tmp_path / "huge.safetensors",
        layout,
        {},
        network=BAD_POLICIES["huge layers, no weights"][1]["network"],
    )
    play = os.path.join(ROOT, "play.py")
    quiet = ["video.enabled=false", "steps=2"]
    cases = {
        "evil yaml": (
            ["--config-dir", str(tmp_path / "cfg"), "dr=evil"],
            r"evil\.yaml, line 1: could not determine a constructor for the tag .*python.*; configs are plain YAML",
        ),
        "latency": (
            ["--config-dir", str(tmp_path / "cfg"), "dr=slow"],
            r"dr\.lat\.range: expected a whole number of steps in \[0, 65536\]",
        ),
        "not json": ([f"policy={not_json}"], r"policy: .* its 'unienv' metadata is not JSON"),
        "huge network": ([f"policy={huge}"], r"policy: .* its network .* has tensors"),
    }
    runs = [[play, [*args, *quiet], None] for args, _ in cases.values()]
    done = subprocess.run(
        [sys.executable, DRIVER, json.dumps(runs)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads(done.stdout.strip().splitlines()[-1])
    for (name, (_, message)), (status, stderr) in zip(cases.items(), outputs, strict=True):
        assert status == 1 and "Traceback" not in stderr, (name, stderr)
        assert stderr.count("\n") == 1 and re.match(r"error: .*" + message, stderr), (name, stderr)
    assert not marker.exists()  # and no code ran from the file
