"""Per-env random streams, vectorized and independent of batch composition.

Env i draws from its own SplitMix64 stream: its key is a hash of (seed + i),
and its n-th number is the SplitMix64 output of key + n * golden gamma, so a
draw needs no generator object per env and no Python loop, only a counter per
env. What env i samples depends only on its seed and on how many numbers it has
drawn, never on which other envs reset at the same time; so a vector of N envs
seeded s samples exactly what N single envs seeded s, s+1, ... sample, bit for
bit, on any device.

Two ways to pick the envs that draw: `for_envs(ids)` draws rows for those ids
(dynamic shapes, cheap on the CPU); `for_mask(mask)` draws a row for every env
but advances only the masked envs' streams (static shapes, no host sync, for
device backends). Env i's draws are the same either way.

A Sampler takes its envs' numbers a block at a time: its first draw moves each
stream past the next 64 numbers, and its draws hand those out in order, each
hashing only the numbers it takes (another block when they run out). Each reset
of an env uses whole blocks of its stream: still a function of the env's own
seed and history alone.

NumPy ids of one env (a single env's reset, an autoreset at one env) draw through
`OneEnvSampler`, which hashes the same numbers in Python ints: a draw of a few
numbers is then a few dozen int operations instead of some twenty NumPy calls.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from unienv.utils.arrays import NUMPY, torch_namespace

_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64
_MUL1 = -4658895280553007687  # 0xBF58476D1CE4E5B9
_MUL2 = -7723592293110705685  # 0x94D049BB133111EB
_BLOCK = 64  # numbers hashed ahead per env by a sampler's first draw
_LOW53 = (1 << 53) - 1


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bits."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _mix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64's output function (a bijection of 64-bit words)."""
    z = (z ^ _shr(z, 30)) * _MUL1
    z = (z ^ _shr(z, 27)) * _MUL2
    return z ^ _shr(z, 31)


def _unsigned(x: int) -> np.uint64:
    return np.uint64(x & ((1 << 64) - 1))


_GOLDEN_U, _MUL1_U, _MUL2_U = _unsigned(_GOLDEN), _unsigned(_MUL1), _unsigned(_MUL2)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _mix64_numpy(z: np.ndarray) -> np.ndarray:
    """_mix64 on uint64 arrays (whose shifts are logical and whose products wrap)."""
    z = (z ^ (z >> _S30)) * _MUL1_U
    z = (z ^ (z >> _S27)) * _MUL2_U
    return z ^ (z >> _S31)


class EnvRandom:
    """Random streams for num_envs envs; `for_envs(ids)` samples rows for those envs."""

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self._keys = _mix64(torch.arange(num_envs, dtype=torch.int64, device=self.device) + _GOLDEN)
        self._counts = torch.zeros(num_envs, dtype=torch.int64, device=self.device)
        if self.device.type == "cpu":  # NumPy views of the same memory, for NumpySampler
            self._keys_numpy = self._keys.numpy().view(np.uint64)
            self._counts_numpy = self._counts.numpy().view(np.uint64)

    def seed(self, seed: int, env_ids: torch.Tensor | None = None) -> None:
        """Env i's stream restarts from seed + i (for the given envs, or all)."""
        ids = (
            torch.arange(len(self._keys), device=self.device) if env_ids is None else env_ids.to(self.device)
        )
        self._keys[ids] = _mix64(ids.to(torch.int64) + int(seed) + _GOLDEN)
        self._counts[ids] = 0

    def for_envs(self, env_ids: torch.Tensor | np.ndarray) -> Sampler:
        """Draws for the envs env_ids, one row each: NumPy arrays for NumPy ids (CPU only)."""
        if isinstance(env_ids, np.ndarray):
            return (OneEnvSampler if len(env_ids) == 1 else NumpySampler)(self, env_ids)
        return Sampler(self, env_ids.to(self.device))

    def for_mask(self, mask: torch.Tensor) -> Sampler:
        """Draws for every env (one row each) that advance only the streams where mask."""
        return Sampler(self, None, mask)


