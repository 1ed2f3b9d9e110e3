"""Every task: its single-env form passes Gymnasium's check_env, 64 envs run 1000
steps of random actions without NaN (and on the CPU engine the task reads the same values
from the backend's torch views as from its host reads, the NumPy arrays the env hands it), and a
task fails at construction on a backend that lacks a capability it needs (its options and
Hydra config: test_options.py).
The quadruped stands under PD control; the reach reward peaks at the target.

Every task also runs on every other installed backend (genesis; mjwarp on
Warp's CPU device without a GPU) for 500 steps at 32 envs, or fails at construction with an error naming
what that backend lacks; those runs are marked slow (CI runs them).
"""

import gymnasium
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import unienv
from tests.contract.conftest import AVAILABLE, SUITE_DEVICES
from unienv.backends import Capabilities
from unienv.errors import CapabilityError
from unienv.tasks import TASKS, Velocity, gym_id, require, task_class

HEAVY = {
    "humanoid",
    "ant",
    "inverted_double_pendulum",
    "quadruped",
    "quadruped_rough",
}  # the slowest random runs


@pytest.mark.parametrize("name", list(TASKS))
def test_check_env(name):
    env = gymnasium.make(gym_id(name)).unwrapped
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def random_run(name, backend="mujoco", num_envs=64, steps=1000, seed=0, **task_options):
    device = SUITE_DEVICES[backend]
    env = unienv.make(
        name, backend=backend, num_envs=num_envs, seed=seed, device=device, task_options=task_options
    )
    space = env.single_action_space
    low, high = (torch.as_tensor(x, device=env.device) for x in (space.low, space.high))
    generator = torch.Generator(env.device).manual_seed(seed)
    try:
        obs, _ = env.reset()
        assert torch.isfinite(obs).all()
        for t in range(steps):
            action = low + (high - low) * torch.rand(
                num_envs, len(low), generator=generator, device=env.device
            )
            obs, reward, terminated, truncated, info = env.step(action)
            assert torch.isfinite(obs).all() and torch.isfinite(reward).all(), f"NaN at step {t}"
            diverged = info.get("_diverged", torch.zeros(num_envs, dtype=torch.bool))  # always there on
            assert not diverged.any(), (
                f"diverged at step {t}: {diverged.nonzero().flatten()}"
            )  # device backends
            for term, value in info["reward_terms"].items():
                assert torch.isfinite(value).all(), f"reward term {term} at step {t}"
        if backend == "mujoco":  # at the last step's state: both forms of the reads agree
            assert_same_reading(env.task.read(env.backend.host_reads()), env.task.read(env.backend))
    finally:
        env.close()


def assert_same_reading(host, views, key="s"):
    """Two readings of one state are equal bit for bit."""
    if isinstance(host, dict):
        assert host.keys() == views.keys(), key
        for k in host:
            assert_same_reading(host[k], views[k], f"{key}[{k!r}]")
    elif isinstance(host, tuple):
        for i, (a, b) in enumerate(zip(host, views, strict=True)):
            assert_same_reading(a, b, f"{key}[{i}]")
    else:
        assert torch.equal(torch.as_tensor(host), torch.as_tensor(views)), key


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in TASKS]
)
def test_random_actions_stay_finite(name):
    random_run(name)


OTHER_BACKENDS = [b for b in AVAILABLE if b != "mujoco"]
OTHER_BACKEND_RUN = {"num_envs": 32, "steps": 500}
# what a backend cannot run, and the word its construction error must name
CANNOT = {
    ("genesis", "ant"): "mj_fields",  # cfrc_ext in the observation; the portable variant runs below
    ("genesis", "humanoid"): "mj_fields",
    ("genesis", "inverted_double_pendulum"): "mj_fields",
    ("mjwarp", "humanoid"): "mjSOL_PGS",  # Gymnasium's humanoid.xml uses the PGS solver
    ("genesis", "g1_tracking"): "contact pairs",  # Menagerie's MJX G1 collides by explicit pairs
    ("genesis", "panda_lift"): "gravcomp",  # the Panda's arm is gravity compensated
    ("genesis", "panda_place"): "gravcomp",  # the same Panda
}


def velocity_refusals():
    """A velocity task's: what its robot's spec says an engine refuses, heightfields on terrain
    (Genesis does not parse them)."""
    for name, entry in TASKS.items():
        if isinstance(entry, Velocity):
            refused = dict(task_class(name).robot.refused)
            if entry.rough:
                refused["genesis"] = "|".join(filter(None, ("hfield", refused.get("genesis"))))
            yield from (((backend, name), feature) for backend, feature in refused.items())


CANNOT |= dict(velocity_refusals())


