"""The quadruped's evaluation metric runs on the CPU engine, whose task constants are NumPy
arrays while the env's observations are torch tensors."""

import torch

import unienv
from unienv.training.run import TrackingError


def test_tracking_error_on_the_cpu_engine():
    env = unienv.make("quadruped", backend="mujoco", num_envs=2, seed=0)
    try:
        obs, _ = env.reset(seed=0)
        tracking = TrackingError(env.task)
        for _ in range(3):
            obs, _, _, _, info = env.step(torch.zeros(env.action_space.shape))
            tracking(obs, info)
        result = tracking.result()
    finally:
        env.close()
    assert set(result) == {"lin_vel_error", "yaw_rate_error"}
    assert all(v is not None and v >= 0.0 for v in result.values())
    assert result["lin_vel_error"] > 0.0  # the commands are drawn, the robot stands still
