"""The policies unienv ships: each loads with its contract, fits its Menagerie robot, plays by name on
the env it was trained for, and walks there (the figures of docs/laptop.md are its own runs')."""

import os
import re
import subprocess
import sys

import numpy as np

from unienv.deploy.check import check
from unienv.training.policy import load_policy
from unienv.training.shipped import SHIPPED, policy_path, shipped, trained_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_BYTES = 512 << 10  # a few hundred KB: a repository, not a model zoo
ROBOTS = {"go1_velocity": "unitree_go1"}  # Menagerie's model that a shipped task's policy runs on as is
# (the G1's policy asks for mjlab's gains, which Menagerie's g1.xml does not have: its contract says so)


def test_the_policies_ship_small_with_their_contract_and_the_go1s_fit_menageries_go1():
    names = shipped()
    assert {"go1_trot", "g1_walk", "g1_stand"} <= set(names), names
    for name in names:
        path = policy_path(name)
        assert path == os.path.join(SHIPPED, f"{name}.safetensors") and os.path.getsize(path) <= MAX_BYTES
        _, meta = load_policy(path)
        assert meta["contract"] is not None and meta["task"] in ("go1_velocity", "g1_velocity"), meta["task"]
        if meta["task"] in ROBOTS:
            assert check(path, ROBOTS[meta["task"]]) == [], name
    assert policy_path("zero") == "zero" and policy_path("runs/x.onnx") == "runs/x.onnx"  # as given


def test_a_policy_plays_on_its_own_env_unless_the_command_line_says_otherwise():
    meta = {
        "task": "go1_velocity",
        "task_options": {"gait_frequency": 2.0, "command_ranges": {"x": [0.5, 0.5]}},
    }
    task, options, adopted = trained_env(meta, "cartpole", {}, [])
    assert (task, options, adopted) == (
        "go1_velocity",
        meta["task_options"],
        ["command_ranges", "gait_frequency"],
    )
    mine = {"gait_frequency": 3.0, "command_ranges": {"x": [0.0, 0.0]}}
    task, options, adopted = trained_env(meta, "go1_velocity", mine, ["task.command_ranges={x:[0,0]}"])
    assert options == {"gait_frequency": 2.0, "command_ranges": {"x": [0.0, 0.0]}} and adopted == [
        "gait_frequency"
    ]
    # another task named on the command line stays (the layout check then refuses the policy)
    assert trained_env(meta, "quadruped", {"a": 1}, ["task=quadruped"]) == ("quadruped", {"a": 1}, [])


def play_shipped(name, task, tmp_path):
    """`python play.py policy=NAME` on 2 envs for 10 s: its stdout and the rollout's summary line
    (no fall asserted), with the summary's speed."""
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "play.py"), f"policy={name}", "steps=500", "num_envs=2"]
        + ["video.enabled=false", "task.episode_length_s=10"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(s for s in done.stdout.splitlines() if s.startswith(f"{task} on mujoco"))
    assert "termination rate 0.00" in line, line
    speed = re.search(r", speed (-?[\d.]+)", line)
    assert speed, line
    return done.stdout, line, float(speed.group(1))


def test_the_shipped_trot_plays_by_name_and_walks(tmp_path):
    """`python play.py policy=go1_trot`: the Go1 at its trained 0.5 m/s command, none falls in 10 s."""
    out, line, speed = play_shipped("go1_trot", "go1_velocity", tmp_path)
    assert out.startswith("go1_velocity: from the policy file"), out
    assert 0.4 <= speed <= 0.6, line  # the trained command, 0.5 m/s


def test_the_shipped_g1_walks_by_name(tmp_path):
    """`python play.py policy=g1_walk`: the G1 at its trained 0.5 m/s, neither env falls in 10 s,
    the feet take turns (each on the ground 40 to 75 % of the time, not both all the time)."""
    _, line, speed = play_shipped("g1_walk", "g1_velocity", tmp_path)
    assert 0.35 <= speed <= 0.65, line
    for foot in ("left", "right"):
        share = re.search(rf"contact_{foot}_ankle_roll_link ([\d.]+)", line)
        assert share and 0.4 <= float(share.group(1)) <= 0.75, line


def test_the_shipped_g1_stands_by_name(tmp_path):
    """`python play.py policy=g1_stand`: the G1 at its zero command, neither env falls in 10 s, it
    stays where it is and both feet stay down."""
    _, line, speed = play_shipped("g1_stand", "g1_velocity", tmp_path)
    assert abs(speed) <= 0.05, line
    for foot in ("left", "right"):
        share = re.search(rf"contact_{foot}_ankle_roll_link ([\d.]+)", line)
        assert share and float(share.group(1)) >= 0.95, line


def test_the_shipped_trot_exported_runs_in_the_standalone_runner_with_the_envs_actions(tmp_path):
    """The trot's ONNX export in unienv.deploy.runner (plain MuJoCo, the task's scene of Menagerie's
    Go1): over 500 steps (10 s of trotting) its actions are the env's, and the robot ends where the
    env's does."""
    import mujoco

    import unienv
    from tests.deploy.test_runner import mjdata_like, trained_timestep
    from unienv.deploy import runner
    from unienv.training.export import export_onnx
    from unienv.training.rollout import make_policy

    path, onnx_path = policy_path("go1_trot"), str(tmp_path / "go1_trot.onnx")
    export_onnx(path, onnx_path)
    meta = load_policy(path)[1]
    env = unienv.make(meta["task"], num_envs=1, seed=5, task_options=meta["task_options"])
    try:
        policy = make_policy(path, env)
        obs, _ = env.reset(seed=5)
        model = trained_timestep(env, mujoco.MjModel.from_xml_path(env.unwrapped.task.scene))
        data, command = mjdata_like(env, model), np.asarray(env.unwrapped._memory["command"][0])
        run, worst = runner.Runner(onnx_path, model), 0.0
        for _ in range(500):
            action = policy(obs)
            worst = max(worst, float(np.abs(run.step(data, command) - action.numpy()[0]).max()))
            obs, _, terminated, truncated, _ = env.step(action)
            assert not (terminated | truncated).any()
        state = env.unwrapped.backend.get_physics_state()[0, 1 : 1 + model.nq].numpy()
    finally:
        env.close()
    assert worst <= 1e-4, worst
    assert data.qpos[0] > 4.0 and np.allclose(data.qpos[:3], state[:3], atol=1e-3)  # 0.5 m/s for 10 s
