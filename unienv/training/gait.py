"""Gait metrics of a legged policy's rollout: how each foot steps and how the feet step together.

    gait = Gait(feet=("FR", "FL", "RR", "RL"), num_envs=16, dt=0.02)
    for each env step: gait.add(contact (N, F) bool, alive (N,) bool)  # alive: the env is in an episode
    gait.summary() -> {"air_time": {foot: s}, "duty_factor": {foot: share}, "phase": {"FR-RL": cycles}, ...}

- air time: the mean length (s) of each foot's swings, a swing being a run of steps without
  contact that began and ended inside the rollout (a swing cut by the rollout's start, its end or
  an episode's end is not counted);
- duty factor: the share of steps each foot is in contact;
- phase: for a pair of feet (a, b), the circular mean over a's touchdowns of where b's stride
  was at that moment, in stride cycles in [0, 1): 0 when they land together (a trot's diagonal
  pairs), 0.5 when they alternate (its lateral pairs, a biped's left and right). A stride of b
  runs from one of its touchdowns to the next. `phase_coherence` is the mean resultant length of
  those samples (1: the same offset every stride; near 0: no fixed relation).

Pure NumPy over the host copies of the contacts: an evaluation reads them once per step.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


class Gait:
    def __init__(self, feet: tuple[str, ...], num_envs: int, dt: float):
        self.feet, self.dt = tuple(feet), dt
        self.contacts: list[np.ndarray] = []  # (N, F) per step
        self.alive: list[np.ndarray] = []  # (N,) per step

    def add(self, contact, alive) -> None:
        self.contacts.append(np.asarray(contact, dtype=bool).copy())
        self.alive.append(np.asarray(alive, dtype=bool).copy())

    def summary(self) -> dict:
        if not self.contacts:
            return {}
        c = np.stack(self.contacts, 1)  # (N, T, F)
        alive = np.stack(self.alive, 1)  # (N, T)
        swings: list[list[float]] = [[] for _ in self.feet]
        touchdowns: list[list[list[int]]] = [[[] for _ in self.feet] for _ in range(len(c))]
        for env in range(len(c)):
            for segment in _runs(alive[env]):
                for f in range(len(self.feet)):
                    sequence = c[env, segment, f]
                    landed = np.flatnonzero(sequence[1:] & ~sequence[:-1]) + 1
                    lifted = np.flatnonzero(~sequence[1:] & sequence[:-1]) + 1
                    touchdowns[env][f].extend(segment.start + landed)
                    for up in lifted:
                        later = landed[landed > up]
                        if len(later):
                            swings[f].append((later[0] - up) * self.dt)
        duty = {
            foot: float(c[..., f][alive].mean()) if alive.any() else float("nan")
            for f, foot in enumerate(self.feet)
        }
        air = {
            foot: float(np.mean(s)) if s else float("nan") for foot, s in zip(self.feet, swings, strict=True)
        }
        phase, coherence = {}, {}
        for a, b in itertools.combinations(range(len(self.feet)), 2):
            samples = []
            for env in range(len(c)):
                tb = np.asarray(touchdowns[env][b])
                for t in touchdowns[env][a]:
                    before, after = tb[tb <= t], tb[tb > t]
                    if len(before) and len(after):
                        samples.append((t - before[-1]) / (after[0] - before[-1]))
            key = f"{self.feet[a]}-{self.feet[b]}"
            if samples:
                z = np.exp(2j * math.pi * np.asarray(samples)).mean()
                phase[key] = float((np.angle(z) / (2 * math.pi)) % 1.0)
                coherence[key] = float(abs(z))
            else:
                phase[key] = coherence[key] = float("nan")
        return {"air_time": air, "duty_factor": duty, "phase": phase, "phase_coherence": coherence}


def _runs(mask: np.ndarray) -> list[slice]:
    """The maximal runs of True in mask, as slices."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    return [slice(s, e) for s, e in zip(edges[::2], edges[1::2], strict=True)]
