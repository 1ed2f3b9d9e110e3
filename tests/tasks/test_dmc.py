"""The DeepMind Control Suite tasks (tasks/dmc_*.py): parity with dm_control, spaces, resets.

Parity: each task steps beside dm_control's own `suite.load(domain, task)` for 1000 steps
(a whole episode) of seeded uniform actions, on the mujoco backend, one env. After the
reset, dm_control's initial state (and its target, where the task has one) is copied into
unienv, whose reset draws from its own streams; then both get the same actions, and every
observation (dm_control's dict flattened in its key order) and reward must agree to 1e-9.

dm_control 1.0.50's engine wrapper does not build a physics on MuJoCo 4: its table of
struct fields (`dm_control.mujoco.index.sizes.array_sizes`) names 7 MjModel and 2 MjData
flex fields that MuJoCo 4 removed. `dm_control_suite()` below is the test-only shim: it
drops those entries before `suite.load`. unienv's tasks never use dm_control's engine.

The reference differs from a plain `suite.load` in one way, not in its trajectory: after a
reset, dm_control's solver warm start is cleared (unienv's state write starts the envs it
writes from a zero warm start; cheetah's reset steps the physics, which leaves one). Touch
sensors (hopper, finger) are compared as dm_control's legacy step leaves them, from its last
substep, as the tasks read them (`substep_reads`).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import unienv
from unienv.backends import Capabilities
from unienv.errors import ArgumentError, CapabilityError
from unienv.tasks import DMC_TASKS, gym_id, require, task_class
from unienv.tasks.dmc.common import tolerance
from unienv.utils.arrays import NUMPY, torch_namespace

pytest.importorskip("dm_control", reason="dm-control is not installed (pip install 'unienv[dmc]')")
DMC = sorted(DMC_TASKS)
DOMAINS = ("acrobot", "ball_in_cup", "cartpole", "cheetah", "finger", "fish", "hopper", "humanoid")
DOMAINS += ("pendulum", "point_mass", "reacher", "swimmer", "walker")
STEPS = 1000
TOLERANCE = 1e-9
# bit-identical to dm_control, touch sensors included (read where its step leaves them)
EXACT = {"dmc_hopper_stand", "dmc_hopper_hop", "dmc_finger_spin"}
# MuJoCo 3 fields that dm_control 1.0.50's index still names and MuJoCo 4 does not have
_GONE = {
    "mjmodel": (
        "flex_vertedge",
        "flex_vertedgeadr",
        "flex_vertedgenum",
        "flex_vertmetric",
        "flexvert_J_colind",
        "flexvert_J_rowadr",
        "flexvert_J_rownnz",
    ),
    "mjdata": ("flexvert_J", "flexvert_length"),
}


def dm_control_suite():
    """dm_control.suite, loadable on MuJoCo 4 (the test-only shim of the module docstring)."""
    pytest.importorskip("dm_control", reason="dm-control is not installed (pip install 'unienv[dmc]')")
    from dm_control.mujoco.index import sizes

    for struct, names in _GONE.items():
        for name in names:
            sizes.array_sizes[struct].pop(name, None)
    from dm_control import suite

    return suite


def reference_target(name: str, physics) -> np.ndarray | None:
    """The per-episode target dm_control put in its model, as unienv's memory holds it."""
    if name.startswith("dmc_reacher"):
        return physics.named.model.geom_pos["target", :2].copy()
    if name.startswith(("dmc_swimmer", "dmc_fish")):
        return physics.named.model.geom_pos["target"].copy()
    if name.startswith("dmc_finger_turn"):
        return physics.named.model.site_pos["target", [0, 2]].copy()
    return None


