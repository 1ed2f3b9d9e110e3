"""`deploy check` refuses, by name, a robot model or a policy file that breaks the contract (joints
swapped, a gain changed, a timestep the control period is no whole number of, a block dropped, a
mass changed), and play refuses a policy whose contract differs from the env's (a halved control
period included), naming the first difference. A model that integrates the same period in
smaller steps fits."""

import json
import os
import pathlib
import subprocess
import sys

import mujoco
import numpy as np
import pytest
import safetensors.torch
import torch

import unienv
from unienv.__main__ import main as unienv_main
from unienv.deploy import runner
from unienv.deploy.contract import contract_of, model_path
from unienv.errors import ArgumentError
from unienv.tasks.velocity.robots.quadruped import QUADRUPED
from unienv.training.policy import save_policy
from unienv.training.rollout import make_policy

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from tests.deploy.test_runner import random_policy  # noqa: E402

SCENE = QUADRUPED.scene
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def policy(quadruped_policy):
    return quadruped_policy


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
    "timestep off the period": (
        (('timestep="0.005"', 'timestep="0.003"'),),
        "control.period: the policy's 0.02 s is not a whole number of the model's 0.003 s timesteps",
    ),
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
    assert ("robot.hash" in out) == (name != "timestep off the period"), out


def test_a_finer_timestep_runs_the_same_period(capsys, policy, tmp_path):
    """The control period is the policy's; a model integrating it in 8 steps of 2.5 ms fits."""
    model = mutated(tmp_path, ('timestep="0.005"', 'timestep="0.0025"'))
    assert check(capsys, policy, model)[0] == 0
    run = runner.Runner(policy, mujoco.MjModel.from_xml_path(model))
    data = mujoco.MjData(run.model)
    run.step(data, [0.5, 0.0, 0.0])
    assert run.substeps == 8 and np.isclose(data.time, 0.02)


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
    model = mutated(tmp_path, ('timestep="0.005"', 'timestep="0.003"'))
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
        meta["contract"]["control"] |= {"decimation": 2, "period": 0.01}  # the control period halved
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

    def halved(contract):  # the period halved alone: no longer the sim_dt x decimation it says
        contract["control"]["period"] = 0.01

    with pytest.raises(
        ArgumentError, match=r"'control.period': expected sim_dt x decimation = 0.02 s, got 0.01 s"
    ):
        unienv_main(["deploy", "check", rewrite_onnx(policy, tmp_path, halved), "--model", SCENE])
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


@pytest.fixture(scope="module")
def go1_policy(tmp_path_factory):
    env = unienv.make("go1_velocity", num_envs=1, seed=0)
    path = random_policy(env, tmp_path_factory.mktemp("policy") / "go1")
    env.close()
    return path


def test_a_go1_policy_fits_menageries_go1_and_runs_on_it(capsys, go1_policy):
    """The task trains at 0.004 s x 5, the Menagerie scene states a 0.002 s timestep: the same
    0.02 s control period, which the runner integrates in 10 steps; a changed gain is named."""
    contract = runner.read_contract(go1_policy)
    assert contract["control"] == {"sim_dt": 0.004, "decimation": 5, "period": 0.02}
    assert contract["robot"]["joints"][:3] == ["FR_hip_joint", "FR_thigh_joint", "FR_calf_joint"]
    assert check(capsys, go1_policy, "unitree_go1") == (0, f"{go1_policy} fits unitree_go1\n")
    done = subprocess.run(
        [sys.executable, "-m", "unienv.deploy", "run", go1_policy, "--model", "unitree_go1", "--steps", "25"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0 and "ran 25 steps (0.50 s)" in done.stdout, done.stderr[-2000:]
    spec = mujoco.MjSpec.from_file(model_path("unitree_go1"))
    spec.actuator("FR_calf").gainprm[0] = 80.0
    problems = runner.mismatches(contract, spec.compile())
    assert "robot.kp.FR_calf: the policy's 100.0, the model's 80.0" in problems, problems
    with pytest.raises(ArgumentError, match=r"--model: no MJCF file 'unitree_go2x', nor a Menagerie model"):
        unienv_main(["deploy", "check", go1_policy, "--model", "unitree_go2x"])