# known bug, open: under random actions on MuJoCo Warp one Go1 of 64 on rough terrain diverges
# (step 263 with seed 0); the env flags it and resets it, and nothing NaN comes out
# (tests/test_divergence.py), but a task should not diverge at all
KNOWN_BUGS = {("mjwarp", "go1_velocity_rough"): "a Go1 diverges on MuJoCo Warp's rough terrain"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", OTHER_BACKENDS)
@pytest.mark.parametrize("name", list(TASKS))
def test_random_actions_stay_finite_on_other_backends(name, backend):
    """500 steps at 32 envs on every other installed backend, or a clear error at construction
    (a quarter of the mujoco run's env steps: on the CPU these engines step the robots 5-10x
    slower than mujoco.batch, and the suite must stay inside its time)."""
    if (backend, name) in KNOWN_BUGS:
        pytest.xfail(KNOWN_BUGS[(backend, name)])
    missing = CANNOT.get((backend, name))
    if missing is None:
        random_run(name, backend=backend, **OTHER_BACKEND_RUN)
        return
    with pytest.raises(CapabilityError, match=missing):
        unienv.make(name, backend=backend, num_envs=2, device=SUITE_DEVICES[backend])
    if name == "ant":
        random_run(name, backend=backend, include_cfrc_ext_in_observation=False, **OTHER_BACKEND_RUN)


class _NoMjFields:
    name = "fake"

    def get_capabilities(self):
        return Capabilities(backend="fake", device="cpu", dtype=torch.float64, deterministic=True)


@pytest.mark.parametrize("name", ["ant", "humanoid", "inverted_double_pendulum"])
def test_missing_capability_fails_at_construction(name):
    task = task_class(name)()
    with pytest.raises(CapabilityError, match="mj_fields"):
        require(task, _NoMjFields())  # what UniEnv checks before task.setup
    if name == "ant":  # the portable variant needs only contact forces
        require(task_class(name)(include_cfrc_ext_in_observation=False), _NoMjFields())


def stand(backend):
    device = SUITE_DEVICES[backend]
    env = unienv.make("quadruped", backend=backend, num_envs=4, seed=0, device=device)
    try:
        env.reset()
        steps = round(5.0 / env.task.dt)
        for _ in range(steps):
            obs, reward, terminated, truncated, info = env.step(torch.zeros(4, 12, device=env.device))
            assert not terminated.any(), "the quadruped fell"
        s = env.task.read(env.backend)
        assert (s["height"] > 0.25).all(), s["height"]
        gravity = s["base"][:, 2]  # in the base frame
        assert (-gravity[:, 2] > 0.99).all(), gravity  # within about 8 degrees of level
        task = env.task  # its arrays are NumPy on the CPU engine, torch elsewhere
        joints = task.xp.asarray(env.backend.get_state_views()["qpos"][:, task.q_idx])
        assert task.xp.abs(joints - task.default_q).max() < 0.25
    finally:
        env.close()


@pytest.mark.parametrize(
    "backend", ["mujoco"] + [pytest.param(b, marks=pytest.mark.slow) for b in OTHER_BACKENDS]
)
def test_quadruped_stands_under_pd(backend):
    stand(backend)


def test_reach_reward_is_maximal_at_target():
    env = unienv.make("reach", num_envs=64, seed=0)
    try:
        env.reset()
        task, backend = env.task, env.backend
        s = task.read(backend)  # in the task's namespace: NumPy on the CPU engine
        ee = torch.as_tensor(s["ee"])
        assert torch.allclose(ee, backend.get_mj_field("site_xpos")[:, backend.find("site", "ee")[0]])
        qvel = backend.get_state_views()["qvel"]
        assert (qvel == 0).all()  # reset at rest
        offsets = (
            torch.randn(64, 3, dtype=torch.float64) * torch.linspace(0, 0.5, 64, dtype=torch.float64)[:, None]
        )
        memory = {"target": task.xp.asarray(ee + offsets)}
        reward, _ = task.reward(s, s, task.xp.zeros((64, 7), task.dtype), memory)
        reward = torch.as_tensor(reward)
        assert reward[0] == pytest.approx(1.0)
        assert (reward[1:] < reward[0]).all()
        distance = offsets.norm(dim=1)
        order = torch.argsort(distance)
        assert (reward[order].diff() <= 1e-12).all()  # decreasing with distance
    finally:
        env.close()


def test_humanoid_forward_reward_weighs_randomized_masses():
    """Heavier feet move the whole-body COM: the forward term follows each env's own masses."""
    heavy_feet = {
        "param": "body_mass",
        "objects": ["left_foot", "right_foot"],
        "range": 4.0,
        "operation": "scale",
    }
    env = unienv.make("humanoid", num_envs=2, seed=0, dr={"feet": heavy_feet})
    try:
        env.reset()
        b = env.backend
        mass = b.get_dr_param("body_mass")[:, :, None]
        assert (
            mass[0, b.find("body", "left_foot")[0], 0] == 4 * b.info.body_mass[b.find("body", "left_foot")[0]]
        )

        def com_x():
            return ((mass * b.get_mj_field("xipos")).sum(1) / mass.sum(1))[:, 0]

        before = com_x()
        _, _, _, _, info = env.step(torch.full((2, 17), 0.3))
        expected = env.task.forward_reward_weight * (com_x() - before) / env.task.dt
        torch.testing.assert_close(info["reward_terms"]["forward"], expected, rtol=1e-9, atol=1e-12)
        compiled = torch.as_tensor(b.info.body_mass)[None, :, None]
        with_compiled = ((compiled * b.get_mj_field("xipos")).sum(1) / compiled.sum(1))[:, 0]
        assert (with_compiled - com_x()).abs().min() > 1e-3  # the masses matter here
    finally:
        env.close()
