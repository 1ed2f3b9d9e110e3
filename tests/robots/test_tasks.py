"""The Menagerie robot tasks (every robot's velocity task in the registry, their rough variants,
g1_tracking): the model's own joint order, gains and default pose, standing under a zero action,
the engines that run or refuse them, no host sync on MuJoCo Warp, Gymnasium's env checker. A
robot added to the registry is tested here without a line of this file. Few envs, one build per
engine and task for the session."""

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import unienv
from tests.syncs import count_host_syncs
from unienv.errors import CapabilityError
from unienv.tasks import TASKS, Velocity, task_class

GO1_POSE = [0.0, 0.9, -1.8] * 4  # Menagerie's "home": hip, thigh, calf of FR, FL, RR, RL
# mjlab's G1 (g1_constants.py): kp, kd per motor of each joint, from its reflected inertia
MOTORS = {  # N m/rad, N m s/rad, torque limit N m
    "7520-14": (40.1792, 2.55789, 88.0),
    "7520-22": (99.0984, 6.30880, 139.0),
    "2x5020": (28.5012, 1.81445, 50.0),
    "5020": (14.2506, 0.907223, 25.0),
    "4010": (16.7783, 1.06814, 5.0),
}
G1_LEG = ["7520-14", "7520-22", "7520-14", "7520-22", "2x5020", "2x5020"]  # hip p, r, y, knee, ankle p, r
G1_ARM = ["5020"] * 5 + ["4010"] * 2  # shoulder p, r, y, elbow, wrist r; wrist p, y
G1_MOTORS = G1_LEG * 2 + ["7520-14", "2x5020", "2x5020"] + G1_ARM * 2  # waist yaw, roll, pitch
G1_POSE = (  # mjlab's knees-bent stance: legs, waist, left arm, right arm
    [-0.312, 0.0, 0.0, 0.669, -0.363, 0.0] * 2
    + [0.0, 0.0, 0.0]
    + [0.2, 0.2, 0.0, 0.6, 0.0, 0.0, 0.0, 0.2, -0.2, 0.0, 0.6, 0.0, 0.0, 0.0]
)


def _menagerie(name) -> bool:
    """A velocity task of a MuJoCo Menagerie robot (the quadruped's scene ships in tasks/assets/)."""
    return isinstance(TASKS[name], Velocity) and not os.path.isabs(task_class(name).robot.scene)


# each Menagerie robot's velocity task, and the rough variants, from the registry
ROBOTS = [name for name in TASKS if _menagerie(name) and not TASKS[name].rough]
ROUGH = [name for name in TASKS if _menagerie(name) and TASKS[name].rough]


def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.fixture(scope="session")
def envs():
    """A built env per (task, backend), closed at the end of the session."""
    built = {}

    def get(task, backend="mujoco", num_envs=2, **task_options):
        key = (task, backend, num_envs, repr(sorted(task_options.items())))
        if key not in built:
            device = "cpu" if backend in ("mjwarp", "genesis") else None
            built[key] = unienv.make(
                task, backend=backend, num_envs=num_envs, seed=0, device=device, task_options=task_options
            )
        return built[key]

    yield get
    for env in built.values():
        env.close()


@pytest.mark.parametrize("task", ROBOTS)
def test_action_i_drives_actuator_i_of_the_model(envs, task):
    env = envs(task)
    info, t = env.backend.info, env.task
    assert t.joints == info.nu == env.single_action_space.shape[0]
    joints = [info.names["joint"][j] for j in info.actuator_joint]
    assert [int(i) for i in t.q_idx] == [int(info.joint_qpos_adr[j]) for j in info.actuator_joint]
    assert all(j.startswith(a) for a, j in zip(info.names["actuator"], joints, strict=True))
    for i in (0, info.nu - 1):
        action = np.zeros((2, info.nu), np.float32)
        action[:, i] = 1.0
        moved = np.asarray(t.action_to_ctrl(action)) - np.asarray(t.default_q)
        assert np.flatnonzero(np.abs(moved[0]) > 1e-9).tolist() == [i]
        scale = np.broadcast_to(np.asarray(t.action_gain), (info.nu,))  # the G1's: per joint
        assert moved[0, i] == pytest.approx(scale[i])


