"""The env's own transitions, recorded once and replayed by the raw and backend loops."""

import itertools

import torch
from gymnasium.vector import AutoresetMode

from unienv.errors import ArgumentError


class Replay:
    """The env's own transitions, which the raw and backend loops replay in turn.

    Recorded from `steps` env steps of the bench's actions (same-step autoreset): the
    controls each step wrote and, before it, the states of the envs that had restarted
    (all envs before the first). A loop that writes those states and controls simulates
    the env's motions, envs ending and restarting among them, so the physics costs of
    the loops compare; held controls from one pose would not (a robot standing still, or
    falling through empty space beside a terrain, costs far less than walking and falling)."""

    def __init__(self, env, actions: torch.Tensor, steps: int):
        if env.autoreset_mode != AutoresetMode.SAME_STEP:
            raise ArgumentError(f"Replay: expected an env with same-step autoreset, got {env.autoreset_mode}")
        views = env.backend.get_state_views()
        rows = torch.arange(env.num_envs, device=env.device)
        self.writes, self.controls = [], []
        for _ in range(steps):
            self.writes.append(
                (rows, views["qpos"][rows].clone(), views["qvel"][rows].clone()) if len(rows) else None
            )
            _, _, terminated, truncated, _ = env.step(actions)
            self.controls.append(views["ctrl"].clone())
            rows = torch.nonzero(terminated | truncated).flatten()  # restarted, at the next step
        self.restart()

    def restart(self) -> None:
        """Replay from the first recorded transition again."""
        self._order = itertools.cycle(range(len(self.controls)))

    def next(self) -> int:
        """The index of the transition to replay next."""
        return next(self._order)

    def on(self, device, dtype) -> tuple[list, list]:
        """Per step, the write (env ids, qpos, qvel) or None, and the controls, on device."""
        writes = [w and (w[0].to(device), *(x.to(device, dtype) for x in w[1:])) for w in self.writes]
        return writes, [u.to(device, dtype) for u in self.controls]

    def numpy(self) -> tuple[list, list]:
        """`on` as NumPy arrays (float64), for the CPU engine."""
        writes, controls = self.on("cpu", torch.float64)
        return [w and tuple(x.numpy() for x in w) for w in writes], [u.numpy() for u in controls]


REPLAY_STEPS = 64  # env steps recorded for the raw and backend loops to replay