def run_side_by_side(name: str, steps: int = STEPS, seed: int = 0) -> dict:
    """Max |obs| and |reward| differences over `steps` steps after one reset."""
    suite = dm_control_suite()
    domain = next(d for d in DOMAINS if name.startswith(f"dmc_{d}_"))
    task = name[len(domain) + 5 :]
    ref = suite.load(domain, task, task_kwargs={"random": seed})
    env = unienv.make(name, num_envs=1, autoreset_mode="disabled", backend_options={"nthread": 1})
    physics = ref.physics
    worst = {"obs": 0.0, "reward": 0.0}

    def flat(observation) -> np.ndarray:
        return np.concatenate([np.atleast_1d(v).ravel() for v in observation.values()])

    def compare(obs, ref_obs, reward=None, ref_reward=None) -> None:
        worst["obs"] = max(worst["obs"], float(np.abs(obs[0].numpy() - flat(ref_obs)).max()))
        if reward is not None:
            worst["reward"] = max(worst["reward"], abs(float(reward[0]) - float(ref_reward)))

    try:
        ts = ref.reset()
        assert env.task.sim_dt == physics.model.opt.timestep, "physics timestep"
        assert env.task.decimation == ref._n_sub_steps, "substeps per env step"
        assert env.task.max_episode_steps == STEPS
        physics.data.qacc_warmstart[:] = 0.0
        env.reset(seed=seed)
        assert list(env.task.observation_blocks()) == list(ts.observation), "block names and order"
        widths = [np.atleast_1d(v).size for v in ts.observation.values()]
        assert list(env.task.observation_blocks().values()) == widths, "block widths"
        target = reference_target(name, physics)
        if target is not None:
            env._memory["target"][0] = torch.as_tensor(target)
        qpos, qvel = torch.tensor(physics.data.qpos[None]), torch.tensor(physics.data.qvel[None])
        env.backend.set_state_tensor(torch.tensor([0]), qpos, qvel)
        compare(env.observe(), ts.observation)
        rng = np.random.default_rng(seed)
        spec = ref.action_spec()
        for _ in range(steps):
            action = rng.uniform(spec.minimum, spec.maximum).astype(np.float32)
            ts = ref.step(action.astype(np.float64))
            obs, reward, term, trunc, _ = env.step(torch.from_numpy(action[None]))
            compare(obs, ts.observation, reward, ts.reward)
            assert not bool(term[0])
            assert bool(trunc[0]) == ts.last(), f"episode end at step {_}"
    finally:
        ref.close()
        env.close()
    return worst


@pytest.mark.parametrize("name", DMC)
def test_matches_dm_control(name):
    worst = run_side_by_side(name)
    print(f"{name}: {worst}")
    tolerance = 0.0 if name in EXACT else TOLERANCE
    assert worst["obs"] <= tolerance, worst
    assert worst["reward"] <= tolerance, worst


SHAPING = [
    ((0.0, 0.0), 0.0, "gaussian", 0.1),
    ((-0.25, 0.25), 0.0, "gaussian", 0.1),
    ((1.2, float("inf")), 0.6, "gaussian", 0.1),
    ((10.0, float("inf")), 10.0, "linear", 0.0),
    ((0.0, 0.0), 1.0, "quadratic", 0.0),
    ((0.9, float("inf")), 1.9, "linear", 0.0),
    ((0.0, 0.5), 2.0, "hyperbolic", 0.3),
    ((0.0, 0.5), 2.0, "long_tail", 0.3),
    ((0.0, 0.5), 2.0, "reciprocal", 0.3),
    ((0.0, 0.5), 2.0, "cosine", 0.3),
    ((0.0, 0.5), 2.0, "tanh_squared", 0.3),
]


@pytest.mark.parametrize("bounds, margin, sigmoid, value_at_margin", SHAPING)
def test_tolerance_matches_dm_control(bounds, margin, sigmoid, value_at_margin):
    """unienv's tolerance, in NumPy and torch, against dm_control.utils.rewards.tolerance."""
    pytest.importorskip("dm_control", reason="dm-control is not installed (pip install 'unienv[dmc]')")
    from dm_control.utils import rewards

    x = np.linspace(-25.0, 25.0, 2001)
    expected = rewards.tolerance(x, bounds, margin, sigmoid, value_at_margin)
    kwargs = {"bounds": bounds, "margin": margin, "sigmoid": sigmoid, "value_at_margin": value_at_margin}
    assert np.abs(tolerance(NUMPY, x, **kwargs) - expected).max() < 1e-15
    in_torch = tolerance(torch_namespace(torch.device("cpu")), torch.from_numpy(x), **kwargs)
    assert np.abs(in_torch.numpy() - expected).max() < 1e-15
    assert ((expected >= 0) & (expected <= 1)).all() and expected.max() == 1.0


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"bounds": (1.0, 0.0)}, "bounds"),
        ({"margin": -1.0}, "margin"),
        ({"sigmoid": "gauss"}, "sigmoid"),
        ({"margin": 1.0, "value_at_margin": 0.0}, "value_at_margin"),
    ],
)
def test_tolerance_refuses_bad_shaping(kwargs, word):
    with pytest.raises(ValueError, match=word):
        tolerance(NUMPY, np.zeros(3), **kwargs)


