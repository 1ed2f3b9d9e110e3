"""Bad input on all three backends: every refusal is a clear UnienvError and changes nothing.

Each case is called on an env with DR (reset terms, an interval push, observation noise and
action latency) in the middle of an episode; the full state (physics, the env's and every DR
term's random streams, DR parameters, timers, latency buffer and noise, episode counters, the
task's reading and memory) is snapshotted before and compared bit for bit after the refusal.
"""

import numpy as np
import pytest
import torch

import unienv
from tests.contract.conftest import CPU_BACKENDS
from unienv.errors import UnienvError
from unienv.wrappers.sb3 import Sb3VecEnv

BACKENDS = CPU_BACKENDS
N = 2  # hopper has 3 actions: a transposed (3, N) array is a different shape
DR = {
    "mass": {"param": "body_mass", "range": [0.9, 1.1], "operation": "scale"},
    "push": {"param": "push", "body": "torso", "axes": [0], "range": [-0.5, 0.5], "interval": [2, 4]},
    "noise": {"param": "obs_noise", "distribution": "gaussian", "std": 0.01, "bias": 0.01},
    "latency": {"param": "action_latency", "range": [0, 2]},
}


@pytest.fixture(scope="module", params=BACKENDS)
def env(request):
    """hopper with DR, three steps into its episodes (one env per backend per session)."""
    env = unienv.make("hopper", backend=request.param, num_envs=N, seed=3, dr=DR, device="cpu")
    env.reset()
    for _ in range(3):
        env.step(torch.full((N, 3), 0.3))
    yield env
    env.close()


def _tensors(obj, out: dict, prefix: str, seen: set) -> None:
    """Every array reachable from obj through unienv's own objects, dicts and lists, copied as a
    tensor: torch tensors, and NumPy arrays (the env's own arrays are NumPy on the CPU engine when
    its task computes in NumPy)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj.detach().clone()
    elif isinstance(obj, np.ndarray):
        out[prefix] = torch.from_numpy(obj.copy())
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _tensors(v, out, f"{prefix}[{k}]", seen)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _tensors(v, out, f"{prefix}[{i}]", seen)
    elif type(obj).__module__.startswith("unienv") and hasattr(obj, "__dict__"):
        for k, v in vars(obj).items():
            if k not in ("backend", "task", "_renderer"):
                _tensors(v, out, f"{prefix}.{k}", seen)


def snapshot(env) -> dict[str, torch.Tensor]:
    """The env's whole state: its tensors and its DR manager's (streams, timers, latency ring,
    noise, current parameters), the backend's physics state and every randomized parameter."""
    out: dict[str, torch.Tensor] = {"physics": env.backend.get_physics_state().clone()}
    _tensors(env, out, "env", set())
    for term in env.backend._requested_dr:
        out[f"backend.{term}"] = env.backend.get_dr_param(term)
    return out