def test_go1_gains_and_pose_are_menageries(envs):
    env = envs("go1_velocity")
    info, t = env.backend.info, env.task
    np.testing.assert_allclose(info.actuator_gain, 100.0)
    np.testing.assert_allclose(info.actuator_bias[:, 1], -100.0)  # kp 100 on the joint position
    np.testing.assert_allclose(np.asarray(t.default_q), GO1_POSE)
    assert t.action_scale == 0.5 and t.dt == pytest.approx(0.02)  # Playground's joystick scale


def test_g1_gains_pose_and_action_scale_are_mjlabs(envs):
    env = envs("g1_velocity")
    info, t = env.backend.info, env.task
    kp, kd, torque = np.array([MOTORS[m] for m in G1_MOTORS]).T
    np.testing.assert_allclose(info.actuator_gain, kp, rtol=1e-5)
    np.testing.assert_allclose(info.actuator_bias[:, 1:], np.stack([-kp, -kd], 1), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t.default_q), G1_POSE)
    np.testing.assert_allclose(np.asarray(t.action_gain), 0.25 * torque / kp, rtol=1e-5)
    assert float(t.home[2]) == pytest.approx(0.76) and t.dt == pytest.approx(0.02)
    # the actuators drive the hinges in the model's joint order (joint 0 is the free joint)
    assert info.actuator_joint.tolist() == list(range(1, 30))
    assert info.names["actuator"] == info.names["joint"][1:]
    assert info.names["actuator"][:6] == ("left_hip_pitch_joint", "left_hip_roll_joint", "left_hip_yaw_joint",
                                          "left_knee_joint", "left_ankle_pitch_joint", "left_ankle_roll_joint")  # fmt: skip


def test_g1_contract_carries_its_per_joint_action_scale(envs):
    """The deployed policy's targets are default + scale * action with the task's own scale per
    joint (not the option's 0.25), so a runner drives the robot as training did."""
    from unienv.deploy.contract import contract_of

    env = envs("g1_velocity")
    action = contract_of(env)["action"]
    np.testing.assert_allclose(action["scale"], np.asarray(env.task.action_gain), rtol=1e-5)
    np.testing.assert_allclose(action["offset"], np.asarray(env.task.default_q), rtol=1e-5)


def _stand(env, seconds):
    """Zero actions for `seconds` from the default pose: no env may end; the worst joint error."""
    env.reset(seed=0)
    fell = torch.zeros(env.num_envs, dtype=torch.bool)
    for _ in range(round(seconds / env.task.dt)):
        _, _, terminated, _, _ = env.step(torch.zeros(env.action_space.shape))
        fell |= torch.as_tensor(terminated)
    s = env.task.read(env.backend)
    error = (torch.as_tensor(s["q"]) - torch.as_tensor(env.task.default_q)).abs().max()
    return fell, float(error), torch.as_tensor(s["height"])


ENGINES = [
    "mujoco",
    pytest.param("mjwarp", marks=pytest.mark.skipif(not _has("mujoco_warp"), reason="the mjwarp extra")),
    pytest.param(
        "genesis",
        marks=[pytest.mark.slow, pytest.mark.skipif(not _has("genesis"), reason="the genesis extra")],
    ),
]


@pytest.mark.parametrize("backend", ENGINES[:2])
@pytest.mark.parametrize("task", ROBOTS)
def test_each_robot_holds_its_pose_1_s_under_a_zero_action(envs, task, backend):
    """From the default pose, a zero action for 1 s: no env ends, the joints stay within 0.5 rad
    of the pose and the root above 80 % of its standing height. A humanoid's PD stance is an
    unstable equilibrium that falls later (its spec's docstring says when and why)."""
    env = envs(task, backend, reset_noise_scale=0.0)
    fell, error, height = _stand(env, 1.0)
    assert not fell.any() and error < 0.5 and torch.all(height > 0.8 * env.task.base_height_target)


