"""The benchmark's raw and backend loops simulate the env's own motions: replaying its recorded
transitions (`unienv.bench.Replay`) through a fresh backend, or through the raw MuJoCo loop,
reproduces the env's states."""

import importlib.util
import os

import pytest
import torch

import unienv
from unienv import backends
from unienv.bench import Replay
from unienv.errors import ArgumentError


@pytest.mark.parametrize("task", ["inverted_pendulum", "quadruped"])
def test_replaying_the_recorded_transitions_reproduces_the_envs_states(task):
    env = unienv.make(task, num_envs=6, seed=5)
    env.reset()
    actions = torch.zeros(6, *env.single_action_space.shape).uniform_(
        -1, 1, generator=torch.Generator().manual_seed(2)
    )
    replay = Replay(env, actions, 100)
    restarts = sum(len(w[0]) for w in replay.writes[1:] if w is not None)
    assert restarts > 0  # envs ended and restarted among the recorded steps
    sim = backends.create("mujoco", env.backend.scene, 6, env.task.sim_dt)
    writes, controls = replay.on(sim.device, torch.float64)
    for write, ctrl in zip(writes, controls, strict=True):
        if write is not None:
            sim.set_state_tensor(*write)
        sim.step_tensor(ctrl, env.task.decimation)
    ongoing = env.episode_length > 0  # the envs that did not restart after the last step
    raw = backends.raw_loop("mujoco")(
        sim, env.task.decimation, replay
    )  # its own batch, from the scene's MJCF
    for _ in replay.writes:
        raw_state = raw()
    for name, raw_view in zip(("qpos", "qvel"), raw_state, strict=True):
        replayed, own = sim.get_state_views()[name][ongoing], env.backend.get_state_views()[name][ongoing]
        assert torch.equal(replayed, own), name
        # the raw loop resets the envs it restarts as the backend does (solver warm start
        # included): one that wrote only qpos and qvel would simulate other motions
        assert torch.equal(torch.from_numpy(raw_view)[ongoing], own), name
    env.close()
    sim.close()


def test_replay_needs_same_step_autoreset():
    env = unienv.make("cartpole", num_envs=2, autoreset_mode="next_step")
    env.reset()
    with pytest.raises(ArgumentError, match="same-step autoreset"):
        Replay(env, torch.zeros(2, 1), 4)
    env.close()


def test_peers_bench_times_unienv_beside_gymnasium_at_one_env_and_at_n(tmp_path):
    """Its rows, and the performance page's tables rendered from its JSON."""
    import sys

    from unienv import bench

    path = str(tmp_path / "peers.json")
    argv = ["--peers", "--task", "reacher", "--num-envs", "1", "3", "--seconds", "0.01", "--rounds", "2"]
    rows = bench.main([*argv, "--json", path])
    one, many = rows
    assert (one["task"], one["num_envs"], many["num_envs"]) == ("reacher", 1, 3)
    for key in ("single_time_ratio", "vector_time_ratio"):
        assert 0 < one[key]["min"] <= one[key]["median"]
    assert one["gymnasium_us"] > 0 and many["unienv_sps"] > 0
    assert 0 < many["unienv_over_sync"]["min"] <= many["unienv_over_sync"]["median"]
    assert many["next_sps"] > 0 and many["raw_next_sps"] > 0  # next-step autoreset and its raw loop
    assert all(0 <= f <= 1 for f in many["ended"].values()) and {"unienv", "next"} <= many["ended"].keys()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts"))
    import perf_table

    text = perf_table.render_peers([path])
    assert "| reacher | 3 |" in text and "unienv / SyncVectorEnv" in text and "single / v5" in text
    assert "next-step / EnvPool" in text and "ended %" in text


@pytest.mark.skipif(
    importlib.util.find_spec("dm_control") is None, reason="dm-control is not installed (the dmc extra)"
)
def test_peers_bench_times_a_dmc_task_beside_dm_control(tmp_path):
    """A DeepMind Control row: unienv's single env and dm_control's suite.load, at one env."""
    from unienv import bench

    (row,) = bench.main(["--peers", "--task", "dmc_cheetah_run", "--seconds", "0.01", "--rounds", "2"])
    assert row["dmc"] and row["dm_control_us"] > 0 and row["single_us"] > 0
    assert 0 < row["single_time_ratio"]["min"] <= row["single_time_ratio"]["median"]


def test_peers_bench_refuses_another_backend():
    from unienv import bench

    with pytest.raises(SystemExit):
        bench.main(["--peers", "--backend", "mjwarp"])