@pytest.mark.parametrize("name", DMC)
def test_resets_follow_dm_control_rules(name):
    """Reset states by dm_control's rules, from unienv's per-env streams: inside the joint
    ranges, at rest where dm_control starts at rest, the same for the same seed, different
    across envs; the episode lasts dm_control's 1000 steps."""
    dm_control_suite()
    envs = [unienv.make(name, num_envs=8, seed=3) for _ in range(2)]
    try:
        (a, _), (b, _) = (env.reset(seed=3) for env in envs)
        assert torch.equal(a, b), "same seed, same initial observations"
        assert not torch.equal(a[0], a[1]), "envs draw from their own streams"
        backend, task = envs[0].backend, envs[0].task
        qpos = backend.get_state_views()["qpos"].numpy()
        info = backend.info
        for j, limited in enumerate(info.joint_limited):
            if limited and info.joint_type[j] in (2, 3):
                column = qpos[:, info.joint_qpos_adr[j]]
                low, high = info.joint_range[j]
                assert ((column >= low) & (column <= high)).all(), backend.names("joint")[j]
        if not name.startswith("dmc_cartpole"):
            assert not backend.get_state_views()["qvel"].numpy().any()
        assert task.max_episode_steps == STEPS
        assert sum(task.observation_blocks().values()) == a.shape[1] == task.single_observation_space.shape[0]
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), "10"])
def test_bad_episode_length_is_refused(bad):
    with pytest.raises(ArgumentError, match="episode_length_s"):
        task_class("dmc_cheetah_run")(episode_length_s=bad)
    assert task_class("dmc_cheetah_run")(episode_length_s=2.5).max_episode_steps == 250


def test_dmc_tasks_are_listed_and_registered():
    """`python -m unienv list` shows the suite, under its DMC-<Domain><Task>-v0 ids."""
    import gymnasium

    from unienv.__main__ import list_tasks

    out = io.StringIO()
    list_tasks(out)
    for name in DMC:
        assert name in out.getvalue()
        assert gym_id(name) in gymnasium.registry
    assert gym_id("dmc_ball_in_cup_catch") == "unienv/DMC-BallInCupCatch-v0"


class _NoMjFields:
    def get_capabilities(self):
        return Capabilities(backend="genesis", device="cpu", dtype=torch.float32, deterministic=True)


@pytest.mark.parametrize("name", DMC)
def test_backends_without_mj_fields_refuse_the_domains_that_need_them(name):
    """hopper (body COM heights) and acrobot (site positions) read MuJoCo's own fields:
    a backend without `mj_fields` (genesis) refuses them at construction, naming it; every
    other domain reads only state, body poses and sensors."""
    task = task_class(name)()
    if name.startswith(("dmc_hopper", "dmc_acrobot")):
        with pytest.raises(CapabilityError, match="mj_fields"):
            require(task, _NoMjFields())
    else:
        require(task, _NoMjFields())


# what genesis refuses at construction, and a word of its reason (see docs/dmc.md for all)
GENESIS_REFUSES = {
    "dmc_point_mass_easy": (ArgumentError, "no joint transmission"),  # tendon motors
    "dmc_finger_turn_easy": (CapabilityError, "touch"),  # touch sensors
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GENESIS_REFUSES))
def test_genesis_refuses_at_construction(name):
    """A domain that genesis cannot simulate as MuJoCo does fails at construction, saying why."""
    pytest.importorskip("genesis", reason="genesis is not installed (pip install 'unienv[genesis]')")
    dm_control_suite()
    error, word = GENESIS_REFUSES[name]
    with pytest.raises(error, match=word):
        unienv.make(name, backend="genesis", num_envs=1, device="cpu")


@pytest.mark.parametrize(
    "name",
    ["dmc_reacher_easy", "dmc_hopper_hop", "dmc_finger_turn_easy", "dmc_fish_swim", "dmc_swimmer_swimmer6"],
)
def test_step_on_mjwarp_makes_no_host_sync(name):
    """On a device backend the dmc tasks compute in torch without reading a value back to the
    host: targets in memory, sensors, MuJoCo fields, resets (MuJoCo Warp on its CPU device,
    where the test counts the conversions that would stall a GPU; tests/test_hot_path.py)."""
    from tests.contract.conftest import MJWARP_DEVICE
    from tests.test_hot_path import device_env, steps_without_syncs

    if not MJWARP_DEVICE:
        pytest.skip("needs mujoco_warp (the mjwarp extra)")
    env = device_env("mjwarp", name, dr=False)
    try:
        counts = steps_without_syncs(env)
        assert not counts, f"host conversions in env.step: {counts.most_common()}"
    finally:
        env.close()
