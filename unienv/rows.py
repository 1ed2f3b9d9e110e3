"""Which envs a call touches: host ids or a device mask, one object for both.

The env and domain randomization make every per-env write through a `Rows`:
`mask` (num_envs,) bool always, and `ids` where host reads are free. With ids,
draws and writes cover those envs only (dynamic shapes, cheap on the CPU);
without, every operation runs over all envs through the mask (static shapes,
no host read, capturable in a CUDA graph). Sampled rows follow `sampler()`:
one per id, or one per env. Env i's draws are the same either way.

`host_rows` and `device_rows` are the two selectors; the env chooses one at
construction and hands it to the DR manager, so both always agree.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from unienv.random import EnvRandom, Sampler


@dataclasses.dataclass(frozen=True)
class Rows:
    """The envs of `mask`, and their `ids` where host reads are free (None: by mask)."""

    mask: torch.Tensor
    ids: torch.Tensor | None = None

    def sampler(self, random: EnvRandom) -> Sampler:
        return random.for_mask(self.mask) if self.ids is None else random.for_envs(self.ids)

    def take(self, x: torch.Tensor) -> torch.Tensor:
        """A copy of x's rows, aligned with the sampled rows."""
        return x.clone() if self.ids is None else x[self.ids]

    def put(self, dst: torch.Tensor, src: torch.Tensor, cols: torch.Tensor | None = None) -> None:
        """dst[env, cols] = src for the envs touched (src aligned with the sampled rows)."""
        if self.ids is not None:
            dst[self.ids if cols is None else (self.ids[:, None], cols)] = src
            return
        keep = self.mask.reshape(-1, *(1,) * (src.ndim - 1))
        if cols is None:
            dst.copy_(torch.where(keep, src, dst))
        else:
            dst[:, cols] = torch.where(keep, src, dst[:, cols])

    def extremes(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The smallest and largest of x over the envs touched (+inf, -inf for none)."""
        if self.ids is None:
            keep = self.mask.reshape(-1, *(1,) * (x.ndim - 1))
            return torch.where(keep, x, math.inf).amin(), torch.where(keep, x, -math.inf).amax()
        return x.amin(), x.amax()


def host_rows(mask: torch.Tensor) -> Rows | None:
    """The envs of mask by id; None when there are none (the caller skips its work)."""
    ids = torch.nonzero(mask).flatten()
    return Rows(mask, ids) if len(ids) else None


def device_rows(mask: torch.Tensor) -> Rows:
    """The envs of mask by mask: static shapes, nothing read on the host."""
    return Rows(mask)
