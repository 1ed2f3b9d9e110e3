"""Parity with Gymnasium's MuJoCo v5 environments (mujoco backend, one env).

Each test steps Gymnasium's env and the unienv task side by side for 1000
steps of seeded random actions. After each of Gymnasium's resets its initial
state is copied into unienv (reset noise comes from different RNGs), then both
get the same actions; observations, rewards, terminated and truncated must
agree every step.

Gymnasium reads some derived quantities (body positions, cinert, cvel,
cfrc_ext, qfrc_constraint) where mj_step leaves them, from its last RK4 stage;
unienv reads them at the state it returns. For the tasks that use them the
reference is Gymnasium's env with mj_forward (and mj_rnePostConstraint) run
after its step, which changes none of its trajectory (see the task modules).
"""

import gymnasium
import mujoco
import numpy as np
import pytest
import torch

import unienv

# task -> (Gymnasium id, whether the reference refreshes derived quantities after its step)
CASES = {
    "inverted_pendulum": ("InvertedPendulum-v5", False),
    "inverted_double_pendulum": ("InvertedDoublePendulum-v5", True),
    "reacher": ("Reacher-v5", True),
    "half_cheetah": ("HalfCheetah-v5", False),
    "hopper": ("Hopper-v5", False),
    "walker2d": ("Walker2d-v5", False),
    "humanoid": ("Humanoid-v5", True),
    "ant": ("Ant-v5", True),
}
STEPS = 1000


def reference_env(env_id: str, refresh: bool) -> gymnasium.Env:
    env = gymnasium.make(env_id)
    if refresh:
        u = env.unwrapped
        step = u._step_mujoco_simulation

        def step_then_forward(ctrl, n_frames):
            step(ctrl, n_frames)
            mujoco.mj_forward(u.model, u.data)
            mujoco.mj_rnePostConstraint(u.model, u.data)

        u._step_mujoco_simulation = step_then_forward
    return env


def run_side_by_side(task: str, env_id: str, refresh: bool, steps: int = STEPS, seed: int = 0) -> dict:
    """Max |obs| and |reward| differences over `steps` steps; asserts done flags agree."""
    ref = reference_env(env_id, refresh)
    env = unienv.make(task, num_envs=1, autoreset_mode="disabled", backend_options={"nthread": 1})
    rng = np.random.default_rng(seed)
    ref.action_space.seed(seed)
    worst = {"obs": 0.0, "reward": 0.0, "resets": 0}

    def reset(episode: int) -> None:
        ref_obs, _ = ref.reset(seed=seed + episode)
        env.reset(seed=seed + episode)
        d = ref.unwrapped.data
        env.backend.set_state_tensor(
            torch.tensor([0]), torch.tensor(d.qpos[None]), torch.tensor(d.qvel[None])
        )
        obs = env.observe()  # what the env observes after a reset
        worst["obs"] = max(worst["obs"], float(np.abs(obs[0].numpy() - ref_obs).max()))

    reset(0)
    low, high = ref.action_space.low, ref.action_space.high
    try:
        for _ in range(steps):
            action = rng.uniform(low, high).astype(np.float32)
            ref_obs, ref_reward, ref_term, ref_trunc, _ = ref.step(action)
            obs, reward, term, trunc, _ = env.step(torch.from_numpy(action[None]))
            worst["obs"] = max(worst["obs"], float(np.abs(obs[0].numpy() - ref_obs).max()))
            worst["reward"] = max(worst["reward"], abs(float(reward[0]) - float(ref_reward)))
            assert (bool(term[0]), bool(trunc[0])) == (ref_term, ref_trunc), f"done flags at step {_}"
            if ref_term or ref_trunc:
                worst["resets"] += 1
                reset(worst["resets"])
    finally:
        ref.close()
        env.close()
    return worst


@pytest.mark.parametrize("task", list(CASES))
def test_matches_gymnasium_v5(task):
    env_id, refresh = CASES[task]
    worst = run_side_by_side(task, env_id, refresh)
    print(f"{task}: {worst}")
    assert worst["obs"] < 1e-6, worst
    assert worst["reward"] < 1e-5, worst
