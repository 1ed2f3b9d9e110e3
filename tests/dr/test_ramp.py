"""A term's `ramp`: its draws widen from no change to the whole distribution over the env's first
n steps, exactly in proportion; checked fields; a snapshot carries the ramp's progress; an
evaluation's config drops the ramps."""

import pytest
import torch

from tests.dr.conftest import state
from unienv import dr as domain_randomization
from unienv.errors import ArgumentError, UnknownNameError
from unienv.training.checkpoint import env_state, load_env_state

PUSH = {"param": "push", "body": "box", "range": [-1.0, 1.0], "interval": 1}


def test_a_ramped_push_is_the_same_draw_scaled_by_the_share_of_the_ramp_done(make_env):
    """With a ramp of 8 steps, step t's dv is min(1, t/8) times the dv an unramped twin (same
    seed, same term name: the same stream) draws, and the box's velocity changes by it."""
    ramped = make_env({"push": {**PUSH, "ramp": 8}}, box_z=2.0)  # in the air: nothing but the push moves it
    plain = make_env({"push": PUSH}, box_z=2.0)
    for t in range(1, 13):
        before = state(ramped)[1][:, 0:3]
        ramped.step(torch.zeros(4, 2))
        plain.step(torch.zeros(4, 2))
        dv, full = ramped.dr_params()["push"], plain.dr_params()["push"]
        assert float(full.abs().min()) > 0
        torch.testing.assert_close(dv, min(1.0, t / 8) * full, rtol=1e-12, atol=0)
        if t == 4:  # halfway: the kick is half the twin's, and the box takes it (gravity aside)
            change = state(ramped)[1][:, 0:2] - before[:, 0:2]
            atol = 1e-9 if ramped.backend.get_state_views()["qvel"].dtype == torch.float64 else 1e-5
            torch.testing.assert_close(change, dv[:, 0:2].to(change.dtype), rtol=0, atol=atol)
    low, high = ramped.dr.ranges()["push"]
    assert -1.0 <= low < -0.5 and 0.5 < high <= 1.0  # the full range reached after the ramp


@pytest.mark.parametrize("operation, neutral", [("scale", 1.0), ("add", 0.0)])
def test_a_ramped_model_term_starts_at_the_default_and_widens_about_it(make_mujoco_env, operation, neutral):
    """A pole mass term drawn every step: its draw x becomes u + s (x - u), u the operation's
    no-change value (1 for scale, 0 for add), s = t/10, so the first values sit at the default."""
    term = {"param": "body_mass", "objects": "pole", "range": [2.0, 3.0], "operation": operation}
    term |= {"schedule": "interval", "interval": 1}
    ramped = make_mujoco_env({"mass": {**term, "ramp": 10}})
    plain = make_mujoco_env({"mass": term})
    default = 0.2  # the pole's mass, kg
    for t in range(1, 15):
        ramped.step(torch.zeros(4, 2))
        plain.step(torch.zeros(4, 2))
        value, full = ramped.dr_params()["mass"], plain.dr_params()["mass"]
        draw = full / default if operation == "scale" else full - default
        expected = neutral + min(1.0, t / 10) * (draw - neutral)
        expected = default * expected if operation == "scale" else default + expected
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(ramped.backend.get_dr_param("body_mass")[:, -1:].double(), value)


def test_a_snapshot_carries_the_ramp_so_a_restored_env_draws_the_same(make_mujoco_env):
    env = make_mujoco_env({"push": {**PUSH, "ramp": 50}}, box_z=2.0)
    for _ in range(5):
        env.step(torch.zeros(4, 2))
    snapshot = env_state(env)
    first = []
    for _ in range(5):
        env.step(torch.zeros(4, 2))
        first.append(env.dr_params()["push"])
    load_env_state(env, snapshot)
    for expected in first:
        env.step(torch.zeros(4, 2))
        assert torch.equal(env.dr_params()["push"], expected)
    assert int(env.dr._bound[0].age) == 10


@pytest.mark.parametrize(
    "term, match",
    [
        ({**PUSH, "ramp": 0}, r"dr.t.ramp: expected whole env steps >= 1, got 0"),
        ({**PUSH, "ramp": 2.5}, r"dr.t.ramp: expected whole env steps"),
        ({**PUSH, "ramp": True}, r"dr.t.ramp: expected whole env steps"),
        ({**PUSH, "ramp": 2**63}, r"dr.t.ramp"),
        ({"param": "body_mass", "range": [1.0, 2.0], "operation": "abs", "ramp": 5}, r"dr.t.ramp: .*'abs'"),
        ({"param": "obs_noise", "std": 0.1, "distribution": "gaussian", "ramp": 5}, r"field of dr.t.*'ramp'"),
        ({"param": "action_latency", "range": [0, 1], "ramp": 5}, r"field of dr.t.*'ramp'"),
    ],
)
def test_a_bad_ramp_is_refused_naming_it(term, match):
    with pytest.raises((ArgumentError, UnknownNameError), match=match):
        domain_randomization.parse({"t": term})


def test_full_range_drops_every_ramp_and_nothing_else():
    config = {
        "push": {**PUSH, "ramp": 100},
        "mass": {"param": "body_mass", "range": 1.0, "operation": "scale"},
    }
    assert domain_randomization.full_range(config) == {"push": PUSH, "mass": config["mass"]}
    assert config["push"]["ramp"] == 100  # the caller's config is left as it was
    assert domain_randomization.full_range("pushes") == domain_randomization.preset("pushes")
    assert domain_randomization.full_range(None) is None
    with pytest.raises(ArgumentError, match="dr: expected a mapping"):
        domain_randomization.full_range([1, 2])
