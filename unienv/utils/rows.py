"""Rows: the envs one call touches, in the form its execution model works on.

A vector env runs one of two execution models, chosen once from the backend's
capabilities:

  * host rows (`host_rows`), where host reads are free (the CPU engine): the
    envs selected are known as ids, found once per call with `torch.nonzero`;
    draws, reads and writes cover those envs only, and a call whose mask
    selects nothing is skipped (`host_rows` returns None);
  * device rows (`device_rows`), where a host read would wait for the device
    (`Capabilities.sync_free`): every operation runs over all envs with the
    mask, with static shapes, and nothing is read back on the host.

A `Rows` always holds the (num_envs,) bool `mask`, and `ids` for host rows. Data
"aligned with the rows" has one row per id (host rows) or one per env (device
rows); `sampler()` draws rows so aligned, `take` reads them from a full-width
tensor and `put` writes them back, `where` merges two aligned tensors, and
`extremes` reduces over the envs selected.

Invariant: both models give env i the same values. A sampler for host rows
draws from the selected envs' streams only; one for device rows draws for every
env but advances only the selected envs' streams (`EnvRandom.for_mask`), so
env i draws what it would alone, and rows outside the mask are never written.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from unienv.utils.random import EnvRandom, Sampler


@dataclasses.dataclass(frozen=True)
class Rows:
    """The envs of `mask`, with their `ids` where host reads are free (None: mask only)."""

    mask: torch.Tensor
    ids: torch.Tensor | None = None

    def sampler(self, random: EnvRandom) -> Sampler:
        """Draws from `random`'s streams, one row per row of this selection."""
        return random.for_mask(self.mask) if self.ids is None else random.for_envs(self.ids)

    def take(self, x: torch.Tensor) -> torch.Tensor:
        """A copy of the rows of the full-width x, aligned with the sampled rows."""
        return x.clone() if self.ids is None else x[self.ids]

    def put(self, dst: torch.Tensor, src: torch.Tensor, cols: torch.Tensor | None = None) -> None:
        """dst[env, cols] = src for the envs selected (dst full-width, src aligned with the rows)."""
        if self.ids is not None:
            dst[self.ids if cols is None else (self.ids[:, None], cols)] = src
            return
        keep = self.mask.reshape(-1, *(1,) * (src.ndim - 1))
        if cols is None:
            dst.copy_(torch.where(keep, src, dst))
        else:
            dst[:, cols] = torch.where(keep, src, dst[:, cols])

    def where(self, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
        """new in the rows selected, old in the others (both aligned with the rows: every row
        of host rows is selected)."""
        if self.ids is not None:
            return new
        return torch.where(self.mask.reshape(-1, *(1,) * (new.ndim - 1)), new, old)

    def extremes(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The smallest and largest of x (aligned with the rows) over the envs selected
        (+inf, -inf for none)."""
        if self.ids is None:
            keep = self.mask.reshape(-1, *(1,) * (x.ndim - 1))
            return torch.where(keep, x, math.inf).amin(), torch.where(keep, x, -math.inf).amax()
        return x.amin(), x.amax()


RowSelector = Callable[[torch.Tensor], "Rows | None"]
"""Makes the Rows of a (num_envs,) bool mask: `host_rows` or `device_rows`."""


def host_rows(mask: torch.Tensor) -> Rows | None:
    """The envs of mask by id (a host read of the mask); None when it selects none."""
    ids = torch.nonzero(mask).flatten()
    return Rows(mask, ids) if len(ids) else None


def device_rows(mask: torch.Tensor) -> Rows:
    """The envs of mask as the mask itself: static shapes, no host read."""
    return Rows(mask)
