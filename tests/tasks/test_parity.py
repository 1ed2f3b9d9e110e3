"""Parity with Gymnasium's MuJoCo v5 environments (mujoco backend, one env).

Each test steps Gymnasium's env and the unienv task side by side for 1000
steps of seeded random actions. After each of Gymnasium's resets its initial
state is copied into unienv (reset noise comes from different RNGs), then both
get the same actions; observations, rewards, terminated and truncated must
agree every step.

Gymnasium reads some derived quantities (body positions, cinert, cvel,
qfrc_actuator, qfrc_constraint, site positions) where mj_step leaves them, from
its last RK4 stage, and cfrc_ext after mj_rnePostConstraint; the tasks read
them there too (`Task.substep_reads`). So every observation and done flag is
bit-identical to the unmodified reference, and every reward too, to the last ulp:
Gymnasium computes some reward terms on NumPy scalars, whose `** 2` is libm's
pow, where unienv's arrays square (`(y - 2) ** 2` can differ by one ulp).
"""

import gymnasium
import numpy as np
import pytest
import torch

import unienv

CASES = {
    "inverted_pendulum": "InvertedPendulum-v5",
    "inverted_double_pendulum": "InvertedDoublePendulum-v5",
    "reacher": "Reacher-v5",
    "half_cheetah": "HalfCheetah-v5",
    "hopper": "Hopper-v5",
    "walker2d": "Walker2d-v5",
    "humanoid": "Humanoid-v5",
    "ant": "Ant-v5",
}
STEPS = 1000


def run_side_by_side(task: str, env_id: str, steps: int = STEPS, seed: int = 0) -> dict:
    """Max |obs| difference and reward difference in ulps of the reference's reward over
    `steps` steps; asserts done flags agree."""
    ref = gymnasium.make(env_id)
    env = unienv.make(task, num_envs=1, autoreset_mode="disabled", backend_options={"nthread": 1})
    rng = np.random.default_rng(seed)
    ref.action_space.seed(seed)
    worst = {"obs": 0.0, "reward_ulps": 0.0, "resets": 0}

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
            ulps = abs(float(reward[0]) - float(ref_reward)) / np.spacing(abs(float(ref_reward)))
            worst["reward_ulps"] = max(worst["reward_ulps"], ulps)
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
    worst = run_side_by_side(task, CASES[task])
    print(f"{task}: {worst}")
    assert worst["obs"] == 0.0, worst
    assert worst["reward_ulps"] <= 1.0, worst