def assert_unchanged(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert not changed, f"changed by a refusal: {changed}"


def test_the_snapshot_sees_a_reset_a_step_and_a_dr_write(env):
    """The comparison is not blind: each kind of mutation shows up in it."""
    before = snapshot(env)
    env.step(torch.full((N, 3), 0.1))
    after = snapshot(env)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert {"physics", "env.episode_length", "env.dr._history", "env.dr._head"} <= changed
    assert {"env._sums.ret", "env._reading[qpos]"} <= changed  # NumPy arrays on mujoco for a NumPy task
    assert any(k.endswith(".countdown") for k in changed)
    before = snapshot(env)
    env.reset(seed=11)
    after = snapshot(env)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert {"env._random._keys", "backend.body_mass"} <= changed
    assert any(k.startswith("env.dr._bound") and k.endswith("random._keys") for k in changed)


def _cases(env):
    """(name, call) for each bad input; every call must raise a UnienvError."""
    b, nq = env.backend, env.backend.nq
    qpos = b.get_state_views()["qpos"].clone()
    qvel = b.get_state_views()["qvel"].clone()
    dev, dtype = b.device, env.dtype
    nan_q = qpos.clone()
    nan_q[1, 0] = float("nan")
    big = 1e39 if dtype == torch.float32 else float("inf")  # beyond the backend's float range
    big_q = qpos[:1].to(torch.float64).clone()
    big_q[0, 1] = big
    mass = b.get_dr_param("body_mass", [0]).to(dev)
    good_mask = torch.ones(N, dtype=torch.bool)
    cases = {
        # reset: seed and options are checked before any stream is re-seeded
        "reset bad reset_mask with a seed": lambda: env.reset(seed=5, options={"reset_mask": [1, 0, 1]}),
        "reset unknown option with a seed": lambda: env.reset(seed=5, options={"reset_mas": good_mask}),
        "reset mask of the wrong length": lambda: env.reset(
            options={"reset_mask": torch.ones(N + 1, dtype=torch.bool)}
        ),
        "reset options not a dict": lambda: env.reset(seed=5, options=["reset_mask"]),
        "reset seed 2**64 - 1": lambda: env.reset(seed=2**64 - 1),
        "reset seed -1": lambda: env.reset(seed=-1),
        "reset seed 2**32": lambda: env.reset(seed=2**32),
        "reset seed float": lambda: env.reset(seed=1.5),
        "reset seed bool": lambda: env.reset(seed=True),
        "reset mask 'all'": lambda: env.reset(options={"reset_mask": "all"}),
        "reset mask None": lambda: env.reset(options={"reset_mask": None}),
        "reset mask sparse": lambda: env.reset(options={"reset_mask": good_mask.to_sparse()}),
        "reset mask of ints": lambda: env.reset(options={"reset_mask": np.ones(N, np.int64)}),
        # step: actions are checked before DR (latency ring, push timers) or physics move
        "step wrong shape": lambda: env.step(torch.zeros(N, 4)),
        "step transposed": lambda: env.step(torch.zeros(3, N)),
        "step int actions": lambda: env.step(torch.zeros(N, 3, dtype=torch.int64)),
        "step a list": lambda: env.step([[0.0] * 3] * N),
        "step complex": lambda: env.step(torch.zeros(N, 3, dtype=torch.complex64)),
        "step int NumPy actions": lambda: env.step(np.zeros((N, 3), np.int64)),
        "step bool NumPy actions": lambda: env.step(np.ones((N, 3), bool)),
        "step wrong-shape NumPy actions": lambda: env.step(np.zeros((N, 3, 1))),
        "step sparse actions": lambda: env.step(torch.zeros(N, 3).to_sparse()),
        "step nested actions": lambda: env.step(torch.nested.nested_tensor([torch.zeros(3)] * N)),
        "step meta actions": lambda: env.step(torch.zeros(N, 3, device="meta")),
        # backend setters
        "set_state complex env_ids": lambda: b.set_state_tensor(torch.tensor([0j]), qpos[:1], qvel[:1]),
        "set_state float env_ids": lambda: b.set_state_tensor([0.7], qpos[:1], qvel[:1]),
        "set_state env_ids out of range": lambda: b.set_state_tensor([N], qpos[:1], qvel[:1]),
        "set_state duplicate env_ids": lambda: b.set_state_tensor([1, 1], qpos[:2], qvel[:2]),
        "set_state string env_ids": lambda: b.set_state_tensor("ab", qpos[:2], qvel[:2]),
        "set_state NaN qpos": lambda: b.set_state_tensor(torch.arange(N), nan_q, qvel),
        "set_state beyond the dtype": lambda: b.set_state_tensor([0], big_q.to(dev), qvel[:1].double()),
        "set_state numpy qpos": lambda: b.set_state_tensor([0], qpos[:1].cpu().numpy(), qvel[:1]),
        "set_state wrong width": lambda: b.set_state_tensor([0], qpos[:1, : nq - 1], qvel[:1]),
        "set_physics_state numpy": lambda: b.set_physics_state(b.get_physics_state().cpu().numpy()),
        "set_physics_state wrong width": lambda: b.set_physics_state(
            torch.zeros(N, 2, dtype=dtype, device=dev)
        ),
        "set_dr_param NaN": lambda: b.set_dr_param("body_mass", [0], mass * float("nan")),
        "set_dr_param beyond the dtype": lambda: b.set_dr_param("body_mass", [0], mass.double() * big),
        "set_dr_param negative mass": lambda: b.set_dr_param("body_mass", [0], -mass),
        "set_dr_param unknown term": lambda: b.set_dr_param("body_mas", [0], mass),
        "set_dr_param float ids": lambda: b.set_dr_param("body_mass", [0.5], mass),
        "set_dr_param_mask int mask": lambda: b.set_dr_param_mask(
            "body_mass", torch.ones(N), mass.repeat(N, 1)
        ),
        "step_tensor wrong shape": lambda: b.step_tensor(torch.zeros(N, b.nu + 1, dtype=dtype, device=dev)),
        "step_tensor nsteps 0": lambda: b.step_tensor(torch.zeros(N, b.nu, dtype=dtype, device=dev), 0),
        "apply_body_wrench bad ids": lambda: b.apply_body_wrench(
            [99], torch.zeros(N, 1, 3), torch.zeros(N, 1, 3)
        ),
        # the SB3 adapter
        "sb3 transposed actions": lambda: _sb3_step(env, np.zeros((3, N), np.float32)),
    }
    if b.name == "mujoco":  # the CPU engine refuses these in the step (the others flag them on the device)
        cases["step NaN action"] = lambda: env.step(torch.full((N, 3), float("nan")))
        cases["step_tensor inf ctrl"] = lambda: b.step_tensor(
            torch.full((N, b.nu), float("inf"), dtype=dtype)
        )
    return cases


def _sb3_step(env, actions):
    vec = Sb3VecEnv(env)
    vec.step_async(actions)
    vec.step_wait()


def test_every_refusal_changes_nothing(env):
    refused = []
    for name, call in _cases(env).items():
        before = snapshot(env)
        with pytest.raises(UnienvError) as error:
            call()
        message = str(error.value)
        assert ":" in message and len(message) > 20, f"{name}: unclear message {message!r}"
        assert_unchanged(before, snapshot(env))
        refused.append(name)
    assert len(refused) >= 35


def test_out_of_bounds_actions_raise_before_anything_moves_on_mujoco():
    env = unienv.make("hopper", num_envs=N, seed=0, dr=DR, out_of_bounds_actions="raise")
    env.reset()
    env.step(torch.zeros(N, 3))
    before = snapshot(env)
    with pytest.raises(
        unienv.ArgumentError, match=r"actions: expected values in the action space .* envs \[1\]"
    ):
        env.step(torch.tensor([[0.0] * 3, [0.0, 1e308, 0.0]], dtype=torch.float64))
    assert_unchanged(before, snapshot(env))


def test_huge_finite_actions_are_clipped_to_the_action_space(env):
    """Gymnasium's ant gives reward -inf for 1e200 actions (ctrl cost 1e400); clipped here, the
    reward and observation stay finite and equal those of the bound itself."""
    env.reset(seed=4)
    _, reward_big, *_ = env.step(torch.full((N, 3), 1e30))
    env.reset(seed=4)
    _, reward_one, *_ = env.step(torch.full((N, 3), 1.0))
    assert torch.isfinite(reward_big).all() and torch.equal(reward_big, reward_one)
    ant = unienv.make("ant", num_envs=2, seed=0)
    ant.reset()
    obs, reward, *_ = ant.step(torch.full((2, 8), 1e200, dtype=torch.float64))
    assert torch.isfinite(reward).all() and torch.isfinite(obs).all()
