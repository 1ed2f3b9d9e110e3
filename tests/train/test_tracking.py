"""train.py's evaluation of a velocity task (unienv.training.gait.GaitRecorder) runs on the CPU
engine, whose task arrays are NumPy while the env's observations are torch tensors, and reports
every figure it promises."""

import torch

import unienv
from unienv.training.gait import GaitRecorder, gait_text
from unienv.training.rollout import rollout


def test_the_gait_recorder_on_the_cpu_engine():
    env = unienv.make("quadruped", backend="mujoco", num_envs=2, seed=0)
    try:
        recorder = GaitRecorder.of(env)
        rollout(env, lambda obs: torch.zeros(env.action_space.shape), 30, on_step=recorder, progress=False)
        summary = recorder.summary()
    finally:
        env.close()
    assert {"lin_vel_error", "yaw_rate_error", "falls", "air_time", "duty_factor", "phase"} <= set(summary)
    assert summary["lin_vel_error"] > 0.0  # the commands are drawn, the robot stands still
    assert all(d > 0.9 for d in summary["duty_factor"].values())  # a zero action stands on four feet
    assert summary["falls"] == 0 and "tracking error" in gait_text(summary)


def test_the_gait_recorder_counts_each_fall_once():
    """The G1's zero action cannot stand under mjlab's gains: each env falls within 3 s, and the
    recorder's falls are the rollout's terminated episodes."""
    env = unienv.make("g1_velocity", backend="mujoco", num_envs=2, seed=0)
    try:
        recorder = GaitRecorder.of(env)
        zero = lambda obs: torch.zeros(env.action_space.shape)  # noqa: E731
        stats = rollout(env, zero, 150, on_step=recorder, progress=False)
    finally:
        env.close()
    assert recorder.summary()["falls"] == sum(stats.terminated) >= 2


def test_a_task_without_gait_has_no_recorder():
    env = unienv.make("cartpole", num_envs=1)
    try:
        assert GaitRecorder.of(env) is None
    finally:
        env.close()
