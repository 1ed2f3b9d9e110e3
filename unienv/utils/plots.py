"""Figures as PNG files: a DR sweep's returns, a training run's learning curve and a gait's footfalls.

matplotlib is an optional extra (`pip install 'unienv[plot]'`). Each function
writes its PNG and returns the path; without matplotlib it prints one line
saying so and returns None, so that a missing figure never fails a sweep or a
training run. Figures are drawn on matplotlib's `Figure` directly, not through
pyplot, so they need no display and leave the caller's pyplot state alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from unienv.errors import install_command
from unienv.utils.files import written


def new_figure(path: str, **options: Any):
    """A matplotlib Figure, or None (after one line saying why) where matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure
    except ModuleNotFoundError:
        print(f"matplotlib is not installed ({install_command('plot')}); {path} not written")
        return None
    return Figure(**options)


def sweep_returns(
    settings: Sequence[Mapping[str, str]], rows: Sequence[Mapping[str, Any]], path: str
) -> str | None:
    """Each run's mean episode return: a heatmap over the grid of two swept parameters, else bars
    with the return's standard deviation as error bars (one bar per run, labelled by its setting).

    settings: each run's swept parameters (name -> value as given on the command line);
    rows: each run's metrics (return_mean, return_std), in the same order.
    """
    names = list(dict.fromkeys(k for s in settings for k in s))
    means = np.array([_float(r["return_mean"]) for r in rows])
    stds = np.array([_float(r["return_std"]) for r in rows])
    title = f"{rows[0].get('task', '')} on {rows[0].get('backend', '')}: mean episode return per run"
    if len(names) == 2 and len(rows) > 1:
        fig = new_figure(path, figsize=(6.4, 4.8))
        if fig is None:
            return None
        ys, xs = (_ordered({s.get(n, "") for s in settings}) for n in names)
        grid = np.full((len(ys), len(xs)), np.nan)
        for s, mean in zip(settings, means, strict=True):
            grid[ys.index(s.get(names[0], "")), xs.index(s.get(names[1], ""))] = mean
        ax = fig.subplots()
        image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
        fig.colorbar(image, ax=ax, label="mean episode return")
        for s, mean, std in zip(settings, means, stds, strict=True):
            y, x = ys.index(s.get(names[0], "")), xs.index(s.get(names[1], ""))
            label = "-" if math.isnan(mean) else f"{mean:.1f}\n± {std:.1f}"
            dark = math.isnan(mean) or image.norm(mean) < 0.6  # viridis is dark at the low end
            ax.text(x, y, label, ha="center", va="center", color="white" if dark else "black", fontsize=8)
        ax.set_xticks(range(len(xs)), xs)
        ax.set_yticks(range(len(ys)), ys)
        ax.set_xlabel(names[1])
        ax.set_ylabel(names[0])
    else:
        fig = new_figure(path, figsize=(max(4.8, 0.9 * len(rows) + 2), 4.2))
        if fig is None:
            return None
        labels = [" ".join(s.values()) if len(names) != 1 else s.get(names[0], "") for s in settings]
        ax = fig.subplots()
        ax.bar(range(len(rows)), means, yerr=stds, capsize=4, color="tab:blue")
        if len(names) == 1:
            ax.set_xticks(range(len(rows)), labels)
        else:
            ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right")
        ax.set_xlabel(names[0] if len(names) == 1 else "setting")
        ax.set_ylabel("mean episode return (± std)")
    ax.set_title(title, fontsize=10)
    return _save(fig, path)


def learning_curve(curve: Sequence[Mapping[str, Any]], path: str, title: str) -> str | None:
    """Mean return and mean episode length (rsl_rl's, of the last 100 episodes) over env steps,
    from train.py's per-iteration rows (metrics.json's "curve"); and, for a terrain task, the mean
    curriculum level of the envs reset in each iteration."""
    panels = [
        ("mean_return", "mean return (last 100 episodes)"),
        ("mean_episode_length", "mean episode length"),
    ]
    if any(TERRAIN_LEVEL in row.get("episode", {}) for row in curve):
        panels.append((TERRAIN_LEVEL, "terrain level (envs reset)"))
    fig = new_figure(path, figsize=(5 * len(panels), 3.8))
    if fig is None:
        return None
    from matplotlib.ticker import EngFormatter

    steps = [row["env_steps"] for row in curve]
    for ax, (key, label) in zip(fig.subplots(1, len(panels)), panels, strict=True):
        values = [_float(row[key] if key in row else row.get("episode", {}).get(key)) for row in curve]
        ax.plot(steps, values, color="tab:blue")
        ax.set_xlabel("env steps")
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 100k, 1M
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def footfalls(contact: np.ndarray, feet: Sequence[str], dt: float, path: str, title: str) -> str | None:
    """The footfall diagram of one env: a row per foot, dark where it touches the ground, over time
    (contact: (T, F) booleans, one row per control step of dt seconds)."""
    fig = new_figure(path, figsize=(8, 0.5 + 0.4 * len(feet)))
    if fig is None:
        return None
    ax = fig.subplots()
    ax.imshow(
        ~contact.T,
        aspect="auto",
        cmap="gray",
        interpolation="nearest",
        extent=(0, len(contact) * dt, len(feet) - 0.5, -0.5),
    )
    ax.set_yticks(range(len(feet)), feet)
    ax.set_xlabel("s")
    ax.set_title(title, fontsize=10)
    return _save(fig, path)


TERRAIN_LEVEL = "Curriculum/terrain_level"  # rsl_rl's episode term, from unienv.wrappers.rsl_rl


def _save(fig, path: str) -> str:
    """Lay fig out and write it to path whole (unienv.utils.files.written); return path."""
    fig.tight_layout()
    with written(path) as temporary:
        fig.savefig(temporary, dpi=110)
    return path


def _float(x: Any) -> float:
    """A metric as a float; NaN where it is missing (None in JSON: no episode ended)."""
    return math.nan if x is None else float(x)


def _ordered(values: set[str]) -> list[str]:
    """Values as given on the command line, in numeric order where they are all numbers."""
    try:
        return sorted(values, key=float)
    except ValueError:
        return sorted(values)
