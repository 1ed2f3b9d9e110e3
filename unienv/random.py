"""Per-env random streams, vectorized and independent of batch composition.

Env i draws from its own counter-based stream, keyed by (seed + i, draw index):
a hash (SplitMix64) of the key gives the bits, so a draw needs no generator
object per env and no Python loop. What env i samples depends only on its seed
and on how many numbers it has drawn, never on which other envs reset at the
same time; so a vector of N envs seeded s samples exactly what N single envs
seeded s, s+1, ... sample, bit for bit, on any device.

Two ways to pick the envs that draw: `for_envs(ids)` draws rows for those ids
(dynamic shapes, cheap on the CPU); `for_mask(mask)` draws a row for every env
but advances only the masked envs' streams (static shapes, no host sync, for
device backends). Env i's draws are the same either way.
"""

from __future__ import annotations

import torch

_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64
_MUL1 = -4658895280553007687  # 0xBF58476D1CE4E5B9
_MUL2 = -7723592293110705685  # 0x94D049BB133111EB


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bits."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _splitmix64(x: torch.Tensor) -> torch.Tensor:
    z = x + _GOLDEN
    z = (z ^ _shr(z, 30)) * _MUL1
    z = (z ^ _shr(z, 27)) * _MUL2
    return z ^ _shr(z, 31)


class EnvRandom:
    """Random streams for num_envs envs; `for_envs(ids)` samples rows for those envs."""

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self._keys = _splitmix64(torch.arange(num_envs, dtype=torch.int64, device=self.device))
        self._counts = torch.zeros(num_envs, dtype=torch.int64, device=self.device)

    def seed(self, seed: int, env_ids: torch.Tensor | None = None) -> None:
        """Env i's stream restarts from seed + i (for the given envs, or all)."""
        ids = (
            torch.arange(len(self._keys), device=self.device) if env_ids is None else env_ids.to(self.device)
        )
        self._keys[ids] = _splitmix64(ids.to(torch.int64) + int(seed))
        self._counts[ids] = 0

    def for_envs(self, env_ids: torch.Tensor) -> Sampler:
        """Draws for the envs env_ids, one row each."""
        return Sampler(self, env_ids.to(self.device))

    def for_mask(self, mask: torch.Tensor) -> Sampler:
        """Draws for every env (one row each) that advance only the streams where mask."""
        return Sampler(self, None, mask)

    def _bits(self, env_ids: torch.Tensor | None, count: int, advance: torch.Tensor | None) -> torch.Tensor:
        """(rows, count) fresh 64-bit draws for env_ids (None: every env); advances those
        envs' streams, or with `advance` (a mask over every env) only the masked ones."""
        rows = slice(None) if env_ids is None else env_ids
        counts, keys = self._counts[rows], self._keys[rows]
        index = counts[:, None] + torch.arange(count, device=self.device)
        if advance is None:
            self._counts[rows] = counts + count
        else:
            self._counts += advance * count
        return _splitmix64(keys[:, None] ^ _splitmix64(index))


class Sampler:
    """Draws for a fixed set of envs: each method returns (rows, *shape), a row per env
    in env_ids, or per env (env_ids None) with only the `advance` mask's streams moved."""

    def __init__(self, source: EnvRandom, env_ids: torch.Tensor | None, advance: torch.Tensor | None = None):
        self._source, self.env_ids, self._advance = source, env_ids, advance
        self.rows = len(source._keys) if env_ids is None else len(env_ids)

    def uniform(self, shape: tuple[int, ...], low=0.0, high=1.0, dtype=torch.float64) -> torch.Tensor:
        """Uniform on [low, high); low and high broadcast against (n, *shape)."""
        n = 1
        for s in shape:
            n *= s
        bits = self._source._bits(self.env_ids, n, self._advance)
        unit = _shr(bits, 11).to(torch.float64) * (2.0**-53)
        unit = unit.reshape(self.rows, *shape)
        return (low + (high - low) * unit).to(dtype)

    def normal(self, shape: tuple[int, ...], mean=0.0, std=1.0, dtype=torch.float64) -> torch.Tensor:
        """Gaussian by the Box-Muller transform."""
        u = self.uniform((2, *shape))
        radius = torch.sqrt(-2.0 * torch.log1p(-u[:, 0]))
        unit = radius * torch.cos(2.0 * torch.pi * u[:, 1])
        return (mean + std * unit).to(dtype)

    def integers(self, shape: tuple[int, ...], low: int, high: int) -> torch.Tensor:
        """Integers uniform on [low, high)."""
        u = self.uniform(shape)
        return torch.clamp((low + (high - low) * u).floor().to(torch.int64), max=high - 1)
