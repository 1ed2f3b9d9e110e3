"""The gait metrics (unienv.training.gait.gait) on contact sequences whose answers are known:
trot, pace and bound at several frequencies and duty factors, a biped's walk, swings cut by an
episode's start or end, a foot that never lifts."""

import numpy as np
import pytest

from unienv.training.gait import gait

FEET = ("FR", "FL", "RR", "RL")


def schedule(offsets, period_steps, stance_steps, steps=400, envs=2, shift=0):
    """Contacts (envs, steps, feet): foot f in stance for stance_steps of every period_steps,
    starting at offset (cycles)."""
    t = np.arange(steps)[None, :, None] + shift
    start = (np.asarray(offsets) * period_steps).round()[None, None, :]
    phase = (t - start) % period_steps
    return np.broadcast_to(phase < stance_steps, (envs, steps, len(offsets))).copy()


def no_episode_starts(contact):
    return np.zeros(contact.shape[:2], dtype=bool)


@pytest.mark.parametrize("period, stance", [(25, 12), (20, 13), (40, 20)])
def test_a_trot_has_diagonals_in_phase_and_laterals_half_a_cycle_apart(period, stance):
    contact = schedule((0.0, 0.5, 0.5, 0.0), period, stance)
    out = gait(contact, no_episode_starts(contact), FEET, dt=0.02)
    for foot in FEET:
        assert out["air_time"][foot] == pytest.approx((period - stance) * 0.02)
        assert out["duty_factor"][foot] == pytest.approx(stance / period, abs=0.02)
    # FR-RL and FL-RR land together; FR-FL, RR-RL half a cycle apart
    assert min(out["phase"]["FR-RL"], 1 - out["phase"]["FR-RL"]) < 0.02
    assert min(out["phase"]["FL-RR"], 1 - out["phase"]["FL-RR"]) < 0.02
    assert out["phase"]["FR-FL"] == pytest.approx(0.5, abs=0.03)
    assert out["phase"]["RR-RL"] == pytest.approx(0.5, abs=0.03)
    assert all(c > 0.99 for c in out["phase_coherence"].values())


def test_a_pace_and_a_bound_differ_from_a_trot():
    pace = gait(c := schedule((0.0, 0.5, 0.0, 0.5), 24, 12), no_episode_starts(c), FEET, 0.02)
    assert min(pace["phase"]["FR-RR"], 1 - pace["phase"]["FR-RR"]) < 0.02  # same side together
    assert pace["phase"]["FR-RL"] == pytest.approx(0.5, abs=0.03)
    bound = gait(c := schedule((0.0, 0.0, 0.5, 0.5), 24, 12), no_episode_starts(c), FEET, 0.02)
    assert min(bound["phase"]["FR-FL"], 1 - bound["phase"]["FR-FL"]) < 0.02  # front pair together
    assert bound["phase"]["FR-RR"] == pytest.approx(0.5, abs=0.03)


def test_a_bipeds_walk_alternates_and_a_quarter_offset_reads_a_quarter():
    walk = gait(c := schedule((0.0, 0.5), 40, 24), no_episode_starts(c), ("left", "right"), 0.02)
    assert walk["phase"]["left-right"] == pytest.approx(0.5, abs=0.03)
    # stance 24 of 40 steps, half a cycle apart: both down 8 of 40 steps; corr = (0.2 - 0.36) / 0.24
    assert walk["contact_correlation"]["left-right"] == pytest.approx(-2 / 3, abs=0.02)
    alike = gait(c := schedule((0.0, 0.0), 40, 24), no_episode_starts(c), ("left", "right"), 0.02)
    assert alike["contact_correlation"]["left-right"] == pytest.approx(1.0)
    standing = gait(c := np.ones((2, 50, 2), dtype=bool), no_episode_starts(c), ("left", "right"), 0.02)
    assert standing["contact_correlation"]["left-right"] is None
    assert walk["air_time"]["left"] == pytest.approx(16 * 0.02)
    quarter = gait(c := schedule((0.0, 0.25), 40, 20), no_episode_starts(c), ("a", "b"), 0.02)
    # a lands a quarter cycle before b: at a's touchdown, b's stride is 3/4 done
    assert quarter["phase"]["a-b"] == pytest.approx(0.75, abs=0.03)


def test_swings_cut_by_an_episodes_start_or_end_are_not_counted():
    contact = np.ones((1, 30, 1), dtype=bool)
    contact[0, 5:10, 0] = False  # a 5-step swing inside the first episode
    contact[0, 17:23, 0] = False  # lifted at 17, the episode ends at 20, the next lands at 23
    first = np.zeros((1, 30), dtype=bool)
    first[0, 20] = True
    out = gait(contact, first, ("foot",), dt=0.1)
    assert out["air_time"]["foot"] == pytest.approx(0.5)  # only the whole swing
    assert out["duty_factor"]["foot"] == pytest.approx(19 / 30)


def test_a_foot_that_never_lifts_has_no_air_time_and_no_phase():
    contact = np.ones((2, 50, 2), dtype=bool)
    out = gait(contact, no_episode_starts(contact), ("a", "b"), 0.02)
    assert out["air_time"] == {"a": None, "b": None}
    assert out["duty_factor"] == {"a": 1.0, "b": 1.0}
    assert out["phase"]["a-b"] is None
