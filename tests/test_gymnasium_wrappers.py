"""unienv under Gymnasium's own vector wrappers, its registered specs and its model loading."""

import os
import subprocess
import sys

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest
from gymnasium.wrappers import vector as gv

import unienv

MODES = ("same_step", "next_step", "disabled")


def _own_stats(info: dict, mode: str) -> tuple[dict, np.ndarray] | None:
    """unienv's episode stats and their mask in a step's info, if an episode ended."""
    where = info.get("final_info", {}) if mode == "same_step" else info
    return (where["episode_stats"], where["_episode_stats"]) if "episode_stats" in where else None


def _compare_episode_stats(env, mode: str, steps: int, rng: np.random.Generator) -> int:
    """Step env with random actions twice the action bounds; at each step check that
    Gymnasium's RecordEpisodeStatistics and unienv report the same episodes; returns how many."""
    high = env.unwrapped.single_action_space.high  # ClipAction widens its own space to R^n
    ended = 0
    env.reset(seed=3)
    for _ in range(steps):
        actions = rng.uniform(-2 * high, 2 * high, (env.num_envs, *high.shape)).astype(np.float32)
        _, _, terminated, truncated, info = env.step(actions)
        own = _own_stats(info, mode)
        assert ("episode" in info) == (own is not None)
        if own is None:
            continue
        stats, done = own
        np.testing.assert_array_equal(info["_episode"], done)
        np.testing.assert_array_equal(done, terminated | truncated)
        np.testing.assert_array_equal(info["episode"]["l"][done], stats["l"][done])
        np.testing.assert_allclose(info["episode"]["r"][done], stats["r"][done], rtol=1e-9, atol=1e-9)
        ended += int(done.sum())
        if mode == "disabled":
            env.reset(options={"reset_mask": done})
    return ended


def test_cleanrl_wrapper_stack_in_next_step_records_unienv_returns():
    """CleanRL's stack (RecordEpisodeStatistics, ClipAction, NormalizeObservation, clipped
    obs, NormalizeReward, clipped reward) on the NumPy form, NEXT_STEP autoreset."""
    base = unienv.make("hopper", num_envs=4, seed=0, autoreset_mode="next_step", max_episode_steps=40)
    stats = gv.RecordEpisodeStatistics(unienv.numpy_env(base))
    env = gv.ClipAction(stats)
    env = gv.NormalizeObservation(env)
    env = gv.TransformObservation(env, lambda obs: np.clip(obs, -10, 10))
    env = gv.NormalizeReward(env, gamma=0.99)
    env = gv.TransformReward(env, lambda reward: np.clip(reward, -10, 10))
    ended = _compare_episode_stats(env, "next_step", 120, np.random.default_rng(0))
    assert ended >= 8  # falls (terminated) and time limits (truncated) both end episodes
    obs, *_ = env.step(np.zeros((4, 3), np.float32))
    assert np.abs(obs).max() <= 10 and abs(obs.mean()) < 1.0  # normalised, then clipped
    assert len(stats.return_queue) == ended
    env.close()


@pytest.mark.parametrize("mode", MODES)
def test_record_episode_statistics_matches_unienv_in_every_mode(mode):
    base = unienv.make("inverted_pendulum", num_envs=3, seed=1, autoreset_mode=mode, max_episode_steps=25)
    env = gv.NormalizeReward(gv.ClipAction(gv.RecordEpisodeStatistics(unienv.numpy_env(base))))
    assert _compare_episode_stats(env, mode, 80, np.random.default_rng(1)) >= 3
    env.close()


@pytest.mark.parametrize("mode", MODES)
def test_observation_wrappers_take_the_modes_gymnasium_allows(mode):
    """NormalizeObservation needs NEXT_STEP, TransformObservation NEXT_STEP or DISABLED
    (Gymnasium's rule: a terminal observation in info would escape the transform)."""
    env = unienv.numpy_env(unienv.make("cartpole", num_envs=2, seed=0, autoreset_mode=mode))
    for wrap, allowed in (
        (gv.NormalizeObservation, ("next_step",)),
        (lambda e: gv.TransformObservation(e, lambda x: 2 * x), ("next_step", "disabled")),
    ):
        if mode not in allowed:
            with pytest.raises(ValueError, match="autoreset_mode"):
                wrap(env)
            continue
        wrapped = wrap(env)
        obs, _ = wrapped.reset(seed=0)
        obs, *_ = wrapped.step(np.zeros((2, 1), np.float32))
        assert obs.shape == (2, 5) and np.isfinite(obs).all()


@pytest.mark.parametrize("mode", ("same_step", "next_step"))
def test_vector_record_video_with_default_options(tmp_path, mode):
    """Default options: every env's frame, tiled, episode 0 (env 0's first episode) saved."""
    base = unienv.make(
        "cartpole",
        num_envs=3,
        seed=0,
        autoreset_mode=mode,
        max_episode_steps=8,
        render_mode="rgb_array",
        render_size=(64, 96),
    )
    env = gv.RecordVideo(gv.RecordEpisodeStatistics(unienv.numpy_env(base)), str(tmp_path))
    env.reset(seed=0)
    compared = 0
    for _ in range(10):
        _, _, _, _, info = env.step(np.zeros((3, 1), np.float32))
        if "episode" in info:
            own, _ = _own_stats(info, mode)
            np.testing.assert_allclose(info["episode"]["r"], own["r"])
            compared += 1
    env.close()
    assert compared == 1  # all three envs' time limits end their episodes in step 8
    frames = np.stack(list(imageio.get_reader(str(tmp_path / "rl-video-episode-0.mp4")).iter_data()))
    # the reset frame and one per step; same-step autoreset has no frame of the terminal state
    assert frames.shape == (9 if mode == "next_step" else 8, 64, 3 * 96, 3)
    assert frames.std() > 5  # a scene, not a blank tile