@pytest.mark.parametrize("backend", ENGINES)
def test_go1_stands_2_s_under_a_zero_action(envs, backend):
    fell, error, height = _stand(envs("go1_velocity", backend, reset_noise_scale=0.0), 2.0)
    assert not fell.any() and error < 0.1
    assert torch.all((height > 0.24) & (height < 0.29))  # trunk near the home pose's 0.27 m


@pytest.mark.parametrize("backend", ENGINES[:2])
def test_g1_holds_its_pose_1_s_but_not_2_under_a_zero_action(envs, backend):
    """Under mjlab's gains the ankle pitch servos (2 x 28.5 N m/rad) are softer than gravity's
    tipping of the body about the ankles (193 N m/rad): the stance is an unstable equilibrium
    that the PD alone cannot hold. The G1 stands 1 s, sagging into its servos, and falls at
    about 1.3 s (the task's docstring says so): a policy must balance it."""
    env = envs("g1_velocity", backend, reset_noise_scale=0.0)
    fell, error, height = _stand(env, 1.0)
    assert not fell.any() and error < 0.5 and torch.all(height > 0.65)  # sagging, still up
    fell = torch.zeros(env.num_envs, dtype=torch.bool)
    for _ in range(round(1.0 / env.task.dt)):  # on from there, to 2 s
        _, _, terminated, _, _ = env.step(torch.zeros(env.action_space.shape))
        fell |= torch.as_tensor(terminated)
    assert fell.all()


# what Genesis refuses, and the MJCF feature its error names: each robot's spec says it, terrain's
# heightfields on every rough variant, and g1_tracking's G1
GENESIS_REFUSES = {name: task_class(name).robot.refused.get("genesis") for name in ROBOTS + ROUGH}
GENESIS_REFUSES |= {name: "|".join(filter(None, ("hfield", GENESIS_REFUSES[name]))) for name in ROUGH}
GENESIS_REFUSES |= {"g1_tracking": "contact pairs"}


@pytest.mark.skipif(not _has("genesis"), reason="the genesis extra")
@pytest.mark.parametrize("task", [name for name, feature in GENESIS_REFUSES.items() if feature])
def test_genesis_refuses_what_it_would_simulate_wrongly(task):
    with pytest.raises(CapabilityError, match=GENESIS_REFUSES[task]):
        unienv.make(task, backend="genesis", num_envs=1, device="cpu")


@pytest.mark.skipif(not _has("mujoco_warp"), reason="the mjwarp extra")
@pytest.mark.parametrize("task", [*ROBOTS, "g1_tracking", "panda_lift", "panda_place", "leap_cube_rotate"])
def test_no_host_sync_per_step_on_mjwarp(task):
    env = unienv.make(task, backend="mjwarp", device="cpu", num_envs=4, seed=0, max_episode_steps=5)
    try:
        g = torch.Generator().manual_seed(0)
        env.reset()
        for _ in range(6):  # warm-up: kernels, first resets
            env.step(torch.rand(4, env.single_action_space.shape[0], generator=g) * 2 - 1)
        dones = torch.zeros((), dtype=torch.int64)
        with count_host_syncs() as counts:
            for _ in range(12):
                _, _, term, trunc, _ = env.step(
                    torch.rand(4, env.single_action_space.shape[0], generator=g) * 2 - 1
                )
                dones = dones + (term | trunc).sum()
        assert int(dones) > 0 and not counts, counts.most_common()
    finally:
        env.close()


