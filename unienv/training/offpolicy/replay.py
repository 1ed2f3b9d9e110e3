"""A replay buffer of transitions on one device: a ring of preallocated tensors.

Each vector env step adds one transition per env; `sample` draws a batch uniformly from what the
ring holds, with a torch generator of its own (seeded), so that a run's draws do not depend on
what else uses torch's global generator, and so that resume continues them exactly. The count
and head are Python ints (the host decides what to draw without reading the device)."""

from __future__ import annotations

import torch

FIELDS = ("obs", "action", "reward", "next_obs", "terminated")


class ReplayBuffer:
    def __init__(self, capacity: int, obs_dim: int, act_dim: int, device: torch.device, seed: int = 0):
        self.capacity, self.count, self.head, self.device = capacity, 0, 0, torch.device(device)
        widths = {"obs": obs_dim, "action": act_dim, "reward": None, "next_obs": obs_dim, "terminated": None}
        self.data = {
            k: torch.zeros((capacity,) if w is None else (capacity, w), device=self.device)
            for k, w in widths.items()
        }
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)

    def add(self, **batch: torch.Tensor) -> None:
        """One row per env of each field, overwriting the oldest rows when full."""
        n = len(batch["obs"])
        rows = torch.arange(self.head, self.head + n, device=self.device) % self.capacity
        for k in FIELDS:
            self.data[k][rows] = batch[k].to(self.data[k].dtype)
        self.head = (self.head + n) % self.capacity
        self.count = min(self.count + n, self.capacity)

    def sample(self, size: int) -> tuple[torch.Tensor, ...]:
        """(obs, action, reward, next_obs, terminated), `size` rows drawn with replacement."""
        i = torch.randint(self.count, (size,), device=self.device, generator=self.generator)
        return tuple(self.data[k][i] for k in FIELDS)

    def state_dict(self) -> dict:
        return {
            "count": self.count,
            "head": self.head,
            "generator": self.generator.get_state(),
            **{k: v[: self.count] for k, v in self.data.items()},
        }

    def load_state_dict(self, state: dict) -> None:
        self.count, self.head = int(state["count"]), int(state["head"])
        for k in FIELDS:
            self.data[k][: self.count] = state[k]
        self.generator.set_state(state["generator"])
