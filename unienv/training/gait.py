"""Gait metrics of a legged policy's rollout: how well it tracks its command, how each foot steps,
how the feet step together, what it costs.

    recorder = GaitRecorder(env)               # env: a velocity task's VectorEnv
    rollout(env, policy, steps, on_step=recorder)
    recorder.summary()                          # -> the figures below (JSON values)

It reads what the velocity task reports each step in info (its `metrics`): `lin_vel_error` (m/s,
planar), `yaw_rate_error` (rad/s), `base_height` (m), `power` (W, the sum over the joints of
|torque x joint velocity|), `torque` (N m, the joints' mean |torque|), `speed` (m/s, planar), and
`contact_<foot>` (1 in contact) for each foot the task names in `gait_feet`; the command from
the observation's `command` block (unscaled by its contract scale).

- tracking: the mean planar and yaw-rate errors, and per bin of the commanded forward velocity;
- falls per minute: terminated episodes per minute of simulated time of all envs;
- air time: the mean length (s) of each foot's swings, a swing being a run of steps without
  contact that begins and ends inside one episode (cut swings are not counted);
- duty factor: the share of steps each foot is in contact;
- phase: for a pair of feet (a, b), the circular mean over a's touchdowns of where b's stride
  was at that moment, in stride cycles in [0, 1): 0 when they land together (a trot's diagonal
  pairs), 0.5 when they alternate (its lateral pairs; a biped's left and right). A stride of b
  runs from one of its touchdowns to the next. `phase_coherence` is the samples' mean resultant
  length (1: the same offset every stride; near 0: no fixed relation); `contact_correlation`
  is the Pearson correlation of the pair's contact (1 or 0) over every step of every env: -1
  when one foot is always down exactly while the other is up (a walk's left and right feet
  with no double support), 0 with no relation, None where a foot never or always touches;
- cost of transport: mean power / (total mass x g x mean planar speed).

NumPy on host copies: an evaluation reads the step's metrics once per step.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

FORWARD_BINS = 5  # bins of the commanded forward velocity for the per-bin tracking error


class GaitRecorder:
    """rollout's on_step: records a velocity task's step metrics and contacts (module docstring)."""

    @classmethod
    def of(cls, env) -> GaitRecorder | None:
        """A recorder for env, or None where its task reports no gait (not a velocity task)."""
        return cls(env) if getattr(env.unwrapped.task, "gait_feet", None) else None

    def __init__(self, env):
        base = env.unwrapped
        task = base.task
        self.feet = tuple(task.gait_feet)
        self.dt, self.num_envs = task.dt, base.num_envs
        self.command_cols = task.observation_layout["command"]
        scale = task.deployment()["observation"]["command"]["scale"]
        self.command_scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
        info = base.backend.info
        self.weight = float(np.sum(info.body_mass) * -info.gravity[2])
        low, high = task.command_ranges["lin_vel_x"]
        self.edges = np.linspace(low, high, FORWARD_BINS + 1)
        self.contacts, self.first, self.steps = [], [], 0
        self.series: dict[str, list[np.ndarray]] = {}
        self.commands: list[np.ndarray] = []
        self.falls = 0
        self._new = np.ones(self.num_envs, dtype=bool)  # the next step is an episode's first

    def __call__(self, obs: torch.Tensor, info: dict, terminated: torch.Tensor) -> None:
        def host(x):
            return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

        names = ("lin_vel_error", "yaw_rate_error", "base_height", "power", "torque", "speed")
        for name in names:
            self.series.setdefault(name, []).append(host(info[name]).astype(np.float64))
        self.contacts.append(np.stack([host(info[f"contact_{f}"]) > 0.5 for f in self.feet], 1))
        self.first.append(self._new)
        observed = obs
        if "final_obs" in info:  # an ended episode's last observation, not its successor's first
            observed = torch.where(info["_final_obs"][:, None], info["final_obs"], obs)
        command = host(observed[:, self.command_cols]) / self.command_scale
        self.commands.append(command)
        done = host(info["_final_obs"]) if "_final_obs" in info else np.zeros(self.num_envs, dtype=bool)
        self.falls += int(host(terminated).sum())  # a velocity task terminates on a fall
        self._new = done
        self.steps += 1

    def summary(self) -> dict:
        if not self.steps:
            return {}
        series = {k: np.stack(v, 1) for k, v in self.series.items()}  # (N, T)
        command = np.stack(self.commands, 1)  # (N, T, 3)
        minutes = self.steps * self.num_envs * self.dt / 60.0
        by_bin = {}
        for lo, hi in itertools.pairwise(self.edges):
            sel = (command[..., 0] >= lo) & (command[..., 0] <= hi)
            if sel.any():
                by_bin[f"{lo:+.2f}..{hi:+.2f}"] = {
                    "lin_vel_error": float(series["lin_vel_error"][sel].mean()),
                    "yaw_rate_error": float(series["yaw_rate_error"][sel].mean()),
                }
        speed = float(series["speed"].mean())
        out = {
            "lin_vel_error": float(series["lin_vel_error"].mean()),
            "yaw_rate_error": float(series["yaw_rate_error"].mean()),
            "tracking_by_forward_command": by_bin,
            "falls": self.falls,
            "falls_per_minute": self.falls / minutes,
            "base_height": float(series["base_height"].mean()),
            "mean_abs_torque": float(series["torque"].mean()),
            "power": float(series["power"].mean()),
            "cost_of_transport": float(series["power"].mean()) / (self.weight * speed)
            if speed > 1e-3
            else None,
        }
        return out | gait(np.stack(self.contacts, 1), np.stack(self.first, 1), self.feet, self.dt)


def gait_text(summary: dict) -> str:
    """The summary as the evaluation prints it: tracking, falls, height and cost, then the feet."""

    def figures(values: dict) -> str:
        return ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in values.items())

    cot = summary["cost_of_transport"]
    return "\n".join((
        f"eval: tracking error {summary['lin_vel_error']:.3f} m/s (planar), {summary['yaw_rate_error']:.3f} rad/s "
        f"(yaw rate); {summary['falls']} falls ({summary['falls_per_minute']:.2f} a minute); base height "
        f"{summary['base_height']:.3f} m; power {summary['power']:.1f} W; cost of transport {'-' if cot is None else f'{cot:.2f}'}",
        f"eval: air time (s) {figures(summary['air_time'])}; duty factor {figures(summary['duty_factor'])}",
        f"eval: phase (cycles) {figures(summary['phase'])}; contact correlation {figures(summary['contact_correlation'])}",
    ))  # fmt: skip


def gait(contact: np.ndarray, first: np.ndarray, feet: tuple[str, ...], dt: float) -> dict:
    """Air time, duty factor and phase relations from contacts (N, T, F) and the episodes' first
    steps (N, T) (see the module docstring)."""
    n, steps, _ = contact.shape
    swings: list[list[float]] = [[] for _ in feet]
    touchdowns = [[[] for _ in feet] for _ in range(n)]
    for env in range(n):
        starts = [*np.flatnonzero(first[env]), steps]
        starts = [0, *starts] if starts[0] != 0 else starts
        for a, b in itertools.pairwise(starts):
            for f in range(len(feet)):
                c = contact[env, a:b, f]
                landed = np.flatnonzero(c[1:] & ~c[:-1]) + 1
                lifted = np.flatnonzero(~c[1:] & c[:-1]) + 1
                touchdowns[env][f].extend(a + landed)
                for up in lifted:
                    later = landed[landed > up]
                    if len(later):
                        swings[f].append((later[0] - up) * dt)
    duty = {foot: float(contact[..., f].mean()) for f, foot in enumerate(feet)}
    air = {foot: float(np.mean(s)) if s else None for foot, s in zip(feet, swings, strict=True)}
    phase, coherence, correlation = {}, {}, {}
    for a, b in itertools.combinations(range(len(feet)), 2):
        ca, cb = (contact[..., f].ravel().astype(np.float64) for f in (a, b))
        constant = ca.std() == 0 or cb.std() == 0
        correlation[f"{feet[a]}-{feet[b]}"] = None if constant else float(np.corrcoef(ca, cb)[0, 1])
        samples = []
        for env in range(n):
            tb = np.asarray(touchdowns[env][b])
            for t in touchdowns[env][a]:
                before, after = tb[tb <= t], tb[tb > t]
                if len(before) and len(after):
                    samples.append((t - before[-1]) / (after[0] - before[-1]))
        key = f"{feet[a]}-{feet[b]}"
        if samples:
            z = np.exp(2j * math.pi * np.asarray(samples)).mean()
            phase[key], coherence[key] = float((np.angle(z) / (2 * math.pi)) % 1.0), float(abs(z))
        else:
            phase[key] = coherence[key] = None
    return {
        "air_time": air,
        "duty_factor": duty,
        "phase": phase,
        "phase_coherence": coherence,
        "contact_correlation": correlation,
    }