def test_torch_form_under_the_gymnasium_wrappers_that_take_tensors():
    """ClipAction and TransformObservation work on the torch form as is (Gymnasium's statistics
    and normalisers are NumPy-only: unienv.wrappers.normalize does their work on tensors)."""
    import torch

    def make():
        return unienv.make("cartpole", num_envs=2, seed=0, autoreset_mode="next_step")

    env = gv.TransformObservation(gv.ClipAction(make()), lambda obs: 2 * obs)
    reference = make()
    env.reset(seed=0), reference.reset(seed=0)
    for _ in range(5):
        obs, *_ = env.step(torch.full((2, 1), 5.0))  # clipped to the bound, 1
        expected, *_ = reference.step(torch.ones(2, 1))
        assert isinstance(obs, torch.Tensor) and torch.equal(obs, 2 * expected)


PARITY = (
    "Ant",
    "HalfCheetah",
    "Hopper",
    "Walker2d",
    "Humanoid",
    "InvertedPendulum",
    "InvertedDoublePendulum",
    "Reacher",
)


@pytest.mark.parametrize("name", PARITY)
def test_spec_fields_match_gymnasium_v5(name):
    ours, theirs = gym.spec(f"unienv/{name}-v0"), gym.spec(f"{name}-v5")
    assert (ours.max_episode_steps, ours.reward_threshold) == (
        theirs.max_episode_steps,
        theirs.reward_threshold,
    )


def test_every_spec_gives_the_built_tasks_episode_length_and_threshold():
    """The registry's fields come from the task classes (`Task.default_max_episode_steps`, no scene
    built at import): they equal those of each task built with its default options."""
    from unienv.tasks import DMC_TASKS, TASKS, gym_id, task_class

    for name in TASKS:
        task, spec = task_class(name)(), gym.spec(gym_id(name))
        assert (spec.max_episode_steps, spec.reward_threshold) == (
            task.max_episode_steps,
            task.reward_threshold,
        )
        if name in DMC_TASKS:  # from pixels, at DrQ-v2's action repeat of 2
            pixels = gym.spec(gym_id(name).removesuffix("-v0") + "-pixels-v0")
            assert pixels.max_episode_steps == -(-task.max_episode_steps // 2)


def test_make_and_make_vec_honour_the_spec_and_the_task_options():
    env = gym.make("unienv/Reacher-v0")
    assert env.spec.max_episode_steps == 50 and env.spec.reward_threshold == -3.75
    env.reset(seed=0)
    for step in range(1, 51):
        *_, terminated, truncated, _ = env.step(env.action_space.sample())
        assert truncated == (step == 50) and not terminated
    vec = gym.make_vec("unienv/Reacher-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert vec.unwrapped.max_episode_steps == 50
    shorter = gym.make_vec(
        "unienv/Reacher-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        task_options={"episode_length_s": 0.2},
    )
    assert shorter.unwrapped.max_episode_steps == 10  # the task's option, not the spec's 50


def test_gymnasium_models_load_without_warning_or_log_file(tmp_path):
    """half_cheetah.xml's <compiler settotalmass> is deprecated in MuJoCo 4: unienv applies it after
    compiling, so no warning is printed and no MUJOCO_LOG.TXT lands in the working directory, on
    the state path, in videos and through a camera (pixels)."""
    code = (
        "import unienv\n"
        "from unienv.dynamics.model import load_rigid_body_mjmodel\n"
        "env = unienv.make('half_cheetah', render_mode='rgb_array')\n"
        "env.reset(seed=0); env.render()\n"
        "print(round(float(env.backend.info.body_mass.sum()), 9))\n"
        "load_rigid_body_mjmodel(env.task.scene)\n"
        "pixels = unienv.make('half_cheetah', obs='pixels', num_envs=1)\n"  # the camera's own model
        "pixels.reset(seed=0); pixels.close()\n"
    )
    done = _python_with_warnings_as_errors(code, tmp_path)
    assert done.stdout.strip() == "14.0"  # the total mass the file asks for
    assert "deprecated" not in done.stderr and os.listdir(tmp_path) == []


def test_genesis_parses_gymnasium_models_without_warning_or_log_file(tmp_path):
    """Genesis compiles half_cheetah.xml with MuJoCo itself; unienv routes MuJoCo's warnings to
    Python's meanwhile (settotalmass's deprecation dropped), so none is printed and no log written."""
    pytest.importorskip("genesis")
    code = (
        "import unienv\n"
        "env = unienv.make('half_cheetah', backend='genesis', device='cpu')\n"
        "env.reset(seed=0); env.close()\n"
    )
    done = _python_with_warnings_as_errors(code, tmp_path)
    assert "deprecated" not in done.stdout + done.stderr and os.listdir(tmp_path) == []


def _python_with_warnings_as_errors(code: str, cwd) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python (-W error) in cwd; asserts it succeeded."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done
