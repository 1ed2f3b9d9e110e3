"""The standalone runner (unienv.deploy.runner) against the env: its observation from an MjData is
the env's, and closed loop on plain mujoco its actions are the env's policy actions over 1000 steps
from the same state and commands (every velocity task of the registry: each robot, on flat and rough
ground); copied out of unienv, it runs with torch and unienv blocked."""

import shutil
import subprocess
import sys

import mujoco
import numpy as np
import pytest
import torch

import unienv
from unienv.deploy import runner
from unienv.tasks import TASKS, Velocity
from unienv.training.rollout import make_policy

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
from unienv.training.export import export_onnx  # noqa: E402
from unienv.training.policy import save_policy  # noqa: E402


def random_policy(env, path, gain=0.6, seed=0):
    """A random-weight MLP for env (weights shrunk by gain: the robot stays up), saved and exported."""
    torch.manual_seed(seed)
    obs_dim, act_dim = env.single_observation_space.shape[0], env.single_action_space.shape[0]
    actor = torch.nn.Sequential(torch.nn.Linear(obs_dim, 64), torch.nn.ELU(), torch.nn.Linear(64, act_dim))
    with torch.no_grad():
        for p in actor.parameters():
            p.mul_(gain)
    save_policy(str(path) + ".safetensors", actor, env, backend="mujoco")
    export_onnx(str(path) + ".safetensors", str(path) + ".onnx")
    return str(path) + ".onnx"


def mjdata_like(env, model):
    """An MjData holding env 0's state (time, qpos, qvel), derived quantities computed; where the
    task keeps a gait clock, the time at which the runner's clock shows the env's phase."""
    state = env.unwrapped.backend.get_physics_state()[0].numpy()
    data = mujoco.MjData(model)
    data.time, nq, nv = state[0], model.nq, model.nv
    if "phase" in env.unwrapped._memory:
        data.time = float(env.unwrapped._memory["phase"][0, 0]) / env.unwrapped.task.gait_frequency
    data.qpos[:], data.qvel[:] = state[1 : 1 + nq], state[1 + nq : 1 + nq + nv]
    mujoco.mj_forward(model, data)
    return data


def trained_timestep(env, model):
    """model at the env's own timestep, the training's (the Go1's scene states 0.002 s, the task 0.004 s)."""
    model.opt.timestep = env.unwrapped.task.sim_dt
    return model


VELOCITY_TASKS = [name for name, entry in TASKS.items() if isinstance(entry, Velocity)]  # every robot's


@pytest.fixture(scope="module", params=VELOCITY_TASKS)
def quadruped(request, tmp_path_factory):
    """A velocity task's env (one env) and a random-weight ONNX policy for it. A humanoid falls
    within 2 s under a random policy: episodes run on after a fall (the runner's actions must
    still equal the env's while the robot lies and kicks on the floor)."""
    options = {"episode_length_s": 40.0, "terminate_when_unhealthy": False}
    env = unienv.make(request.param, num_envs=1, seed=3, task_options=options)
    path = random_policy(env, tmp_path_factory.mktemp("policy") / request.param)
    yield env, path
    env.close()


def test_the_runner_observes_what_the_env_observes(quadruped):
    """On a random-action rollout (falls included), the runner's observation of each state is the env's."""
    env, path = quadruped
    model = mujoco.MjModel.from_xml_path(env.unwrapped.task.scene)
    observe = runner.Observer(runner.read_contract(path), model)
    obs, _ = env.reset(seed=11)
    act = make_policy("random", env)
    joints = env.single_action_space.shape[0]
    last = np.zeros(joints)
    for _ in range(60):
        command = np.asarray(env.unwrapped._memory["command"][0])
        expected = observe(mjdata_like(env, model), command, last)
        np.testing.assert_allclose(expected, obs.numpy(), rtol=0, atol=1e-6)
        action = act(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        last = np.zeros(joints) if (terminated | truncated).any() else action.numpy()[0].astype(np.float64)


def test_runner_actions_equal_the_envs_over_1000_steps(quadruped):
    env, path = quadruped
    policy = make_policy(path, env)
    obs, _ = env.reset(seed=3)
    model = trained_timestep(env, mujoco.MjModel.from_xml_path(env.unwrapped.task.scene))
    data, command = mjdata_like(env, model), np.asarray(env.unwrapped._memory["command"][0])
    run = runner.Runner(path, model)
    worst, moved = 0.0, 0.0
    for _ in range(1000):
        action = policy(obs)
        worst = max(worst, float(np.abs(run.step(data, command) - action.numpy()[0]).max()))
        moved = max(moved, float(np.abs(action.numpy()).max()))
        obs, _, terminated, truncated, _ = env.step(action)
        assert not (terminated | truncated).any()  # one episode: the same initial state throughout
    assert worst <= 1e-5 and moved > 0.05  # equal, and the policy does act
    assert np.allclose(
        data.qpos, env.unwrapped.backend.get_physics_state()[0, 1 : 1 + model.nq].numpy(), atol=1e-6
    )


BLOCKER = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch', 'unienv', 'hydra', 'gymnasium'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Blocked())
import runpy
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name='__main__')
"""


def test_the_copied_runner_needs_neither_torch_nor_unienv(quadruped, tmp_path):
    """runner.py copied next to a 'driver' runs the policy with torch, unienv, Hydra and Gymnasium blocked."""
    env, path = quadruped
    shutil.copy(runner.__file__, tmp_path / "runner.py")
    command = [sys.executable, "-c", BLOCKER, str(tmp_path / "runner.py"), "run", path]
    command += ["--model", env.unwrapped.task.scene, "--steps", "50", "--command", "0.5", "0", "0"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran 50 steps (1.00 s)" in done.stdout
    done = subprocess.run(command[:-6] + ["--steps", "1", "--command", "1"], capture_output=True, text=True)
    assert (
        done.returncode != 0
        and "--command: expected 3 values (lin_vel_x, lin_vel_y, ang_vel_yaw)" in done.stderr
    )