def _or(dtype, default):
    return default if dtype is None else dtype


class Sampler:
    """Draws for a fixed set of envs: each method returns (rows, *shape), a row per env
    in env_ids, or per env (env_ids None) with only the `advance` mask's streams moved."""

    def __init__(self, source: EnvRandom, env_ids: torch.Tensor | None, advance: torch.Tensor | None = None):
        self._source, self.env_ids = source, env_ids
        self._step = None if advance is None else advance.to(torch.int64)  # 1 where a stream moves
        self.rows = len(source._keys) if env_ids is None else len(env_ids)
        self._xp = torch_namespace(source.device)
        self._start: torch.Tensor | None = None  # (rows,) each stream's hash input at its block's start
        self._size = self._used = 0

    def _bits(self, count: int):
        """(rows, count) 64-bit numbers, the next of the envs' current blocks (a new block, which
        advances the streams past it, when the current one runs out); hashed as drawn."""
        if self._start is None or self._used + count > self._size:
            self._size, self._used = max(count, _BLOCK), 0
            self._start = self._next_block(self._size)
        first, self._used = self._used, self._used + count
        return self._hash(first, count)

    def _next_block(self, size: int) -> torch.Tensor:
        """Each env's hash input before its block's first number, key + count * golden gamma;
        the streams then move `size` numbers on."""
        src, ids = self._source, self.env_ids
        if ids is None:
            base = src._counts * _GOLDEN + src._keys
            src._counts += size if self._step is None else self._step * size
            return base
        counts = src._counts[ids]
        src._counts[ids] = counts + size
        return counts * _GOLDEN + src._keys[ids]

    def _hash(self, first: int, count: int) -> torch.Tensor:
        """Numbers first + 1 .. first + count of the current blocks."""
        steps = torch.arange(first + 1, first + count + 1, device=self._start.device) * _GOLDEN
        return _mix64(self._start[:, None] + steps)

    def _unit(self, count: int):
        """(rows, count) uniforms on [0, 1): the low 53 bits of the next numbers, over 2**53."""
        return self._xp.astype(self._bits(count) & _LOW53, self._xp.float64) * (2.0**-53)

    def uniform(self, shape: tuple[int, ...], low=0.0, high=1.0, dtype=None):
        """Uniform on [low, high); low and high broadcast against (n, *shape); dtype: the
        namespace's (default float64)."""
        xp, n = self._xp, 1
        for s in shape:
            n *= s
        unit = self._unit(n).reshape(self.rows, *shape)
        return xp.astype(low + (high - low) * unit, _or(dtype, xp.float64))

    def normal(self, shape: tuple[int, ...], mean=0.0, std=1.0, dtype=None):
        """Gaussian by the Box-Muller transform."""
        xp, u = self._xp, self.uniform((2, *shape))
        return xp.astype(mean + std * self._box_muller(u[:, 0], u[:, 1]), _or(dtype, xp.float64))

    def _box_muller(self, u, v):
        """Standard normals from uniforms u, v on [0, 1)."""
        xp = self._xp
        return xp.sqrt(-2.0 * xp.log1p(-u)) * xp.cos(2.0 * xp.pi * v)

    def integers(self, shape: tuple[int, ...], low: int, high: int):
        """Integers uniform on [low, high)."""
        xp, u = self._xp, self.uniform(shape)
        return xp.clip(xp.astype(xp.floor(low + (high - low) * u), xp.int64), None, high - 1)


