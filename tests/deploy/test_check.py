"""`deploy check` refuses, by name, a robot model or a policy file that breaks the contract (joints
swapped, a gain changed, the period halved, a block dropped, a mass changed), and play refuses a
policy whose contract differs from the env's, naming the first difference."""

import json
import os
import pathlib
import subprocess
import sys

import mujoco
import pytest
import safetensors.torch
import torch

import unienv
from unienv.__main__ import main as unienv_main
from unienv.deploy import runner
from unienv.deploy.contract import contract_of
from unienv.errors import ArgumentError
from unienv.tasks.quadruped import Quadruped
from unienv.training.policy import save_policy
from unienv.training.rollout import make_policy

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from tests.deploy.test_runner import random_policy  # noqa: E402

SCENE = Quadruped.scene
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    env = unienv.make("quadruped", num_envs=1, seed=0)
    path = random_policy(env, tmp_path_factory.mktemp("policy") / "quadruped")
    env.close()
    return path


def mutated(tmp_path, *replacements):
    """The quadruped's MJCF with each (old, new) replaced, once each, in turn."""
    text = pathlib.Path(SCENE).read_text()
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "robot.xml"
    path.write_text(text)
    return str(path)


def check(capsys, policy, model):
    status = unienv_main(["deploy", "check", policy, "--model", model])
    return status, capsys.readouterr().out


def test_the_shipped_model_fits(capsys, policy):
    assert check(capsys, policy, SCENE) == (0, f"{policy} fits {SCENE}\n")
    assert check(capsys, policy.replace(".onnx", ".safetensors"), SCENE)[0] == 0  # both files carry it


FL = '<position name="FL_hip" joint="FL_hip_joint" class="abduction"/>'
FR = '<position name="FR_hip" joint="FR_hip_joint" class="abduction"/>'
MUTATIONS = {  # name: (the edits of the MJCF, what the check must name)
    # FL_hip's and FR_hip's actuators swapped: actions 0 and 3 would drive each other's joints
    "joints swapped": (
        ((FL, "@"), (FR, FL), ("@", FR)),
        "robot.actuators[0]: the policy's FL_hip, the model's FR_hip",
    ),
    "gain changed": (
        ((FR, FR.replace("/>", ' kp="25"/>')),),
        "robot.kp.FR_hip: the policy's 40.0, the model's 25.0",
    ),
    "period halved": ((('timestep="0.005"', 'timestep="0.0025"'),), "control.period: the policy's 0.02 s"),
    "mass changed": (
        (('mass="6.921"', 'mass="7.5"'),),
        "robot.mass.base: the policy's 6.921, the model's 7.5",
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_mutated_model_is_refused_by_name(capsys, policy, tmp_path, name):
    edits, expected = MUTATIONS[name]
    status, out = check(capsys, policy, mutated(tmp_path, *edits))
    assert status == 1 and expected in out, out
    # the hash covers the tree, the actuators' gains and the masses; the timestep is compared apart
    assert ("robot.hash" in out) == (name != "period halved"), out
    assert ("robot.timestep" in out) == (name == "period halved"), out


def rewrite_onnx(policy, tmp_path, edit):
    """A copy of the ONNX policy with its contract passed through edit."""
    model = onnx.load(policy)
    prop = next(p for p in model.metadata_props if p.key == "unienv")
    meta = json.loads(prop.value)
    edit(meta["contract"])
    prop.value = json.dumps(meta)
    out = str(tmp_path / "edited.onnx")
    onnx.save(model, out)
    return out


def drop_gravity(contract):
    contract["observation"] = [b for b in contract["observation"] if b["name"] != "gravity"]


def test_a_dropped_observation_block_is_refused(capsys, policy, tmp_path):
    status, out = check(capsys, rewrite_onnx(policy, tmp_path, drop_gravity), SCENE)
    assert status == 1 and "observation: the blocks ['base_lin_vel', 'base_ang_vel', 'command'" in out
    assert "give 45 columns, the policy takes 48" in out


def test_the_command_line_exits_non_zero(policy, tmp_path):
    model = mutated(tmp_path, ('timestep="0.005"', 'timestep="0.0025"'))
    for command in (["unienv", "deploy"], ["unienv.deploy"]):
        done = subprocess.run(
            [sys.executable, "-m", *command, "check", policy, "--model", model],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
        assert done.returncode == 1 and "control.period" in done.stdout, done.stderr[-2000:]


def test_play_refuses_a_contract_that_differs(policy, tmp_path):
    env = unienv.make("quadruped", num_envs=1, seed=0)
    try:
        make_policy(policy, env)  # the file as exported fits
        with pytest.raises(
            ArgumentError,
            match=r"first observation: the policy's \['base_lin_vel', 'base_ang_vel', 'command'",
        ):
            make_policy(rewrite_onnx(policy, tmp_path, drop_gravity), env)
        source = policy.replace(".onnx", ".safetensors")
        weights = safetensors.torch.load_file(source)
        with safetensors.safe_open(source, "pt") as f:
            meta = json.loads(f.metadata()["unienv"])
        meta["contract"]["control"]["decimation"] = 2
        edited = str(tmp_path / "edited.safetensors")
        safetensors.torch.save_file(weights, edited, metadata={"unienv": json.dumps(meta)})
        with pytest.raises(ArgumentError, match=r"first control.decimation: the policy's 2, this env's 4"):
            make_policy(edited, env)
    finally:
        env.close()


def test_bad_files_and_models_are_refused_by_name(capsys, policy, tmp_path):
    def malformed(contract):
        contract["control"]["decimation"] = "4"

    with pytest.raises(ArgumentError, match=r"contract field 'control.decimation': expected a int, got '4'"):
        unienv_main(["deploy", "check", rewrite_onnx(policy, tmp_path, malformed), "--model", SCENE])
    with pytest.raises(ArgumentError, match=r"--model: no MJCF file 'no_such_robot'"):
        unienv_main(["deploy", "check", policy, "--model", "no_such_robot"])
    env = unienv.make("cartpole")
    save_policy(
        str(tmp_path / "cartpole.safetensors"),
        torch.nn.Sequential(torch.nn.Linear(5, 1)),
        env,
        backend="mujoco",
    )
    env.close()
    with pytest.raises(ArgumentError, match="carries no deployment contract"):
        unienv_main(["deploy", "check", str(tmp_path / "cartpole.safetensors"), "--model", SCENE])


def test_a_rough_terrain_policy_fits_the_flat_robot():
    """The contract's robot is the root body's subtree: the terrain around it is not part of it."""
    env = unienv.make("quadruped_rough", num_envs=1, seed=0)
    try:
        contract = contract_of(env)
    finally:
        env.close()
    assert (
        contract["observation"][-1]["name"] == "height_scan" and contract["observation"][-1]["width"] == 187
    )
    assert runner.mismatches(contract, mujoco.MjModel.from_xml_path(SCENE), obs_dim=235) == []