@pytest.mark.parametrize("task", [*ROBOTS, "g1_tracking"])
def test_single_env_passes_check_env(task):
    env = gym.make(unienv.tasks.gym_id(task))
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("task", ROUGH)
def test_rough_variants_scan_the_terrain_and_keep_the_robot(envs, task):
    terrain = {"types": ["rough"], "num_levels": 2, "tile_size": 2.0}
    env = envs(task, terrain=terrain)
    obs, _ = env.reset(seed=0)
    flat = envs(task.removesuffix("_rough"))
    layout = env.task.observation_layout
    assert layout["height_scan"].stop == obs.shape[1] == flat.single_observation_space.shape[0] + 187
    assert env.backend.info.names["actuator"] == flat.backend.info.names["actuator"]
    assert torch.isfinite(torch.as_tensor(obs)).all()


def test_robots_dr_preset_adds_base_mass_and_changes_the_physics():
    """dr=robots: each env's root body gets -1..+3 kg (and the default set): the written masses
    differ per env and make the Go1 sink deeper into its PD servos, standing still."""
    heights = {}
    for dr in (None, "robots"):
        env = unienv.make("go1_velocity", num_envs=4, seed=0, dr=dr, task_options={"reset_noise_scale": 0.0})
        root = int(env.backend.find("body", "trunk")[0])
        _, _, heights[dr] = _stand(env, 0.5)
        if dr:
            mass = np.asarray(env.backend.get_dr_param("body_mass"))[:, root]
            base = float(np.asarray(env.backend.get_dr_default("body_mass"))[root])
            assert len(set(np.round(mass, 6))) == 4 and np.all(mass > base - 1.0 - 1e-6)
            assert np.all(mass < base + 3.0 + 1e-6)
        env.close()
    assert not torch.equal(heights[None], heights["robots"])


@pytest.mark.skipif(not _has("rsl_rl"), reason="the rsl-rl extra")
def test_g1_training_resumes_and_its_policy_exports_to_onnx(tmp_path):
    """train=ppo_g1 at 4 envs x 4 steps: 2 iterations, resumed to 3 (the curve continues), then
    the policy file exported to ONNX and checked against torch by `unienv export`."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run_dir = tmp_path / "run"

    def run(*args):
        done = subprocess.run(
            [sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    train = [os.path.join(root, "train.py"), "train=ppo_g1", "num_envs=4", "train.runner.num_steps_per_env=4"]
    train += ["train.eval_steps=0", "train.max_seconds=null", f"hydra.run.dir={run_dir}"]
    run(*train, "train.iterations=2")
    run(*train, "train.iterations=3", f"train.resume={run_dir}")
    with open(run_dir / "metrics.json") as f:
        assert [row["iteration"] for row in json.load(f)["curve"]] == [1, 2, 3]
    out = run(
        "-m", "unienv", "export", str(run_dir / "policy.safetensors"), "--onnx", str(tmp_path / "g1.onnx")
    )
    assert "(g1_velocity: obs (99,) -> actions (29,)" in out, out


@pytest.mark.parametrize("task", ROBOTS)
def test_train_py_evaluates_the_robots_tracking_error(envs, task):
    """train.py's evaluation (GaitRecorder) reads the command by the observation block's name and
    the errors from the task's metrics: they equal those from the task's own reading of the
    base's velocity and the command."""
    from unienv.training.gait import GaitRecorder

    env = envs(task)
    env.reset(seed=3)
    recorder = GaitRecorder.of(env)
    obs, _, terminated, truncated, info = env.step(torch.zeros(env.action_space.shape))
    assert not (terminated | truncated).any()
    recorder(obs, info, terminated)
    base, command = np.asarray(env._reading["base"]), np.asarray(env._memory["command"])
    lin = np.linalg.norm(command[:, :2] - base[:, 0, :2], axis=1).mean()  # base-frame linear velocity
    yaw = np.abs(command[:, 2] - base[:, 1, 2]).mean()  # base-frame angular velocity about z
    summary = recorder.summary()
    assert summary["lin_vel_error"] == pytest.approx(lin, rel=1e-6)
    assert summary["yaw_rate_error"] == pytest.approx(yaw, rel=1e-6)
    np.testing.assert_allclose(np.asarray(recorder.commands[0]), command, rtol=1e-5)
