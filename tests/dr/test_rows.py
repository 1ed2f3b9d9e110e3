"""unienv.utils.rows: host rows (ids) and device rows (mask only) select, draw and write the same."""

import math

import torch

from tests.syncs import count_host_syncs
from unienv.utils.random import EnvRandom
from unienv.utils.rows import Rows, device_rows, host_rows

MASK = torch.tensor([False, True, False, True, True, False])


def test_host_rows_give_the_ids_and_none_for_an_empty_mask():
    rows = host_rows(MASK)
    assert rows.ids.tolist() == [1, 3, 4] and rows.mask is MASK
    assert host_rows(torch.zeros(6, dtype=torch.bool)) is None
    assert device_rows(MASK).ids is None and device_rows(MASK).mask is MASK


def test_both_models_draw_the_same_for_the_selected_envs_and_advance_only_theirs():
    out = []
    for select in (host_rows, device_rows):
        random = EnvRandom(6)
        random.seed(3)
        rows = select(MASK)
        x = rows.sampler(random).uniform((2,))
        after = random.for_envs(torch.arange(6)).uniform((1,))  # each env's next draw
        out.append((x if rows.ids is not None else x[MASK], after))  # device rows draw for every env
    (x_host, after_host), (x_device, after_device) = out
    assert torch.equal(x_host, x_device) and torch.equal(after_host, after_device)
    fresh = EnvRandom(6)
    fresh.seed(3)
    untouched = fresh.for_envs(torch.arange(6)).uniform((1,))
    assert torch.equal(after_host[~MASK], untouched[~MASK])
    assert not torch.equal(after_host[MASK], untouched[MASK])


def test_put_take_where_and_extremes_agree_across_the_models():
    dst = torch.arange(18, dtype=torch.float64).reshape(6, 3)
    cols = torch.tensor([0, 2])
    out = {}
    for select in (host_rows, device_rows):
        rows = select(MASK)
        width = 6 if rows.ids is None else 3
        src = torch.full((width, 2), -1.0, dtype=torch.float64)
        full = dst.clone()
        rows.put(full, src, cols)
        taken = rows.take(full)
        aligned = rows.where(torch.zeros(width, 3, dtype=torch.float64), taken)
        low, high = rows.extremes(rows.take(dst))
        out[select] = (full, taken, aligned, float(low), float(high))
    (full_h, taken_h, aligned_h, low_h, high_h), (full_d, taken_d, aligned_d, low_d, high_d) = out.values()
    assert torch.equal(full_h, full_d)
    assert torch.equal(full_h[~MASK], dst[~MASK]) and (full_h[MASK][:, [0, 2]] == -1).all()
    assert torch.equal(taken_h, taken_d[MASK])
    assert torch.equal(aligned_h, aligned_d[MASK]) and torch.equal(aligned_d[~MASK], full_d[~MASK])
    assert (low_h, high_h) == (low_d, high_d) == (3.0, 14.0)
    none = Rows(torch.zeros(6, dtype=torch.bool))  # device rows that select nothing
    assert none.extremes(dst) == (math.inf, -math.inf)


def test_device_rows_read_nothing_back():
    random = EnvRandom(6)
    dst = torch.zeros(6, 3, dtype=torch.float64)
    with count_host_syncs() as counts:
        rows = device_rows(MASK)
        x = rows.sampler(random).normal((3,))
        rows.put(dst, x)
        rows.where(x, rows.take(dst))
        rows.extremes(x)
    assert not counts, counts