class NumpySampler(Sampler):
    """A Sampler for NumPy ids whose draws are NumPy arrays (dtypes NumPy's): the same
    numbers, from the same streams (uint64 views of the counters), hashed in NumPy."""

    def __init__(self, source: EnvRandom, env_ids: np.ndarray):
        if source.device.type != "cpu":
            raise ValueError("NumPy draws need streams on the CPU")
        self._source, self.env_ids, self._step = source, env_ids, None
        self.rows, self._xp = len(env_ids), NUMPY
        self._start: np.ndarray | None = None
        self._size = self._used = 0

    def _next_block(self, size: int) -> np.ndarray:
        src, ids = self._source, self.env_ids
        counts = src._counts_numpy[ids]
        src._counts_numpy[ids] = counts + np.uint64(size)
        return counts * _GOLDEN_U + src._keys_numpy[ids]

    def _hash(self, first: int, count: int) -> np.ndarray:
        if first + count > len(_GOLDEN_STEPS):
            steps = np.arange(first + 1, first + count + 1, dtype=np.uint64) * _GOLDEN_U
        else:
            steps = _GOLDEN_STEPS[first : first + count]
        return _mix64_numpy(self._start[:, None] + steps)

    def _unit(self, count: int) -> np.ndarray:
        return (self._bits(count) & _LOW53_U) * (2.0**-53)  # uint64 times a float: float64

    def _box_muller(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Sampler._box_muller by the C library's scalar log1p and cos, not NumPy's: NumPy's
        AVX-512 versions (SVML) round some results otherwise than its others do, and a chaotic
        episode (half_cheetah's) turns one last bit of its start into another trajectory within
        60 steps. The C library's give the same numbers on every x86-64 machine."""
        return np.sqrt(-2.0 * _scalar(math.log1p, -u)) * _scalar(math.cos, 2.0 * np.pi * v)


class OneEnvSampler(NumpySampler):
    """A NumpySampler for one env: the same numbers, its stream's 64-bit arithmetic done on
    Python ints (masked to 64 bits where NumPy's uint64 wraps), whose few operations per number
    cost less than NumPy's calls on a row of a few numbers."""

    def _next_block(self, size: int) -> int:
        src, i = self._source, self.env_ids[0]
        count = int(src._counts_numpy[i])
        src._counts_numpy[i] = (count + size) & _MASK64
        return (count * _GOLDEN_INT + int(src._keys_numpy[i])) & _MASK64

    def _hash(self, first: int, count: int) -> list[int]:
        start = self._start
        return [_mix64_int((start + k * _GOLDEN_INT) & _MASK64) for k in range(first + 1, first + count + 1)]

    def _unit(self, count: int) -> np.ndarray:
        return np.array([[(bits & _LOW53) * 2.0**-53 for bits in self._bits(count)]])

    def _box_muller(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """NumpySampler._box_muller's operations, in its order, on Python floats (sqrt is
        correctly rounded in both)."""
        normals = map(_gaussian, u.ravel().tolist(), v.ravel().tolist())
        return np.fromiter(normals, np.float64, u.size).reshape(u.shape)


_MASK64 = (1 << 64) - 1
_GOLDEN_INT, _MUL1_INT, _MUL2_INT = _GOLDEN & _MASK64, _MUL1 & _MASK64, _MUL2 & _MASK64


def _mix64_int(z: int) -> int:
    """_mix64 on a Python int in [0, 2**64)."""
    z = ((z ^ (z >> 30)) * _MUL1_INT) & _MASK64
    z = ((z ^ (z >> 27)) * _MUL2_INT) & _MASK64
    return z ^ (z >> 31)


def _gaussian(u: float, v: float) -> float:
    return math.sqrt(-2.0 * math.log1p(-u)) * math.cos(2.0 * np.pi * v)


def _scalar(f, x: np.ndarray) -> np.ndarray:
    """f (a `math` function) of each element of the float64 array x."""
    return np.fromiter(map(f, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


_LOW53_U = np.uint64(_LOW53)
_GOLDEN_STEPS = np.arange(1, _BLOCK + 1, dtype=np.uint64) * _GOLDEN_U  # a block's numbers' offsets
